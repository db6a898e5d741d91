"""gunicorn's own refusals in the protocol's terms.

gunicorn refuses some requests before the application sees them: a request
line over its limit (8,190 bytes: 414), header fields over its limits (431), a
malformed request line, method, version or header (400), a transfer coding it
does not support (501). It answers those with an HTML page. Each HTTP service
names how its protocol spells an error (`install(render)`, at import), and
gunicorn then answers with the same status and Connection: close, and the
contract's code in the protocol's own body: REST's {"error": {...}}, GraphQL's
{"errors": [...]}, a SOAP Fault (with status 500, as SOAP 1.1 answers a Fault).

Only a process that runs under gunicorn is changed (gunicorn imported the
application); elsewhere (tests that import an app, the WSDL printer) nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from contract.errors import INTERNAL, INVALID_ARGUMENT, RESOURCE_EXHAUSTED

# gunicorn's statuses, as the contract's codes: a request over a limit is
# RESOURCE_EXHAUSTED (the contract's 413, 414 for a request target), a server
# misconfiguration INTERNAL, any other refusal INVALID_ARGUMENT.
CODE_OF_STATUS = {414: RESOURCE_EXHAUSTED, 431: RESOURCE_EXHAUSTED, 500: INTERNAL}

# How a protocol spells an error: (code, message) -> (content type, body).
Render = Callable[[str, str], tuple[str, bytes]]


def response(render: Render, status: int, reason: str, message: str,
             answer_as: tuple[int, str] | None = None) -> bytes:
    code = CODE_OF_STATUS.get(status, INVALID_ARGUMENT)
    content_type, body = render(code, f"{reason}: {message}")
    if answer_as is not None:
        status, reason = answer_as
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body


def install(render: Render, status: tuple[int, str] | None = None) -> None:
    """`status`: the status every such answer goes with (SOAP 1.1: 500), else gunicorn's."""
    if "gunicorn.workers.base" not in sys.modules:
        return
    from gunicorn import util

    def write_error(sock, status_int: int, reason: str, mesg: str) -> None:  # gunicorn's signature
        util.write_nonblock(sock, response(render, status_int, reason, mesg, status))

    util.write_error = write_error
