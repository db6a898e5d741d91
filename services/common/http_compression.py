"""The lab's compression axis (lab/axes.py, axis `compression`) for the Python HTTP
services: with LAB_COMPRESSION=gzip a reply goes out in HTTP's gzip content coding
when its request asks for it (Accept-Encoding names gzip at a q above 0), whole,
with its own Content-Length (as the uncompressed reply has one); otherwise the
application's reply as it is. A WSGI middleware (gzip_replies) for the gunicorn
services, and the test of Accept-Encoding the ASGI one (hypercorn) shares.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Iterable
from typing import Any

VALUES = ("identity", "gzip")


def compression() -> str:
    """LAB_COMPRESSION: "identity" (unset) or "gzip"; any other value stops the service."""
    value = os.environ.get("LAB_COMPRESSION") or "identity"
    if value not in VALUES:
        raise SystemExit(f"LAB_COMPRESSION={value!r}: expected one of {', '.join(VALUES)}")
    return value


def accepts_gzip(header: str | None) -> bool:
    """Does an Accept-Encoding header (RFC 9110, 12.5.3) take gzip? gzip (or x-gzip)
    named with a q-value above 0; else, gzip unnamed, "*" with a q-value above 0."""
    named, wildcard = -1.0, -1.0
    for item in (header or "").split(","):
        name, *params = (p.strip() for p in item.split(";"))
        if name.lower() not in ("gzip", "x-gzip", "*"):
            continue
        try:
            q = float(next((p.split("=", 1)[1] for p in params if p.lower().startswith("q=")), "1"))
        except ValueError:
            continue
        if name == "*":
            wildcard = max(wildcard, q)
        else:
            named = max(named, q)
    return named > 0 if named >= 0 else wildcard > 0


def compress(body: bytes) -> bytes:
    """gzip at zlib's default level (6), as Go's compress/gzip and Node's zlib write it."""
    return gzip.compress(body, compresslevel=6, mtime=0)


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
NO_BODY = ("204", "304", "1")


def gzip_replies(app: WSGIApp) -> WSGIApp:
    """`app` answering in gzip when LAB_COMPRESSION=gzip and the request asks for it;
    `app` itself otherwise (the base runs exactly the code it ran before)."""
    if compression() != "gzip":
        return app

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") == "HEAD" or not accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING")):
            return app(environ, start_response)
        held: dict[str, Any] = {}

        def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            held.update(status=status, headers=headers, exc_info=exc_info)
            return lambda data: held.setdefault("written", []).append(data)

        result = app(environ, hold)
        try:
            body = b"".join([*held.get("written", []), *result])
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = held["status"], [(k, v) for k, v in held["headers"] if k.lower() != "content-length"]
        if body and not status.startswith(NO_BODY) and not any(k.lower() == "content-encoding" for k, _ in headers):
            body = compress(body)
            headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        start_response(status, [*headers, ("Content-Length", str(len(body)))], held["exc_info"])
        return [body]

    return wrapped


ASGIApp = Callable[[dict[str, Any], Callable[..., Any], Callable[..., Any]], Any]


def gzip_stream(app: ASGIApp) -> ASGIApp:
    """The ASGI `app` (hypercorn's) answering in gzip when LAB_COMPRESSION=gzip and the
    request asks for it: one gzip stream per reply, flushed (a sync flush: every byte
    so far decodable) at each body message the app sends, so that a pushed event
    reaches the client when it is sent; the reply loses its Content-Length. `app`
    itself otherwise."""
    if compression() != "gzip":
        return app

    async def wrapped(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        asked = dict(scope.get("headers") or []).get(b"accept-encoding", b"").decode("latin-1")
        if scope["type"] != "http" or scope.get("method") == "HEAD" or not accepts_gzip(asked):
            await app(scope, receive, send)
            return
        encoder: list[Any] = []  # the reply's compressor, once its start says it has a body

        async def compressing(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                if message["status"] not in (204, 304) and not any(k.lower() == b"content-encoding"
                                                                   for k, _ in headers):
                    encoder.append(zlib.compressobj(6, zlib.DEFLATED, 31))  # wbits 31: gzip's framing
                    headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
                    headers += [(b"content-encoding", b"gzip"), (b"vary", b"accept-encoding")]
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and encoder:
                more = message.get("more_body", False)
                data = encoder[0].compress(message.get("body", b""))
                data += encoder[0].flush(zlib.Z_SYNC_FLUSH if more else zlib.Z_FINISH)
                message = {**message, "body": data}
            await send(message)

        await app(scope, receive, compressing)

    return wrapped
