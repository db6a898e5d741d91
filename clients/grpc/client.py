"""gRPC: one grpcio channel and stub; the push feeds as Subscribe's server
stream (contract/push.md, "Over gRPC"):

    with client.subscribe("synthetic", batch=50, count=10) as stream:
        for event in stream:          # Event(id="1", event="synthetic", data=[[<ns>, ...], ...])
            ...
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from clients.base import CALL_TIMEOUT, Event, Game
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

    def subscribe(self, feed: str, last_event_id: str | None = None, **params: Any) -> PushStream:
        """Open a subscription and wait (up to the client's timeout) for the server to
        confirm it (its headers); raises the contract's error when the server refuses it.
        A parameter the request has no field for, or a value its field cannot hold, goes
        on the wire as it is (an unknown field number, a field of another wire type):
        what the server then answers is the test."""
        request = subscribe_request(feed, last_event_id, params)
        method = self.channel.unary_stream(f"/{SERVICE}/Subscribe", request_serializer=None,
                                           response_deserializer=pb.PushMessage.FromString)
        stream = PushStream(method(request), feed)
        try:
            stream.wait_subscribed(self.timeout)
        except BaseException:
            stream.close()
            raise
        return stream

    def close(self) -> None:
        self.channel.close()


class PushStream:
    """One open subscription: iterate for its messages as Events (the same as the SSE and
    WebSocket clients give); a bounded feed ends with Event("end", {"sent": N}) from the
    stream's trailer, an error after the start with Event("error", {"code", "message"})."""

    def __init__(self, call: Any, feed: str):
        self.call = call
        self.feed = feed

    def wait_subscribed(self, timeout: float) -> None:
        """The headers ("subscribed: <feed>"), or the status of a refused call."""
        got: list[Any] = []
        waiter = threading.Thread(target=lambda: got.append(self.call.initial_metadata()), daemon=True)
        waiter.start()
        waiter.join(timeout)
        if not got:
            raise error_for("UNAVAILABLE", f"no answer to the subscription in {timeout} s",
                            native=grpc.StatusCode.DEADLINE_EXCEEDED)
        if dict(got[0]).get("subscribed") != self.feed:
            self.call.exception(timeout=timeout)  # a refused call's answer has no headers: its status
            raise _error(self.call)

    def __iter__(self) -> Iterator[Event]:
        try:
            for message in self.call:
                yield _event(message, self.feed)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:  # type: ignore[attr-defined]
                yield Event(event="error", data={"code": exc.code().name,  # type: ignore[attr-defined]
                                                 "message": exc.details() or ""})  # type: ignore[attr-defined]
            return
        sent = dict(self.call.trailing_metadata() or ()).get("sent")
        if sent is not None:
            yield Event(event="end", data={"sent": int(sent)})

    def close(self) -> None:
        self.call.cancel()

    def __enter__(self) -> PushStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _event(message: pb.PushMessage, feed: str) -> Event:
    """A pushed message as the other push clients give it: synthetic events as push.md's
    12-field rows, a change as {type, id, game}."""
    if message.HasField("change"):
        change = message.change
        game = message_to_document(change.game) if change.HasField("game") else None
        data: Any = {"type": change.type, "id": change.id, "game": game}
    else:
        data = [[e.sent_ns, *(getattr(e, f"field_{i}") for i in range(1, EVENT_FIELDS))] for e in message.events]
    return Event(event=feed, data=data, id=message.id, wire_bytes=message.ByteSize())


EVENT_FIELDS = len(pb.SyntheticEvent.DESCRIPTOR.fields)


def subscribe_request(feed: str, last_event_id: str | None, params: dict[str, Any]) -> bytes:
    """The SubscribeRequest of these parameters, serialized; a parameter it has no field
    for gets a field number past its own, and a value of a type its field cannot hold
    goes in that field's number with the wire type of what it is (a string, a dict as
    its JSON: length-delimited), so that the server sees the mistake."""
    message = pb.SubscribeRequest(feed=feed)
    if last_event_id is not None:
        message.last_event_id = last_event_id
    fields = pb.SubscribeRequest.DESCRIPTOR.fields_by_name
    stray = b""
    unknown = max(f.number for f in fields.values()) + 1
    for name, value in params.items():
        field = fields.get(name)
        if field is not None and name != "feed":
            try:
                setattr(message, name, value)
                continue
            except (TypeError, ValueError):
                number = field.number
        else:
            number, unknown = unknown, unknown + 1
        text = value if isinstance(value, str) else json.dumps(value)
        stray += _length_delimited(number, text.encode())
    return message.SerializeToString() + stray


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _length_delimited(number: int, data: bytes) -> bytes:
    """A field of wire type 2 (LEN), as protobuf encodes it (protobuf's Python API has
    no public encoder of a single field of a number its schema does not know)."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _error(exc: Any) -> ContractError:
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
