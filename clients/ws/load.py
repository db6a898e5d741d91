"""The WebSocket protocol in a Locust process: the lab's WebSocketClient, its
reader thread a greenlet under gevent's patching."""

from clients.ws.client import WebSocketClient


def connect(endpoint: str, timeout: float, compression: str | None = None) -> WebSocketClient:
    return WebSocketClient(endpoint, timeout, compression=compression)
