"""socket.io: one python-socketio connection over the WebSocket transport only
(no long-polling, no upgrade), a "call" event with an ack per request
(contract/socketio-protocol.md)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import socketio

from clients.base import OperationClient
from contract.codec import dumps
from contract.errors import ContractError, Unavailable, error_for
from lab.settings import CALL_TIMEOUT

EVENT = "call"
# socket.io's packets carry JSON text; encoded as every other JSON protocol
# here encodes it (contract.codec: compact, non-ASCII kept), not with
# python-socketio's default ASCII escapes, so byte counts compare protocols.
CODEC = SimpleNamespace(dumps=lambda obj, **_: dumps(obj), loads=json.loads,
                        JSONDecodeError=json.JSONDecodeError)


class SocketIOClient(OperationClient):
    protocol = "socketio"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT):
        self.timeout = timeout
        url = urlsplit(endpoint)
        self.sio = socketio.Client(reconnection=False, handle_sigint=False, json=CODEC,
                                   request_timeout=timeout)
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

    def close(self) -> None:
        self.sio.disconnect()
