"""gRPC: one grpcio channel and stub."""

from __future__ import annotations

from typing import Any

import grpc

from clients.base import CALL_TIMEOUT, Game
from contract import games_pb2 as pb
from contract.errors import ContractError, error_for
from contract.games_pb2_grpc import GamesStub
from contract.grpc_codec import game_to_message, message_to_document

SERVICE = "protolab.games.v1.Games"
# The lab's compression axis (lab/axes.py): the channel's call compression. With gzip
# every request goes out in gzip (grpc-encoding: gzip) and grpcio advertises, as it
# always does, that it accepts gzip replies (grpc-accept-encoding); it decodes them.
CHANNEL_COMPRESSION = {"identity": None, "gzip": grpc.Compression.Gzip}
METHOD_OF = {"create": ("CreateGame", pb.Game), "update": ("UpdateGame", pb.Game)}


def credentials(ca_file: str) -> grpc.ChannelCredentials:
    """TLS that trusts the certificate authority in `ca_file` (PEM) alone."""
    with open(ca_file, "rb") as pem:
        return grpc.ssl_channel_credentials(root_certificates=pem.read())


class GrpcClient:
    protocol = "grpc"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None):
        self.timeout = timeout
        if compression is not None and compression not in CHANNEL_COMPRESSION:
            raise ValueError(f"compression {compression!r}: expected one of {', '.join(CHANNEL_COMPRESSION)}")
        # A local subchannel pool: by default grpcio shares one TCP connection
        # among all channels of a process to the same address, so a "new"
        # client would silently reuse another's connection (and its setup).
        options = [("grpc.use_local_subchannel_pool", 1)]
        # `ca_file`: a secure channel (TLS), the server's certificate verified against
        # that CA (the lab's own: lab/tls.py); else cleartext (h2c). `compression`: the
        # channel's calls in that encoding (grpc-encoding), the replies asked in kind.
        algorithm = CHANNEL_COMPRESSION.get(compression or "identity")
        self.channel = grpc.secure_channel(endpoint, credentials(ca_file), options=options,
                                           compression=algorithm) if ca_file \
            else grpc.insecure_channel(endpoint, options=options, compression=algorithm)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self.stub = GamesStub(self.channel)

    def _call(self, method: Any, request: Any) -> Any:
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise _error(exc) from None

    def create(self, game: Game) -> Game:
        return message_to_document(self._call(self.stub.CreateGame, game_to_message(game)))

    def get(self, game_id: str) -> Game:
        return message_to_document(self._call(self.stub.GetGame, pb.GameId(id=game_id)))

    def list(self, limit: int = 100, offset: int = 0) -> list[Game]:
        reply = self._call(self.stub.ListGames, pb.ListGamesRequest(limit=limit, offset=offset))
        return [message_to_document(m) for m in reply.games]

    def update(self, game_id: str, game: Game) -> Game:
        return message_to_document(
            self._call(self.stub.UpdateGame, game_to_message(game, game_id)))

    def delete(self, game_id: str) -> None:
        self._call(self.stub.DeleteGame, pb.GameId(id=game_id))

    def health(self) -> None:
        self._call(self.stub.Health, pb.Empty())

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        name, reply_type = METHOD_OF[op]
        method = self.channel.unary_unary(
            f"/{SERVICE}/{name}", request_serializer=None,
            response_deserializer=reply_type.FromString)
        return message_to_document(self._call(method, body))

    def close(self) -> None:
        self.channel.close()


def _error(exc: grpc.RpcError) -> ContractError:
    code = exc.code()  # type: ignore[attr-defined]
    return error_for(code.name, exc.details() or "", native=code)  # type: ignore[attr-defined]


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The call GrpcClient makes for `op`: its full method name and the request message
    as its methods build it, in protojson (field names as in the .proto)."""
    from google.protobuf.json_format import MessageToDict

    game_id = params.get("id", "")
    name, message = {
        "create": lambda: ("CreateGame", game_to_message(params["game"])),
        "get": lambda: ("GetGame", pb.GameId(id=game_id)),
        "list": lambda: ("ListGames", pb.ListGamesRequest(limit=params.get("limit", 100),
                                                          offset=params.get("offset", 0))),
        "update": lambda: ("UpdateGame", game_to_message(params["game"], game_id)),
        "delete": lambda: ("DeleteGame", pb.GameId(id=game_id)),
        "health": lambda: ("Health", pb.Empty()),
    }[op]()
    return {"method": f"{SERVICE}/{name}", "message": MessageToDict(message, preserving_proto_field_name=True)}
