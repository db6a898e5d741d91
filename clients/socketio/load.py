"""socket.io in a Locust process: python-socketio's threaded client over websocket-client
(clients/socketio/client.py ThreadedSocketIOClient), its threads greenlets under gevent's
patching. The same socket.io packets as the latency suite's SocketIOClient (its asyncio
client cannot run one loop per user in greenlets that share one OS thread); the WebSocket
upgrade request is websocket-client's, not aiohttp's."""

from clients.socketio.client import ThreadedSocketIOClient


def connect(endpoint: str, timeout: float, compression: str | None = None) -> ThreadedSocketIOClient:
    return ThreadedSocketIOClient(endpoint, timeout, compression=compression)
