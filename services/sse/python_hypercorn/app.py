"""Server-Sent Events: the push feeds of contract/push.md as a plain ASGI app
under hypercorn (HTTP/1.1 and h2c). One asyncio task per open stream; the
changes feed through pymongo's asyncio client.

    GET /events?feed=synthetic&batch=50&rate=1000&count=0   (Last-Event-ID resumes)
    GET /health
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from pymongo import AsyncMongoClient

from contract.codec import dumpb, dumps
from contract.errors import HTTP_STATUS, INTERNAL, ContractError, InvalidArgument, NotFound, Unavailable
from contract.game import check_size
from services.common.feeds import (
    KEEPALIVE_SECONDS,
    PUSH,
    Subscription,
    change_message,
    database_errors,
    parse_subscription,
    synthetic_due,
    synthetic_ids,
    synthetic_message,
    watch_arguments,
)
from services.common.http_compression import gzip_stream
from services.common.store import COLLECTION, DEFAULT_DB, TIMEOUT_MS

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
STREAM_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
# Between yields to the event loop when a stream is behind schedule (or unpaced).
YIELD_EVERY = 16


class _Database:
    client: AsyncMongoClient | None = None

    def get(self) -> AsyncMongoClient:
        if self.client is None:  # created in the server's event loop, on first use
            self.client = AsyncMongoClient(
                os.environ["MONGODB_URI"], serverSelectionTimeoutMS=TIMEOUT_MS, connectTimeoutMS=TIMEOUT_MS,
                socketTimeoutMS=TIMEOUT_MS, appname="protolab-sse")
        return self.client

    def games(self) -> Any:
        return self.get()[os.environ.get("MONGODB_DB", DEFAULT_DB)][COLLECTION]


database = _Database()


async def _app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    if scope["type"] != "http":
        return
    try:
        if scope["path"] not in ("/health", PUSH["sse_path"]):
            raise NotFound(f"no such path {scope['path']!r}: {PUSH['sse_path']} or /health")
        if scope["method"] not in ("GET", "HEAD"):
            await _answer(send, 405, {"error": {"code": "INVALID_ARGUMENT",
                                                "message": f"method {scope['method']} not allowed: use GET"}},
                          extra=[(b"allow", b"GET, HEAD")])
            return
        if scope["path"] == "/health":
            await _health()
            await _answer(send, 200, {"status": "ok"})
            return
        sub = _subscription(scope)
        stream = None
        if sub.feed == "changes":  # opened before the 200: a failure is answered as an error
            with database_errors(sub.last_event_id is not None):
                stream = await database.games().watch(**watch_arguments(sub))
    except ContractError as exc:
        await _answer(send, HTTP_STATUS[exc.code], {"error": {"code": exc.code, "message": exc.message}})
        return
    await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})
    if scope["method"] == "HEAD":
        await send({"type": "http.response.body", "body": b""})
        return
    await _stream(sub, stream, receive, send)


app = gzip_stream(_app)  # LAB_COMPRESSION (lab/axes.py, axis `compression`)


def _subscription(scope: dict[str, Any]) -> Subscription:
    query: bytes = scope["query_string"]
    check_size(len(query))  # held to the contract's request limit: RESOURCE_EXHAUSTED
    try:
        pairs = parse_qsl(query.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(query),
                          errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgument(f"malformed query string: {exc}") from None
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in params:
            raise InvalidArgument(f"parameter {name!r} given twice")
        params[name] = value
    last_event_id = None
    for name, value in scope["headers"]:
        if name == b"last-event-id":
            try:
                last_event_id = value.decode("ascii")
            except UnicodeDecodeError:
                raise InvalidArgument("Last-Event-ID is not ASCII") from None
    return parse_subscription(params, last_event_id, strings=True)


async def _stream(sub: Subscription, stream: Any, receive: Receive, send: Send) -> None:
    async def write(text: str) -> None:
        await send({"type": "http.response.body", "body": text.encode(), "more_body": True})

    async def produce() -> None:
        try:
            await write(f": subscribed {sub.feed}\n\n")
            if sub.feed == "synthetic":
                await _synthetic(sub, write)
            else:
                await _changes(stream, write)
        except ContractError as exc:
            await write(f"event: error\ndata: {dumps({'code': exc.code, 'message': exc.message})}\n\n")
        except Exception as exc:  # a bug: said on the stream, then the stream ends
            await write(f"event: error\ndata: {dumps({'code': INTERNAL, 'message': str(exc)})}\n\n")

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    producer = asyncio.ensure_future(produce())
    watcher = asyncio.ensure_future(disconnected())
    try:
        done, _ = await asyncio.wait({producer, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if producer in done:
            producer.result()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        for task in (producer, watcher):
            task.cancel()
        if stream is not None:
            await stream.close()


async def _synthetic(sub: Subscription, write: Callable[[str], Awaitable[None]]) -> None:
    start = time.monotonic()
    sent = 0
    for message_id in synthetic_ids(sub):
        delay = synthetic_due(sub, start, message_id) - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        elif sent % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # behind or unpaced: let the other streams run
        await write(f"id: {message_id}\nevent: synthetic\ndata: {synthetic_message(sub.batch)}\n\n")
        sent += 1
    await write(f"event: end\ndata: {dumps({'sent': sent})}\n\n")


async def _changes(stream: Any, write: Callable[[str], Awaitable[None]]) -> None:
    quiet_since = time.monotonic()
    while True:
        with database_errors(False):
            change = await stream.try_next()  # waits up to the stream's max_await_time_ms
        found = change_message(change) if change is not None else None
        if found is not None:
            event_id, message = found
            await write(f"id: {event_id}\nevent: changes\ndata: {dumps(message)}\n\n")
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            await write(":\n\n")
            quiet_since = time.monotonic()


async def _health() -> None:
    try:
        await database.get().admin.command("ping")
    except Exception as exc:
        raise Unavailable(f"database unavailable: {exc}") from None


async def _answer(send: Send, status: int, body: dict[str, Any],
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = dumpb(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": data})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if database.client is not None:
                await database.client.close()
            await send({"type": "lifespan.shutdown.complete"})
            return

