"""socket.io: one python-socketio connection over the WebSocket transport only
(no long-polling, no upgrade), a "call" event with an ack per request
(contract/socketio-protocol.md).

SocketIOClient, the lab's (latency suite, capture, tests): python-socketio's asyncio
client (socketio.AsyncClient: Engine.IO over aiohttp's WebSocket) on an event loop of its
own, in one private thread, behind this synchronous API. Every read and write of the
connection's socket happens in that one thread. python-engineio's threaded client reads
its WebSocket in one thread and writes it from another; over TLS that is one
ssl.SSLSocket read and written at once from two threads, which Python's ssl module does
not make safe (CPython #76714; python-engineio #461, python-socketio #1568): on
2026-12-03 a loop of 6,000 calls over TLS 1.3 lost an ack at call 4,838, and the
namespace was disconnected after it (docs/notes/2026-12-03-socketio-tls.md). Plain and
TLS run the same client, so TLS / plain compares one client architecture.

ThreadedSocketIOClient: python-socketio's threaded client (socketio.Client over
websocket-client), for the Locust processes (clients/socketio/load.py), where gevent
turns its threads into greenlets of one OS thread: no two run at once, and an asyncio
loop per client cannot run there (asyncio keeps one running loop per OS thread).
It takes no CA: the load instrument drives socket.io in plain text only.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from types import SimpleNamespace
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import engineio
import socketio

from clients.base import CALL_TIMEOUT, Event, OperationClient
from clients.ws.client import PushStream
from contract.codec import dumpb, dumps
from contract.errors import ContractError, Unavailable, error_for

EVENT = "call"
PUSH_EVENT = "push"  # the WebSocket protocol's push message as its argument
# socket.io's packets carry JSON text; encoded as every other JSON protocol
# here encodes it (contract.codec: compact, non-ASCII kept), not with
# python-socketio's default ASCII escapes, so byte counts compare protocols.
CODEC = SimpleNamespace(dumps=lambda obj, **_: dumps(obj), loads=json.loads,
                        JSONDecodeError=json.JSONDecodeError)
# How much longer than a call's own timeout (python-socketio's, inside the loop) the
# calling thread waits for its loop before it gives up on it.
LOOP_GRACE_S = 2.0
LOOP_THREAD = "socketio-loop"
T = TypeVar("T")


class _LoopThread:
    """An asyncio event loop in a thread of its own, until stop(): coroutines submitted from
    other threads with asyncio.run_coroutine_threadsafe (one wake-up each way; anyio's
    blocking portal, tried first, took two: its start_task_soon waits for the task to be
    spawned, then for its result: 1,131 against 534 µs a round trip, median, load 18,
    2026-12-03). asyncio.Runner ends it as asyncio.run does: the tasks left cancelled,
    async generators and the default executor shut down, the loop closed."""

    def __init__(self) -> None:
        started = threading.Event()
        self._stopped: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._serve, args=(started,), name=LOOP_THREAD, daemon=True)
        self.thread.start()
        if not started.wait(CALL_TIMEOUT):
            raise RuntimeError("the client's event loop did not start")

    def _serve(self, started: threading.Event) -> None:
        with asyncio.Runner() as runner:
            self.loop = runner.get_loop()
            self._stopped = asyncio.Event()
            started.set()
            runner.run(self._stopped.wait())

    def submit(self, work: Callable[[], Awaitable[T]], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(work(), self.loop)  # type: ignore[arg-type]
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()  # the task cancelled in the loop
            raise

    def stop(self, timeout: float) -> None:
        if self._stopped is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._stopped.set)
        self.thread.join(timeout)


# --- in-order dispatch -------------------------------------------------------------------
# Engine.IO's clients hand each received message to a task of its own
# (`_trigger_event('message', run_async=True)`): the threaded client a new thread, so two
# messages sent in order reached the handlers out of order (CI, 2026-11-26: socket.io's
# stream of ids 1, 2 yielded 1 and then `end`); the asyncio client a new task, which starts
# in order but lets the next message overtake one whose handling awaits. Here a message is
# dispatched by the reading loop itself, before the next is read, as the other clients read
# theirs; the handlers only queue a push or complete an ack.

class _InOrderAsyncEngineIO(engineio.AsyncClient):
    async def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        if event == "message":
            kwargs["run_async"] = False
        return await super()._trigger_event(event, *args, **kwargs)


class _InOrderAsyncClient(socketio.AsyncClient):
    def _engineio_client_class(self) -> type:
        return _InOrderAsyncEngineIO


class _InOrderEngineIO(engineio.Client):
    def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        if event == "message":
            kwargs["run_async"] = False
        return super()._trigger_event(event, *args, **kwargs)


class _InOrderClient(socketio.Client):
    def _engineio_client_class(self) -> type:
        return _InOrderEngineIO


def _server(endpoint: str) -> tuple[str, str]:
    """(the URL python-socketio connects to, its socketio_path) for `endpoint`."""
    url = urlsplit(endpoint)
    return f"{url.scheme}://{url.netloc}", url.path.strip("/") or "socket.io"


def _compression(compression: str | None) -> None:
    if compression not in (None, "identity"):
        # services/socketio/*/manifest.toml leaves the compression axis out for this reason
        raise ValueError(f"compression {compression!r}: the lab's socket.io clients offer no "
                         "permessage-deflate (python-socketio asks its WebSocket library for none)")


class _SocketIO(OperationClient):
    """What both clients do with a connected python-socketio client: a call is an event with
    an ack, a push is the event `push`; `_ack` (the event's argument -> the ack) is each's own."""
    protocol = "socketio"
    timeout: float

    def _pushes(self) -> None:
        # Push messages (broadcasts, feeds), in arrival order, with their size
        # as the event's JSON text ('42["push",...]').
        self.pushed: deque[tuple[dict[str, Any], int]] = deque()
        self._arrived = threading.Condition()

    def _ack(self, request: Any) -> Any:
        raise NotImplementedError

    def _exchange(self, request: Any) -> Any:
        try:
            reply = self._ack(request)
        except (socketio.exceptions.TimeoutError, TimeoutError):
            raise Unavailable(f"no ack within {self.timeout} s", native="timeout") from None
        except socketio.exceptions.BadNamespaceError as exc:
            raise Unavailable(f"not connected: {exc}", native="disconnected") from None
        if not isinstance(reply, dict):
            raise ContractError(f"ack is not an object: {reply!r}", native=reply)
        if "error" in reply:
            error = reply["error"]
            raise error_for(error["code"], error["message"], native=error)
        return reply["result"]

    def _call(self, op: str, **params: Any) -> Any:
        return self._exchange({"op": op, "params": params})

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        """`body` is the event's argument: sent as the JSON value it holds, or,
        if it is not JSON, as a binary attachment."""
        try:
            request: Any = json.loads(body)
        except ValueError:
            request = body
        return self._exchange(request)

    def _on_push(self, message: Any) -> None:
        with self._arrived:
            self.pushed.append((message, 2 + len(dumpb([PUSH_EVENT, message]))))
            self._arrived.notify_all()

    # --- echo, broadcast and push (ws-protocol.md, push.md), as clients/ws/client.py ----

    def echo(self, payload: Any) -> Any:
        return self._call("echo", payload=payload)

    def broadcast(self, payload: Any) -> dict[str, int]:
        return self._call("broadcast", payload=payload)

    def subscribe(self, feed: str, last_event_id: str | None = None, **params: Any) -> Any:
        if last_event_id is not None:
            params["last_event_id"] = last_event_id
        self._call("subscribe", feed=feed, **params)
        return PushStream(self, feed)  # type: ignore[arg-type]  # the WebSocket client's stream reads next_push()

    def unsubscribe(self, feed: str) -> None:
        self._call("unsubscribe", feed=feed)

    def next_push(self, timeout: float | None = None) -> Any:
        """The next push message (of any feed, or a broadcast), as a clients.base.Event."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: self.pushed, timeout or self.timeout):
                raise Unavailable(f"no push message within {timeout or self.timeout} s", native="timeout")
            message, size = self.pushed.popleft()
        if not isinstance(message, dict) or "event" not in message:
            raise ContractError(f"expected a push message, got {message!r}", native=message)
        data = message.get("data")
        if message["event"] in ("end", "error"):
            data = {**data, "feed": message.get("feed")}
        return Event(event=message["event"], data=data, id=message.get("id"), wire_bytes=size)


class SocketIOClient(_SocketIO):
    """python-socketio's asyncio client on an event loop of its own (_LoopThread: one thread,
    ended by close()). `ca_file`: over TLS (https:// -> wss://), the CA the server's
    certificate must chain to (the lab's: lab/tls.py), in place of the system's."""

    # aiohttp's WebSocket: no limit on a received message's size (its default, 4 MiB, would
    # refuse the largest replies; websocket-client set none), no permessage-deflate offered
    # (its default), Engine.IO's own pings only (no aiohttp heartbeat: its default).
    WEBSOCKET_OPTIONS = {"max_msg_size": 0}

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None):
        _compression(compression)
        self.timeout = timeout
        self._pushes()
        self._loop: _LoopThread | None = _LoopThread()
        self._http: aiohttp.ClientSession | None = None
        try:
            self.sio = self._run(partial(self._open, endpoint, ca_file), timeout)
        except BaseException as exc:
            self._end_loop()
            if isinstance(exc, socketio.exceptions.ConnectionError | TimeoutError):
                raise Unavailable(f"cannot connect to {endpoint}: {exc or 'timed out'}", native="connect") from None
            raise

    async def _open(self, endpoint: str, ca_file: str | None) -> socketio.AsyncClient:
        # aiohttp's session and connector belong to the loop they are made in: this one.
        # ssl.create_default_context, as every TLS client of the lab's (SSLKEYLOGFILE honoured).
        connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca_file)) if ca_file else None
        self._http = aiohttp.ClientSession(connector=connector)
        sio = _InOrderAsyncClient(reconnection=False, handle_sigint=False, json=CODEC,
                                  request_timeout=self.timeout, http_session=self._http,
                                  websocket_extra_options=dict(self.WEBSOCKET_OPTIONS))
        sio.on(PUSH_EVENT, self._on_push)
        url, path = _server(endpoint)
        try:
            await sio.connect(url, transports=["websocket"], socketio_path=path, wait_timeout=self.timeout)
        except BaseException:  # refused, or cancelled by _run's timeout: the session closed all the same
            await self._http.close()
            raise
        return sio

    def _run(self, work: Callable[[], Awaitable[T]], timeout: float) -> T:
        """`work` run on the client's loop; its result here, within `timeout` (and LOOP_GRACE_S)."""
        if self._loop is None:
            raise socketio.exceptions.BadNamespaceError("the client is closed")
        return self._loop.submit(work, timeout + LOOP_GRACE_S)

    def _ack(self, request: Any) -> Any:
        return self._run(partial(self.sio.call, EVENT, request, timeout=self.timeout), self.timeout)

    async def _shut(self) -> None:
        try:
            if self.sio.connected or self.sio.eio.state == "connected":
                await self.sio.disconnect()
        finally:
            if self._http is not None:
                await self._http.close()

    def _end_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop(self.timeout + LOOP_GRACE_S)  # its tasks cancelled, the loop closed, its thread joined

    def close(self) -> None:
        if self._loop is None:
            return
        try:
            self._run(self._shut, self.timeout)
        finally:
            self._end_loop()


