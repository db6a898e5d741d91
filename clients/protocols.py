"""One descriptor per protocol: everything the lab knows about a protocol, in one place.

The manifest's `protocol = "..."` names an entry here. Clients (`clients.connect`),
the registry's order (`lab.settings.PROTOCOL_ORDER`), the wire capture (which
tshark dissector decodes its port, how its application payload is counted, how
a connection's setup and teardown are found), the reports (the label), the run
context (the client packages whose versions every result records) and the
error tests (the contract error in the protocol's own spelling) all read it.

Adding a protocol is adding one `Protocol(...)` to PROTOCOLS (and its client
module under clients/). What an entry needs:

    name             the manifest's `protocol` value ("rest")
    label            how reports name it ("REST"; the study's spelling where it has one)
    client           "module:Class" of its client (clients.base.GameClient), imported on first use
    endpoint         the endpoint's shape, with {host} and {port} ("http://{host}:{port}");
                     a manifest's `endpoint` must start with the same scheme
    default_port     the port inside a container when the manifest's [docker] has none
    transport        "http" (HTTP/1.1 requests), "http2" (HTTP/2 streams) or
                     "websocket" (an HTTP/1.1 upgrade, then WebSocket frames): decides the
                     tshark dissector and how capture finds connection setup and teardown
    payload          how capture counts the application payload: "http_body"
                     (http.content_length), "grpc_messages" (grpc.message_length) or
                     "websocket_data" (data-frame payload lengths)
    payload_source   the sentence the capture report prints for that count
    client_packages  the Python packages its client runs on (their versions go in every result)
    native_error     (native, code) -> bool: is `native` (ContractError.native, as its client
                     raises it) the contract error `code` in this protocol's own terms?
    error_spelling   that spelling in words, for the documentation and test messages
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract.errors import GRPC_STATUS, HTTP_STATUS, RESOURCE_EXHAUSTED, UNAVAILABLE

TRANSPORTS = ("http", "http2", "websocket")
PAYLOADS = ("http_body", "grpc_messages", "websocket_data")
# tshark's dissector for each transport (a WebSocket starts as an HTTP/1.1 upgrade).
DISSECTOR = {"http": "http", "http2": "http2", "websocket": "http"}


@dataclass(frozen=True)
class Protocol:
    name: str
    label: str
    client: str
    endpoint: str
    default_port: int
    transport: str
    payload: str
    payload_source: str
    client_packages: tuple[str, ...]
    native_error: Callable[[Any, str], bool]
    error_spelling: str

    def __post_init__(self) -> None:
        assert self.transport in TRANSPORTS, self.transport
        assert self.payload in PAYLOADS, self.payload

    @property
    def scheme(self) -> str:
        """"http", "ws", ... or "" for a bare host:port (gRPC)."""
        return self.endpoint.split("://")[0] if "://" in self.endpoint else ""

    @property
    def dissector(self) -> str:
        return DISSECTOR[self.transport]

    def client_class(self) -> type:
        module, _, cls = self.client.partition(":")
        return getattr(importlib.import_module(module), cls)


def _http_status(native: Any, code: str) -> bool:
    return native == HTTP_STATUS[code]


def _grpc_status(native: Any, code: str) -> bool:
    return getattr(native, "name", None) == GRPC_STATUS[code]


def _graphql_error(native: Any, code: str) -> bool:
    status, extension_code = native
    allowed = {RESOURCE_EXHAUSTED: (413,), UNAVAILABLE: (200, 503)}.get(code, (200, 400))
    return extension_code == code and status in allowed


def _message_error(native: Any, code: str) -> bool:
    return isinstance(native, dict) and native.get("code") == code


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol(
        name="rest", label="REST", client="clients.rest:RestClient",
        endpoint="http://{host}:{port}", default_port=8000, transport="http", payload="http_body",
        payload_source="HTTP body: http.content_length",
        client_packages=("requests", "urllib3"), native_error=_http_status,
        error_spelling="the HTTP status of the contract's error table"),
    Protocol(
        name="grpc", label="gRPC", client="clients.grpc:GrpcClient",
        endpoint="{host}:{port}", default_port=50051, transport="http2", payload="grpc_messages",
        payload_source="protobuf messages: grpc.message_length (without the 5-byte prefix)",
        client_packages=("grpcio", "protobuf"), native_error=_grpc_status,
        error_spelling="the gRPC status code of the contract's error table"),
    Protocol(
        name="graphql", label="GraphQL", client="clients.graphql:GraphQLClient",
        endpoint="http://{host}:{port}/graphql", default_port=8000, transport="http",
        payload="http_body",
        payload_source="HTTP body (query + variables / data): http.content_length",
        client_packages=("requests", "urllib3"), native_error=_graphql_error,
        error_spelling="errors[].extensions.code = the contract code, HTTP 200/400 "
                       "(413 when too large, 503 allowed when unavailable)"),
    Protocol(
        name="ws", label="WebSockets", client="clients.ws:WebSocketClient",
        endpoint="ws://{host}:{port}/ws", default_port=8000, transport="websocket",
        payload="websocket_data",
        payload_source="WebSocket data-frame payload: websocket.payload_length",
        client_packages=("simple-websocket", "wsproto"), native_error=_message_error,
        error_spelling='an {"error": {"code": ...}} reply to the request (contract/ws-protocol.md)'),
    Protocol(
        name="socketio", label="socket.io", client="clients.socketio:SocketIOClient",
        endpoint="http://{host}:{port}/socket.io/", default_port=8000, transport="websocket",
        payload="websocket_data",
        payload_source="WebSocket data-frame payload (Engine.IO + socket.io packets): websocket.payload_length",
        client_packages=("python-socketio", "python-engineio", "websocket-client"),
        native_error=_message_error,
        error_spelling='an {"error": {"code": ...}} object in the event\'s ack (contract/socketio-protocol.md)'),
    Protocol(
        name="sse", label="SSE", client="clients.sse:SseClient",
        endpoint="http://{host}:{port}", default_port=8000, transport="http", payload="http_body",
        payload_source="HTTP body: http.content_length (an event stream's chunks are not counted)",
        client_packages=("httpx", "h2"), native_error=_http_status,
        error_spelling="the HTTP status of the contract's error table (contract/push.md)"),
)}


def get(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"no protocol descriptor {name!r} (known: {', '.join(PROTOCOLS)}); "
                         "add one to clients/protocols.py") from None


def label(name: str) -> str:
    """The display label; a name without a descriptor (e.g. "direct") as it is."""
    return PROTOCOLS[name].label if name in PROTOCOLS else name
