"""Connect RPC with connect-python (connectrpc): the Games service of services/grpc/python_grpcio as a
WSGI application (ConnectWSGIApplication) under gunicorn, as the lab's Python HTTP services run.

WSGI is HTTP/1.1 without trailers, so it serves Connect (unary POST, and GET for the calls without side
effects) and gRPC-Web, each with the protobuf and the JSON codec; gRPC itself needs HTTP/2 and is not
served here (its manifest's [variants] wire lists connect and grpcweb). Errors are the contract's codes
as Connect codes (contract/contract.json, column "connect"). A request that is not a valid message, or
that carries unknown or mistyped fields, is INVALID_ARGUMENT (strict codecs below: google.protobuf
keeps unknown binary fields, and connect-python's JSON codec ignores unknown ones by default); one over
64 KiB is RESOURCE_EXHAUSTED (connect-python's read limit), and so is an answer over the contract's
max_response_bytes (its protobuf size, as grpcio's max_send_message_length counts it)."""

from __future__ import annotations

from typing import Any

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.server import ConnectWSGIApplication, EndpointSync

from contract import games_pb2 as pb
from contract.errors import CONNECT_CODE, ContractError
from contract.game import DEFAULT_LIST_LIMIT, MAX_REQUEST_BYTES, check_response_size
from contract.grpc_codec import game_to_message, message_to_game
from services.common.store import Store
from services.connect.python_connectrpc.codec import StrictProto

SERVICE = "protolab.games.v1.Games"
NO_SIDE_EFFECTS = ("GetGame", "ListGames", "Health")  # Connect's GET allowed


class GamesApplication(ConnectWSGIApplication):
    """The Games service's WSGI application (connect-python's generated code would declare it so)."""

    @property
    def path(self) -> str:
        return f"/{SERVICE}"


def _fail(exc: ContractError) -> ConnectError:
    return ConnectError(Code(CONNECT_CODE.get(exc.code, "internal")), exc.message)


def _game(document: dict[str, Any]) -> pb.Game:
    return game_to_message(document, document["id"])


def application(store: Store) -> GamesApplication:
    def create(m: pb.Game, ctx: Any) -> pb.Game:
        if m.id:
            raise ConnectError(Code.INVALID_ARGUMENT, "id must be empty in CreateGame: the server assigns it")
        return _game(store.create(message_to_game(m)))

    def get(m: pb.GameId, ctx: Any) -> pb.Game:
        return _game(store.get(m.id))

    def list_games(m: pb.ListGamesRequest, ctx: Any) -> pb.GameList:
        answer = pb.GameList(games=[_game(d) for d in store.list(m.limit or DEFAULT_LIST_LIMIT, m.offset)])
        check_response_size(answer.ByteSize())   # the contract's max_response_bytes: RESOURCE_EXHAUSTED
        return answer

    def update(m: pb.Game, ctx: Any) -> pb.Game:
        return _game(store.update(m.id, message_to_game(m)))

    def delete(m: pb.GameId, ctx: Any) -> pb.Empty:
        store.delete(m.id)
        return pb.Empty()

    def health(m: pb.Empty, ctx: Any) -> pb.Empty:
        store.health()
        return pb.Empty()

    def contract_errors(function: Any) -> Any:
        def call(request: Any, ctx: Any) -> Any:
            try:
                return function(request, ctx)
            except ContractError as exc:
                raise _fail(exc) from None
        return call

    functions = {"CreateGame": create, "GetGame": get, "ListGames": list_games, "UpdateGame": update,
                 "DeleteGame": delete, "Health": health}
    endpoints = {}
    for method in pb.DESCRIPTOR.services_by_name["Games"].methods:
        if method.name not in functions:   # Subscribe, the push feed's server stream: not served over Connect
            continue
        info = MethodInfo(name=method.name, service_name=SERVICE, input=getattr(pb, method.input_type.name),
                          output=getattr(pb, method.output_type.name), stream_type=StreamType.UNARY,
                          idempotency_level=IdempotencyLevel.NO_SIDE_EFFECTS if method.name in NO_SIDE_EFFECTS
                          else IdempotencyLevel.UNKNOWN)
        endpoints[f"/{SERVICE}/{method.name}"] = EndpointSync.unary(method=info,
                                                                   function=contract_errors(functions[method.name]))
    return GamesApplication(endpoints=endpoints, read_max_bytes=MAX_REQUEST_BYTES,
                            codecs=[StrictProto(), google_protobuf_json_codec(ignore_unknown_fields=False)])


app = application(Store())
