"""socket.io in a Locust process: the lab's SocketIOClient (python-socketio
over websocket-client), its threads greenlets under gevent's patching."""

from clients.socketio.client import SocketIOClient


def connect(endpoint: str, timeout: float, compression: str | None = None) -> SocketIOClient:
    return SocketIOClient(endpoint, timeout, compression=compression)
