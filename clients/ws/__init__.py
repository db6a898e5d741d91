"""The lab's WebSocket protocol: JSON messages with request ids (contract/ws-protocol.md)."""

from clients.protocols import Protocol, PushWay


def message_error(native: object, code: str) -> bool:
    return isinstance(native, dict) and native.get("code") == code


DESCRIPTOR = Protocol(
    name="ws", order=40, label="WebSockets", client="clients.ws.client:WebSocketClient",
    endpoint="ws://{host}:{port}/ws", default_port=8000, transport="websocket",
    payload="websocket_data",
    payload_source="WebSocket data-frame payload: websocket.payload_length",
    client_packages=("simple-websocket", "wsproto"), native_error=message_error,
    error_spelling='an {"error": {"code": ...}} reply to the request (contract/ws-protocol.md)',
    fuzzer="clients.ws.fuzz:fuzzer", messaging=True, load_client="clients.ws.load:connect",
    crosscheck="crosscheck", message_framing="ws",
    crosscheck_plan="clients.ws.client:wire_plan",
    push=(PushWay("ws", "WebSocket push", "WS", mode="ws", capture_label="WebSocket",
                  framing="WebSocket: a JSON object with its feed and id in a frame"),))