class ThreadedSocketIOClient(_SocketIO):
    """python-socketio's threaded client (websocket-client), plain text, for gevent (see above)."""

    # websocket-client checks a text frame's UTF-8 in pure Python, byte by byte, before
    # it decodes it (36 ms of a 100-game reply, profiled 2026-11-26); its recv() decodes
    # text frames with bytes.decode("utf-8"), which rejects invalid UTF-8 as well, in C.
    WEBSOCKET_OPTIONS = {"skip_utf8_validation": True}

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, compression: str | None = None):
        _compression(compression)
        if urlsplit(endpoint).scheme not in ("http", "ws"):
            raise ValueError(f"{endpoint}: the threaded client is for plain text (TLS: SocketIOClient)")
        self.timeout = timeout
        self._pushes()
        self.sio = _InOrderClient(reconnection=False, handle_sigint=False, json=CODEC,
                                  request_timeout=timeout, websocket_extra_options=dict(self.WEBSOCKET_OPTIONS))
        self.sio.on(PUSH_EVENT, self._on_push)
        url, path = _server(endpoint)
        try:
            self.sio.connect(url, transports=["websocket"], socketio_path=path, wait_timeout=timeout)
        except socketio.exceptions.ConnectionError as exc:
            raise Unavailable(f"cannot connect to {endpoint}: {exc}", native="connect") from None

    def _ack(self, request: Any) -> Any:
        return self.sio.call(EVENT, request, timeout=self.timeout)

    def close(self) -> None:
        self.sio.disconnect()


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The connection and event SocketIOClient makes for `op`: the server's URL and
    path as it connects (the WebSocket transport only), the event and its argument."""
    url, path = _server(endpoint)
    return {"url": url, "path": "/" + path, "transports": ["websocket"], "event": EVENT,
            "argument": {"op": op, "params": params}}
