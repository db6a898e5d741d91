"""gRPC: Hypothesis strategies built from the proto's descriptors (every
method of the Games service, messages field by field), plus bytes that are
no valid message. Answers must be OK or the contract's own status codes.
A server stream (Subscribe) is OK once its headers open it (then cancelled),
or answered with its status."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message_factory import GetMessageClass
from hypothesis import strategies as st

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally, hostile_text, ids
from contract import games_pb2 as pb
from contract.game import ID_PATTERN
from contract.grpc_codec import message_to_game

SERVICE = pb.DESCRIPTOR.services_by_name["Games"]
CONTRACT_CODES = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                  grpc.StatusCode.RESOURCE_EXHAUSTED}
SERVER_ERRORS = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: hostile_text(),
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: st.integers(0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: st.integers(0, 2**64 - 1),
}


def message(descriptor: Descriptor, seeded: Sequence[str]) -> st.SearchStrategy[Any]:
    """Messages of `descriptor`: every field drawn from its declared type, id-like
    fields from the contract's id pattern and the seeded ids as well."""
    cls = GetMessageClass(descriptor)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for f in descriptor.fields:
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            base = message(f.message_type, seeded)
        elif f.name == "id":
            base = ids(ID_PATTERN, seeded)
        else:
            base = _SCALARS[f.type]
        fields[f.name] = st.lists(base, max_size=4) if f.is_repeated else base
    return st.fixed_dictionaries({}, optional=fields).map(lambda values: cls(**values))


def _requests(seeded: Sequence[str]) -> st.SearchStrategy[tuple[str, bytes]]:
    per_method = []
    for method in SERVICE.methods:
        valid = message(method.input_type, seeded).map(lambda m: m.SerializeToString())
        garbage = st.binary(max_size=300)
        # a valid message with bytes after it: unknown fields or a broken tail
        tailed = st.tuples(valid, st.binary(min_size=1, max_size=40)).map(lambda t: t[0] + t[1])
        per_method.append(st.tuples(st.just(method.name), st.one_of(valid, valid, garbage, tailed)))
    return st.one_of(per_method)


def _parsed(cls: type, data: bytes) -> Any:
    try:
        return cls.FromString(data)
    except Exception:
        return None


def fuzzer(endpoint: str, seeded_ids: Sequence[str]):
    channel = grpc.insecure_channel(endpoint)
    calls = {m.name: (channel.unary_stream if m.server_streaming else channel.unary_unary)(
        f"/{SERVICE.full_name}/{m.name}") for m in SERVICE.methods}
    streaming = {m.name for m in SERVICE.methods if m.server_streaming}

    def execute(case: tuple[str, bytes], tally: Tally, model: Model) -> None:
        method, data = case
        reply = None
        if method in streaming:  # its headers (opened) or its status (refused), then cancelled
            call = calls[method](data, timeout=CALL_TIMEOUT)
            call.initial_metadata()
            code = grpc.StatusCode.OK if not call.done() or call.code() in (grpc.StatusCode.OK, None) \
                else call.code()
            call.cancel()
        else:
            try:
                reply = calls[method](data, timeout=CALL_TIMEOUT)
                code = grpc.StatusCode.OK
            except grpc.RpcError as exc:
                code = exc.code()
        tally.saw(f"{method} {code.name}")
        if code in SERVER_ERRORS:
            tally.server_errors += 1
        if code not in CONTRACT_CODES:
            tally.fail(case, f"{method} answered {code.name}, not a contract status")
        request_game = _parsed(pb.Game, data) if method in ("CreateGame", "UpdateGame") else None
        game_id = request_game.id if request_game is not None else "" if method in streaming \
            else getattr(_parsed(pb.GameId, data), "id", "")
        if code == grpc.StatusCode.OK and method in ("CreateGame", "UpdateGame", "DeleteGame"):
            sent = message_to_game(request_game) if request_game is not None else None
            if method == "CreateGame":
                model.acknowledged(case, "create", pb.Game.FromString(reply).id, sent)
            elif method == "UpdateGame":
                model.acknowledged(case, "update", game_id, sent)
            else:
                model.acknowledged(case, "delete", game_id)
        model.check(case, (game_id,) if game_id else ())

    return _requests(seeded_ids), execute, channel.close
