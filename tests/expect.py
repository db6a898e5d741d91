"""Asserting a contract error in a protocol's own terms (shared by the error tests)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from contract.errors import HTTP_STATUS, RESOURCE_EXHAUSTED, UNAVAILABLE, ContractError


def assert_native(protocol: str, error: ContractError, code: str) -> None:
    """The contract's error, spelled in the protocol's own terms."""
    assert error.code == code, error
    if protocol in ("rest", "sse"):
        assert error.native == HTTP_STATUS[code], error
    elif protocol == "grpc":
        assert error.native == getattr(grpc.StatusCode, code), error
    elif protocol == "graphql":
        status, extension_code = error.native
        assert extension_code == code, error
        assert status in {RESOURCE_EXHAUSTED: (413,), UNAVAILABLE: (200, 503)}.get(code, (200, 400)), error
    elif protocol == "ws":
        assert error.native["code"] == code, error
    elif protocol == "soap":  # (faultcode, the contract's code in the Fault's detail)
        assert error.native == ("Server" if code in (UNAVAILABLE, "DEADLINE_EXCEEDED", "INTERNAL") else "Client",
                                code), error


def expect(protocol: str, code: str, call, *args: Any) -> None:
    with pytest.raises(ContractError) as caught:
        call(*args)
    assert_native(protocol, caught.value, code)


