"""socket.io: one python-socketio connection over the WebSocket transport only
(no long-polling, no upgrade), a "call" event with an ack per request
(contract/socketio-protocol.md)."""

from __future__ import annotations

import json
import threading
from collections import deque
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import engineio
import requests
import socketio

from clients.base import CALL_TIMEOUT, Event, OperationClient
from clients.http import trust_only
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


class _InOrderEngineIO(engineio.Client):
    """Engine.IO's client hands each received message to a new thread
    (`_trigger_event('message', run_async=True)`), so two messages sent in order
    can reach the handlers out of order: a feed's `end` before its last message
    (CI, 2026-11-26: socket.io's stream of ids 1, 2 yielded 1 and then `end`).
    Here a message is dispatched on the reading thread, in arrival order, as the
    other clients read theirs; the handlers only queue a push or complete an ack."""

    def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        if event == "message":
            kwargs["run_async"] = False
        return super()._trigger_event(event, *args, **kwargs)


class _InOrderClient(socketio.Client):
    def _engineio_client_class(self) -> type:
        return _InOrderEngineIO


class SocketIOClient(OperationClient):
    protocol = "socketio"
    # websocket-client checks a text frame's UTF-8 in pure Python, byte by byte, before
    # it decodes it (36 ms of a 100-game reply, profiled 2026-11-26); its recv() decodes
    # text frames with bytes.decode("utf-8"), which rejects invalid UTF-8 as well, in C.
    WEBSOCKET_OPTIONS = {"skip_utf8_validation": True}

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None):
        if compression not in (None, "identity"):
            # services/socketio/*/manifest.toml leaves the compression axis out for this reason
            raise ValueError(f"compression {compression!r}: python-socketio's WebSocket transport "
                             "(websocket-client) cannot offer permessage-deflate")
        self.timeout = timeout
        url = urlsplit(endpoint)
        # `ca_file`: over TLS (https:// -> wss://), the CA the server's certificate must
        # chain to (the lab's: lab/tls.py); engine.io hands a session's `verify` path to
        # websocket-client as its sslopt ca_certs.
        session = None
        if ca_file:
            session = requests.Session()
            trust_only(session, ca_file)
        self.sio = _InOrderClient(reconnection=False, handle_sigint=False, json=CODEC,
                                  request_timeout=timeout, http_session=session,
                                  websocket_extra_options=dict(self.WEBSOCKET_OPTIONS))
        # Push messages (broadcasts, feeds), in arrival order, with their size
        # as the event's JSON text ('42["push",...]').
        self.pushed: deque[tuple[dict[str, Any], int]] = deque()
        self._arrived = threading.Condition()
        self.sio.on(PUSH_EVENT, self._on_push)
        try:
            self.sio.connect(f"{url.scheme}://{url.netloc}", transports=["websocket"],
                             socketio_path=url.path.strip("/") or "socket.io", wait_timeout=timeout)
        except socketio.exceptions.ConnectionError as exc:
            raise Unavailable(f"cannot connect to {endpoint}: {exc}", native="connect") from None

    def _exchange(self, request: Any) -> Any:
        try:
            reply = self.sio.call(EVENT, request, timeout=self.timeout)
        except socketio.exceptions.TimeoutError:
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

    def close(self) -> None:
        self.sio.disconnect()


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The connection and event SocketIOClient makes for `op`: the server's URL and
    path as it connects (the WebSocket transport only), the event and its argument."""
    url = urlsplit(endpoint)
    return {"url": f"{url.scheme}://{url.netloc}", "path": "/" + (url.path.strip("/") or "socket.io"),
            "transports": ["websocket"], "event": EVENT, "argument": {"op": op, "params": params}}
