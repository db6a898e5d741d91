"""WebSocket: one simple-websocket connection, JSON messages with request ids
(contract/ws-protocol.md)."""

from __future__ import annotations

import contextlib
import itertools
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from simple_websocket import Client
from simple_websocket.ws import Base
from wsproto import ConnectionType
from wsproto.events import AcceptConnection, RejectConnection, Request
from wsproto.extensions import PerMessageDeflate

from clients.base import CALL_TIMEOUT, Event, OperationClient
from contract.codec import dumps, loads
from contract.errors import ContractError, Unavailable, error_for


def _reader_thread(target: Any) -> threading.Thread:
    """The library's reader thread, its socket made blocking before it starts:
    it blocks in recv() while the connection idles (receive(timeout=...)
    bounds each call instead). Clearing the timeout after connect() raced
    with the thread's first recv(), which then timed out after an idle
    `timeout` and closed the connection (close code 1005 on the next send)."""
    target.__self__.sock.settimeout(None)
    return threading.Thread(target=target)


CLOSE_JOIN_S = 5.0  # the reader thread's end, once its socket is shut down


class Connection(Client):
    """simple-websocket's client connection, its connect and opening handshake
    bounded by `timeout` (the library takes none), then read by a blocking
    reader thread. The timeout is the socket's own: the process-wide default
    (socket.setdefaulttimeout), set and restored around each connect, was left
    at 10 s for the rest of the process in one lab start of three, when the
    lab's health checks connected side by side (a thread restored the value
    another had set); every socket opened later without a timeout of its own
    then dropped its connection after 10 s idle."""

    def __init__(self, url: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None):
        if compression not in (None, "identity", "gzip"):
            raise ValueError(f"compression {compression!r}: expected identity or gzip")
        # gzip (lab/axes.py, axis `compression`): the handshake offers permessage-deflate
        # (RFC 7692, wsproto's: context takeover both ways); `extensions` holds what the
        # server accepted, and wsproto compresses and decodes the messages.
        self.offer = [PerMessageDeflate()] if compression == "gzip" else []
        self.extensions: list[str] = []
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"not a ws:// or wss:// URL: {url!r}")
        secure = parts.scheme == "wss"
        self.host, self.port = parts.hostname, parts.port or (443 if secure else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.subprotocols, self.extra_headeers = [], []  # (sic) the names Client.handshake reads
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if secure:  # TLS, verified against `ca_file` (the lab's CA: lab/tls.py), else the system's
                context = ssl.create_default_context(cafile=ca_file)
                context.set_alpn_protocols(["http/1.1"])
                sock = context.wrap_socket(sock, server_hostname=self.host)  # the handshake, within `timeout`
            Base.__init__(self, sock, connection_type=ConnectionType.CLIENT, thread_class=_reader_thread)
        except BaseException:
            sock.close()
            raise

    def close(self, reason: int | None = None, message: str | None = None) -> None:
        """The close frame (the library's), then the socket shut down, which wakes the reader
        thread's blocked recv(), and that thread ended, before the socket is closed. Closed
        under the thread's feet (the library's close), a TLS socket's file descriptor was
        freed while OpenSSL, in the reader, still read its number: the next connection the
        process opened got that number, and the old reader took the bytes of its TLS
        handshake (WRONG_VERSION_NUMBER there, one run in three of tests/test_tls.py)."""
        try:
            Base.close(self, reason=reason, message=message)
        finally:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            if self.thread is not threading.current_thread():
                self.thread.join(CLOSE_JOIN_S)
            self.sock.close()


    def handshake(self) -> None:
        """simple-websocket's Client.handshake, with the extensions offered (the
        library's offers none), and what the server accepted kept."""
        self.sock.send(self.ws.send(Request(host=self.host, target=self.path, subprotocols=self.subprotocols,
                                            extra_headers=self.extra_headeers, extensions=self.offer)))
        while True:
            data = self.sock.recv(self.receive_bytes)
            if not data:
                raise ConnectionError("the server closed the connection during the handshake")
            self.ws.receive_data(data)
            event = next(self.ws.events(), None)
            if event is not None:
                break
        if isinstance(event, RejectConnection):
            raise ConnectionError(event.status_code)
        if not isinstance(event, AcceptConnection):
            raise ConnectionError(400)
        self.subprotocol = event.subprotocol
        self.extensions = [e.name for e in event.extensions]
        self.connected = True


def request_message(request_id: Any, op: str, params: dict[str, Any]) -> str:
    """A request as the contract spells it (contract/ws-protocol.md)."""
    return dumps({"request_id": request_id, "op": op, "params": params})


class WebSocketClient(OperationClient):
    protocol = "ws"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None):
        self.timeout = timeout
        self.ids = itertools.count(1)
        self.pushed: deque[tuple[dict[str, Any], int]] = deque()  # push messages received meanwhile
        self.ws = Connection(endpoint, timeout, ca_file, compression)

    def _receive(self, timeout: float) -> tuple[dict[str, Any], int]:
        reply = self.ws.receive(timeout=timeout)
        if reply is None:
            raise Unavailable(f"no message within {timeout} s", native="timeout")
        return loads(reply), len(reply.encode() if isinstance(reply, str) else reply)

    def _exchange(self, message: str | bytes, request_id: Any) -> Any:
        self.ws.send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            response, size = self._receive(max(deadline - time.monotonic(), 0.001))
            if "request_id" in response or "event" not in response:
                break
            self.pushed.append((response, size))  # a push message: kept for next_push()
        if response.get("request_id") != request_id:
            raise ContractError(f"reply to request {response.get('request_id')!r}, "
                                f"expected {request_id!r}", native=response)
        if "error" in response:
            error = response["error"]
            raise error_for(error["code"], error["message"], native=error)
        return response["result"]

    def _call(self, op: str, **params: Any) -> Any:
        request_id = next(self.ids)
        return self._exchange(request_message(request_id, op, params), request_id)

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        """`body` is the whole message, sent as a binary frame (so it need not
        be UTF-8); replies to it carry request_id null unless the body names one."""
        try:
            request_id = loads(body).get("request_id")
        except (ValueError, AttributeError):
            request_id = None
        return self._exchange(body, request_id)

    # --- echo, broadcast and push (contract/ws-protocol.md, push.md) -----------

    def echo(self, payload: Any) -> Any:
        return self._call("echo", payload=payload)

    def broadcast(self, payload: Any) -> dict[str, int]:
        return self._call("broadcast", payload=payload)

    def subscribe(self, feed: str, last_event_id: str | None = None, **params: Any) -> PushStream:
        if last_event_id is not None:
            params["last_event_id"] = last_event_id
        self._call("subscribe", feed=feed, **params)
        return PushStream(self, feed)

    def unsubscribe(self, feed: str) -> None:
        self._call("unsubscribe", feed=feed)

    def next_push(self, timeout: float | None = None) -> Event:
        """The next push message (of any feed, or a broadcast)."""
        message, size = self.pushed.popleft() if self.pushed else self._receive(timeout or self.timeout)
        if "event" not in message or "request_id" in message:
            raise ContractError(f"expected a push message, got {message!r}", native=message)
        data = message["data"]
        if message["event"] == "end" or message["event"] == "error":
            data = {**data, "feed": message.get("feed")}
        return Event(event=message["event"], data=data, id=message.get("id"), wire_bytes=size)

    def close(self) -> None:
        self.ws.close()


