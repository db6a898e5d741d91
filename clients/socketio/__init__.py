"""socket.io over its WebSocket transport (contract/socketio-protocol.md)."""

from dataclasses import replace

from clients.protocols import Protocol
from clients.ws import DESCRIPTOR as WS
from clients.ws import message_error

DESCRIPTOR = Protocol(
    name="socketio", order=50, label="socket.io", client="clients.socketio.client:SocketIOClient",
    endpoint="http://{host}:{port}/socket.io/", default_port=8000, transport="websocket",
    payload="websocket_data",
    payload_source="WebSocket data-frame payload (Engine.IO + socket.io packets): websocket.payload_length",
    client_packages=("python-socketio", "python-engineio", "aiohttp", "websocket-client"),
    native_error=message_error,
    error_spelling='an {"error": {"code": ...}} object in the event\'s ack (contract/socketio-protocol.md)',
    fuzzer="clients.socketio.fuzz:fuzzer", messaging=True, load_client="clients.socketio.load:connect",
    crosscheck="crosscheck", message_framing="socketio",
    crosscheck_plan="clients.socketio.client:wire_plan",
    # its WebSocket transport, as the push load and capture have measured it: the WebSocket way
    push=tuple(replace(way, framing="socket.io: the WebSocket message's JSON object behind its packet "
                                    "prefix ('42[\"push\",...]')") for way in WS.push))
