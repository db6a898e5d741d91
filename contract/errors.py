"""The contract's errors and how each protocol spells them.

One table, as data in contract/contract.json (read by the services of every
language), read by every server (to answer) and every client (to raise the
same ContractError whatever the protocol).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONTRACT: dict[str, Any] = json.loads((Path(__file__).parent / "contract.json").read_text())
ERRORS: dict[str, dict[str, Any]] = CONTRACT["errors"]

NOT_FOUND = "NOT_FOUND"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"  # oversize request
UNAVAILABLE = "UNAVAILABLE"  # database down
DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"  # database too slow
INTERNAL = "INTERNAL"  # a server bug; never expected
assert {NOT_FOUND, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL} == set(ERRORS)

HTTP_STATUS: dict[str, int] = {code: row["http"] for code, row in ERRORS.items()}
GRPC_STATUS: dict[str, str] = {code: row["grpc"] for code, row in ERRORS.items()}
# Connect RPC's codes (its own spelling of gRPC's: "not_found"), column "connect".
CONNECT_CODE: dict[str, str] = {code: row["connect"] for code, row in ERRORS.items()}
CODE_OF_CONNECT = {connect: code for code, connect in CONNECT_CODE.items()}
CODE_OF_HTTP_STATUS = {status: code for code, status in HTTP_STATUS.items()}


class ContractError(Exception):
    """An error of the contract. `native` holds the protocol's own spelling
    (an HTTP status, a gRPC status code name, ...) when a client raised it."""

    code = INTERNAL

    def __init__(self, message: str, *, code: str | None = None, native: object = None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.native = native

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}: {self.message!r}, native={self.native!r})"


class NotFound(ContractError):
    code = NOT_FOUND


class InvalidArgument(ContractError):
    code = INVALID_ARGUMENT


class ResourceExhausted(InvalidArgument):
    code = RESOURCE_EXHAUSTED


class Unavailable(ContractError):
    code = UNAVAILABLE


class DeadlineExceeded(Unavailable):
    code = DEADLINE_EXCEEDED


_BY_CODE = {c.code: c for c in (NotFound, InvalidArgument, ResourceExhausted, Unavailable, DeadlineExceeded)}


def error_for(code: str, message: str, native: object = None) -> ContractError:
    """The ContractError subclass for a code received over the wire."""
    cls = _BY_CODE.get(code, ContractError)
    return cls(message, code=code, native=native)