class PushStream:
    """One subscription on a WebSocket client: iterate for its feed's events
    (other push messages are set aside in `.other`); close() unsubscribes."""

    def __init__(self, client: WebSocketClient, feed: str):
        self.client = client
        self.feed = feed
        self.ended = False
        self.other: list[Event] = []
        self.http_version = "WebSocket"

    def __iter__(self) -> Iterator[Event]:
        while not self.ended:
            event = self.client.next_push()
            if event.event == self.feed:
                yield event
            elif event.event in ("end", "error") and event.data.get("feed") == self.feed:
                self.ended = True
                yield event
            else:
                self.other.append(event)

    def close(self) -> None:
        if not self.ended:
            self.ended = True
            try:
                self.client.unsubscribe(self.feed)
            except ContractError:
                pass  # ended meanwhile
            # messages pushed before the reply: not for a later subscription
            self.client.pushed = deque(m for m in self.client.pushed
                                       if self.feed not in (m[0].get("event"), m[0].get("feed")))

    def __enter__(self) -> PushStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The message WebSocketClient sends for `op`, with its first request id: a
    cross-check client sends this text on every call, one call at a time (its
    reply is the next with that id; the lab's client counts its ids up instead,
    a digit or more per message)."""
    return {"message": request_message(1, op, params), "request_id": 1}
