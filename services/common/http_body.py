"""Reading a request body under the contract's size limit, for the HTTP services.

An oversize body is read to its end (up to DRAIN_LIMIT) before the 413 goes
out, so the connection stays usable: replying early and closing would leave
a keep-alive client to find the connection dead on its next request.
"""

from __future__ import annotations

from flask import Request

from contract.errors import ResourceExhausted
from contract.game import MAX_REQUEST_BYTES, check_size

DRAIN_LIMIT = 16 * MAX_REQUEST_BYTES  # beyond this, the server may close the connection
CHUNK = 64 * 1024


def request_target_bytes(environ: dict) -> int:
    """The length in bytes of the request target (path and query) as the client sent it."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")  # gunicorn's / other servers', undecoded
    if raw is None:  # WSGI strings are bytes read as latin-1
        query = environ.get("QUERY_STRING", "")
        raw = environ.get("PATH_INFO", "") + ("?" + query if query else "")
    return len(raw.encode("latin-1", "replace"))


def read_body(request: Request) -> bytes:
    stream = request.stream
    declared = request.content_length
    if declared is not None and declared > MAX_REQUEST_BYTES:
        left = min(declared, DRAIN_LIMIT)
        while left > 0 and (chunk := stream.read(min(CHUNK, left))):
            left -= len(chunk)
        check_size(declared)
    body = stream.read(MAX_REQUEST_BYTES + 1)
    if len(body) > MAX_REQUEST_BYTES:
        raise ResourceExhausted(f"request body exceeds the limit of {MAX_REQUEST_BYTES} bytes")
    return body
