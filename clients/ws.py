"""WebSocket: one simple-websocket connection, JSON messages with request ids
(contract/ws-protocol.md)."""

from __future__ import annotations

import itertools
import socket
import threading
from typing import Any

from simple_websocket import Client

from clients.base import OperationClient
from contract.codec import dumps, loads
from contract.errors import ContractError, Unavailable, error_for
from lab.settings import CALL_TIMEOUT


class _UntimedReader(threading.Thread):
    """The library's reader thread, started after the handshake (which the
    connect timeout bounds): from then on it blocks in recv() without a
    timeout while the connection idles, and receive(timeout=...) bounds each
    call instead. Left with the connect timeout, its recv() would end an
    idle connection (1005) after `timeout` seconds."""

    def __init__(self, target: Any, **kwargs: Any):
        target.__self__.sock.settimeout(None)
        super().__init__(target=target, **kwargs)


class WebSocketClient(OperationClient):
    protocol = "ws"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT):
        self.timeout = timeout
        self.ids = itertools.count(1)
        # simple-websocket takes no connect timeout: the socket it creates
        # inherits the default one, which bounds connect and handshake.
        previous = socket.getdefaulttimeout()
        socket.setdefaulttimeout(timeout)
        try:
            self.ws = Client.connect(endpoint, thread_class=_UntimedReader)
        finally:
            socket.setdefaulttimeout(previous)
        self.ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _exchange(self, message: str | bytes, request_id: Any) -> Any:
        self.ws.send(message)
        reply = self.ws.receive(timeout=self.timeout)
        if reply is None:
            raise Unavailable(f"no reply within {self.timeout} s", native="timeout")
        response = loads(reply)
        if response.get("request_id") != request_id:
            raise ContractError(f"reply to request {response.get('request_id')!r}, "
                                f"expected {request_id!r}", native=response)
        if "error" in response:
            error = response["error"]
            raise error_for(error["code"], error["message"], native=error)
        return response["result"]

    def _call(self, op: str, **params: Any) -> Any:
        request_id = next(self.ids)
        return self._exchange(dumps({"request_id": request_id, "op": op, "params": params}),
                              request_id)

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        """`body` is the whole message, sent as a binary frame (so it need not
        be UTF-8); replies to it carry request_id null unless the body names one."""
        try:
            request_id = loads(body).get("request_id")
        except (ValueError, AttributeError):
            request_id = None
        return self._exchange(body, request_id)

    def close(self) -> None:
        self.ws.close()
