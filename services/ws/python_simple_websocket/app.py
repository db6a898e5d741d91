"""WebSocket: one simple-websocket connection per client, JSON messages
(contract/ws-protocol.md), on a Flask route served by gunicorn.

Every request gets exactly one reply carrying its request_id; a bad request
gets an error reply and the connection stays open.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response
from flask import request as http_request
from simple_websocket import ConnectionClosed, Server

from contract.codec import dumps, loads
from contract.errors import INTERNAL, ContractError, InvalidArgument
from contract.game import (
    DEFAULT_LIST_LIMIT,
    LIMITS,
    MAX_RESPONSE_BYTES,
    check_response_size,
    check_size,
)
from services.common import gunicorn_errors
from services.common.feeds import Connection, WebSocketPush
from services.common.http_compression import compression
from services.common.store import Store

# Frames above max_frame_bytes close the connection (1009); below it,
# MAX_REQUEST_BYTES is enforced per message with an error reply, keeping the
# connection. A reply over MAX_RESPONSE_BYTES becomes a RESOURCE_EXHAUSTED reply.
MAX_FRAME_BYTES = LIMITS["max_frame_bytes"]
# simple-websocket's server accepts permessage-deflate whenever the client offers it
# (wsproto's PerMessageDeflate, context takeover, every message compressed): without
# LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`) the offer is taken out of the
# handshake it reads, so that no extension is negotiated.
OFFERS_COMPRESSION = compression() == "gzip"
CLOSE_WAIT_S = 1.0  # at most, for the close answer to be written (a peer not reading)

app = Flask(__name__)
store = Store()

HANDLERS = {
    "create": (("game",), lambda p: store.create(p["game"])),
    "get": (("id",), lambda p: store.get(p["id"])),
    "list": (("limit", "offset"), lambda p: store.list(
        p.get("limit", DEFAULT_LIST_LIMIT), p.get("offset", 0))),
    "update": (("id", "game"), lambda p: store.update(p["id"], p["game"])),
    "delete": (("id",), lambda p: store.delete(p["id"])),
    "health": ((), lambda p: store.health()),
}
OPTIONAL = {"limit", "offset", *WebSocketPush.OPTIONAL}
# echo, broadcast, subscribe, unsubscribe (services/common/feeds.py)
push = WebSocketPush(lambda: store.games)
# gunicorn's own refusals of the opening handshake (HTTP), as the contract's error object.
gunicorn_errors.install(lambda code, message: (
    "application/json", dumps({"error": {"code": code, "message": message}}).encode()))


def handle(message: str | bytes, conn: Connection | None = None) -> dict[str, Any]:
    request_id = None
    try:
        try:
            request = loads(message)
        except ValueError as exc:
            raise InvalidArgument(f"malformed JSON message: {exc}") from None
        if type(request) is not dict:
            raise InvalidArgument("a request must be a JSON object")
        request_id = request.get("request_id")
        if type(request_id) not in (int, str):
            request_id = None
            raise InvalidArgument("request_id must be an integer or a string")
        # Checked after parsing (frames are capped at MAX_FRAME_BYTES), so the
        # error reply can name the request it answers.
        check_size(len(message))
        unknown = set(request) - {"request_id", "op", "params"}
        if unknown:
            raise InvalidArgument(f"unknown request member {sorted(unknown)[0]!r}")
        op = request.get("op")
        operations = HANDLERS if conn is None else {**HANDLERS, **push.operations(conn)}
        if type(op) is not str or op not in operations:  # a list or object is no op (nor hashable)
            raise InvalidArgument(f"unknown op {op!r}: expected one of {sorted(operations)}")
        params = request.get("params", {})
        if type(params) is not dict:
            raise InvalidArgument("params must be an object")
        names, run = operations[op]
        unknown = set(params) - set(names)
        if unknown:
            raise InvalidArgument(f"unknown parameter {sorted(unknown)[0]!r} for {op}")
        missing = [n for n in names if n not in params and n not in OPTIONAL]
        if missing:
            raise InvalidArgument(f"missing parameter {missing[0]!r} for {op}")
        return {"request_id": request_id, "result": run(params)}
    except ContractError as exc:
        return {"request_id": request_id, "error": {"code": exc.code, "message": exc.message}}
    except Exception as exc:  # a bug must not cost the client its connection
        app.logger.exception("request failed")
        return {"request_id": request_id, "error": {"code": INTERNAL, "message": str(exc)}}


def _reply(answer: dict[str, Any]) -> str:
    text = dumps(answer)
    # A str of n characters is at most 4n bytes of UTF-8: most replies skip the encoding.
    if len(text) * 4 > MAX_RESPONSE_BYTES and len(text.encode()) > MAX_RESPONSE_BYTES:
        try:
            check_response_size(len(text.encode()))
        except ContractError as exc:
            text = dumps({"request_id": answer["request_id"], "error": {"code": exc.code, "message": exc.message}})
    return text


class _SendAll:
    """simple-websocket 1.1.0 writes each frame with one socket.send(), which
    may write part of it (a loaded machine, a large message) and the rest is
    lost: the peer then reads garbage ("RSV2 set"). Upstream:
    miguelgrinberg/simple-websocket#45. Every send here is a sendall()."""

    def __init__(self, sock: Any):
        self._sock = sock

    def send(self, data: bytes) -> int:
        self._sock.sendall(data)
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@app.route("/ws", websocket=True)
def websocket() -> Response:
    environ = http_request.environ
    if not OFFERS_COMPRESSION and "HTTP_SEC_WEBSOCKET_EXTENSIONS" in environ:
        environ = {k: v for k, v in environ.items() if k != "HTTP_SEC_WEBSOCKET_EXTENSIONS"}
    ws = Server.accept(environ, max_message_size=MAX_FRAME_BYTES)
    ws.sock = _SendAll(ws.sock)
    conn = push.connect(ws.send)
    try:
        while True:
            conn.reply(_reply(handle(ws.receive(), conn)))
    except ConnectionClosed:
        pass
    finally:
        push.disconnect(conn)
        # simple-websocket's reader thread answers a close and only then writes
        # that answer; gunicorn closes the socket as soon as this returns. Under
        # gthread the close frame was lost (7 of 399 closes): the client saw
        # 1006. Its thread ends once the answer is written.
        ws.thread.join(timeout=CLOSE_WAIT_S)
    return _Closed()


class _Closed(Response):
    """The WebSocket owned the socket and closed it: tell gunicorn (which
    catches StopIteration) to drop the connection instead of writing an HTTP
    response into it."""

    def __call__(self, environ: Any, start_response: Any) -> Any:
        raise StopIteration()


@app.get("/health")
def health() -> Response:
    store.health()
    return Response(dumps({"status": "ok"}), mimetype="application/json")
