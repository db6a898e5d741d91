"""Connect RPC: connect-python's synchronous client (connectrpc, on the pyqwest HTTP client) with
the contract's generated google.protobuf messages (contract/games_pb2.py).

One client speaks one wire protocol with one codec (lab/axes.py, the protocol's own axes `wire`
and `codec`): Connect (unary over HTTP/1.1; GetGame, ListGames and Health as HTTP GETs, the
message in the query, since they have no side effects), gRPC (cleartext HTTP/2, prior knowledge)
or gRPC-Web (HTTP/1.1); protobuf's binary encoding or its JSON mapping."""

from __future__ import annotations

from typing import Any

from connectrpc.client import ConnectClientSync
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.protocol import ProtocolType
from google.protobuf.message import Message
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from clients.base import CALL_TIMEOUT, Game
from contract import games_pb2 as pb
from contract.errors import CODE_OF_CONNECT, ContractError, error_for
from contract.grpc_codec import game_to_message, message_to_document

SERVICE = "protolab.games.v1.Games"
# The methods without side effects: Connect lets a client call them with GET (the server marks
# them so: services/connect/*), which a cache or a proxy may then answer.
NO_SIDE_EFFECTS = ("GetGame", "ListGames", "Health")
METHODS: dict[str, MethodInfo] = {
    m.name: MethodInfo(name=m.name, service_name=SERVICE, input=getattr(pb, m.input_type.name),
                       output=getattr(pb, m.output_type.name), stream_type=StreamType.UNARY,
                       idempotency_level=IdempotencyLevel.NO_SIDE_EFFECTS if m.name in NO_SIDE_EFFECTS
                       else IdempotencyLevel.UNKNOWN)
    for m in pb.DESCRIPTOR.services_by_name["Games"].methods}
WIRES = {"connect": ProtocolType.CONNECT, "grpc": ProtocolType.GRPC, "grpcweb": ProtocolType.GRPC_WEB}
# gRPC needs HTTP/2 (cleartext: prior knowledge); Connect and gRPC-Web run on HTTP/1.1, also over
# TLS (ALPN would otherwise pick h2 there, and TLS would change two things at once).
HTTP_VERSION = {"connect": HTTPVersion.HTTP1, "grpc": HTTPVersion.HTTP2, "grpcweb": HTTPVersion.HTTP1}
CODECS = {"proto": google_protobuf_binary_codec, "json": google_protobuf_json_codec}
COMPRESSIONS = ("identity", "gzip")
OP_METHOD = {"create": "CreateGame", "update": "UpdateGame"}


class _Raw(Codec):
    """A codec that sends bytes as they are (send_raw: bad-input tests) and decodes as `inner`."""

    def __init__(self, inner: Codec):
        self.inner = inner

    def name(self) -> str:
        return self.inner.name()

    def encode(self, message: Any) -> bytes:
        return message if isinstance(message, bytes) else self.inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: Any) -> Any:
        return self.inner.decode(data, message_class)


class ConnectClient:
    protocol = "connect"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None, wire: str = "connect", codec: str = "proto",
                 transport: Any = None):
        """`wire`, `codec`: the protocol's own axes (clients/connect/__init__.py); `ca_file`: the CA a
        TLS server must chain to (lab/tls.py); `compression` (lab/axes.py): gzip asks for gzip replies
        and sends gzip requests (Connect: Content-Encoding; gRPC, gRPC-Web: grpc-encoding);
        `transport`: a pyqwest SyncTransport to carry the calls instead of pyqwest's own (the load
        instrument's cooperative one: clients/connect/load.py)."""
        for name, value, known in (("wire", wire, WIRES), ("codec", codec, CODECS),
                                   ("compression", compression or "identity", COMPRESSIONS)):
            if value not in known:
                raise ValueError(f"{name} {value!r}: expected one of {', '.join(known)}")
        self.endpoint, self.wire, self.codec = endpoint.rstrip("/"), wire, codec
        self.timeout = timeout
        if transport is None:
            ca = None
            if ca_file:
                with open(ca_file, "rb") as pem:
                    ca = pem.read()
            transport = SyncHTTPTransport(http_version=HTTP_VERSION[wire], tls_ca_cert=ca, timeout=timeout,
                                          connect_timeout=timeout, enable_otel=False)
        self.transport = transport
        self.http = SyncClient(self.transport)
        gzip = compression == "gzip"
        options: dict[str, Any] = {
            "protocol": WIRES[wire], "timeout_ms": int(timeout * 1000), "http_client": self.http,
            "accept_compression": [GzipCompression()] if gzip else (), "send_compression": GzipCompression() if gzip
            else None}
        self.client = ConnectClientSync(self.endpoint, codec=CODECS[codec](), **options)
        self.raw = ConnectClientSync(self.endpoint, codec=_Raw(CODECS[codec]()), **options)

    def _call(self, method: str, request: Any, client: ConnectClientSync | None = None) -> Any:
        info = METHODS[method]
        try:
            return (client or self.client).execute_unary(
                request=request, method=info,
                use_get=self.wire == "connect" and info.idempotency_level == IdempotencyLevel.NO_SIDE_EFFECTS)
        except ConnectError as exc:
            raise _error(exc) from None

    def create(self, game: Game) -> Game:
        return message_to_document(self._call("CreateGame", game_to_message(game)))

    def get(self, game_id: str) -> Game:
        return message_to_document(self._call("GetGame", pb.GameId(id=game_id)))

    def list(self, limit: int = 100, offset: int = 0) -> list[Game]:
        reply = self._call("ListGames", pb.ListGamesRequest(limit=limit, offset=offset))
        return [message_to_document(m) for m in reply.games]

    def update(self, game_id: str, game: Game) -> Game:
        return message_to_document(self._call("UpdateGame", game_to_message(game, game_id)))

    def delete(self, game_id: str) -> None:
        self._call("DeleteGame", pb.GameId(id=game_id))

    def health(self) -> None:
        self._call("Health", pb.Empty())

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        """`body` as the encoded request of CreateGame or UpdateGame, in this client's codec's media type."""
        return message_to_document(self._call(OP_METHOD[op], body, self.raw))

    def close(self) -> None:
        self.client.close()
        self.raw.close()
        self.transport.close()


def _error(exc: ConnectError) -> ContractError:
    native = exc.code.value  # Connect's spelling: "not_found"
    return error_for(CODE_OF_CONNECT.get(native, native.upper()), exc.message, native=native)


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The call ConnectClient (wire connect, codec proto) makes for `op`: its procedure, whether it
    goes as a GET, and the request message as its methods build it, in protojson (the .proto's names)."""
    from google.protobuf.json_format import MessageToDict

    game_id = params.get("id", "")
    method, message = {
        "create": lambda: ("CreateGame", game_to_message(params["game"])),
        "get": lambda: ("GetGame", pb.GameId(id=game_id)),
        "list": lambda: ("ListGames", pb.ListGamesRequest(limit=params.get("limit", 100),
                                                          offset=params.get("offset", 0))),
        "update": lambda: ("UpdateGame", game_to_message(params["game"], game_id)),
        "delete": lambda: ("DeleteGame", pb.GameId(id=game_id)),
        "health": lambda: ("Health", pb.Empty()),
    }[op]()
    assert isinstance(message, Message)
    return {"procedure": f"/{SERVICE}/{method}", "get": method in NO_SIDE_EFFECTS,
            "message": MessageToDict(message, preserving_proto_field_name=True)}
