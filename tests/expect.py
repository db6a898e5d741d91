"""Asserting a contract error in a protocol's own terms (shared by the error tests)."""

from __future__ import annotations

from typing import Any

import pytest

from clients.protocols import get
from contract.errors import ContractError


def assert_native(protocol: str, error: ContractError, code: str) -> None:
    """The contract's error, spelled in the protocol's own terms (its descriptor's native_error)."""
    assert error.code == code, error
    descriptor = get(protocol)
    assert descriptor.native_error(error.native, code), (
        f"{protocol}: expected {code} as {descriptor.error_spelling}; got native={error.native!r} ({error})")


def expect(protocol: str, code: str, call, *args: Any) -> None:
    with pytest.raises(ContractError) as caught:
        call(*args)
    assert_native(protocol, caught.value, code)


