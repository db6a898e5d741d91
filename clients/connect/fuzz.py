"""Connect RPC: Hypothesis strategies built from the proto's descriptors (every method of the Games
service, messages field by field: clients/grpc/fuzz.py's, the same .proto), sent as Connect unary
calls in both codecs: protobuf bytes (valid, garbage, a valid message with a broken tail) and JSON
(a valid message's protojson, or JSON that is none). Answers must be 200 or the contract's own
codes, read from Connect's error body; internal, unknown or a 5xx without one is a server error."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import requests
from google.protobuf.json_format import MessageToJson
from hypothesis import strategies as st

from clients.base import CALL_TIMEOUT
from clients.connect.client import SERVICE
from clients.fuzzing import Model, Tally, hostile_text
from clients.grpc.fuzz import message
from contract import games_pb2 as pb
from contract.errors import CONNECT_CODE, INTERNAL, NOT_FOUND, RESOURCE_EXHAUSTED
from contract.grpc_codec import message_to_game

DESCRIPTOR = pb.DESCRIPTOR.services_by_name["Games"]
CONTRACT_CODES = {"ok", *(CONNECT_CODE[c] for c in ("INVALID_ARGUMENT", NOT_FOUND, RESOURCE_EXHAUSTED))}
SERVER_ERRORS = {CONNECT_CODE[INTERNAL], "unknown"}
MEDIA = {"proto": "application/proto", "json": "application/json"}


def _bodies(method: Any, seeded: Sequence[str]) -> st.SearchStrategy[tuple[str, bytes]]:
    valid = message(method.input_type, seeded)
    proto = st.one_of(valid.map(lambda m: m.SerializeToString()), st.binary(max_size=300),
                      st.tuples(valid, st.binary(min_size=1, max_size=40)).map(lambda t: t[0].SerializeToString()
                                                                                 + t[1]))
    not_json = st.one_of(hostile_text().map(str.encode), st.binary(max_size=100))
    as_json = st.one_of(valid.map(lambda m: MessageToJson(m).encode()), not_json,
                        st.dictionaries(hostile_text(), st.one_of(st.none(), st.booleans(), st.integers(),
                                                                  hostile_text()), max_size=4)
                        .map(lambda d: json.dumps(d).encode()))
    return st.one_of(st.tuples(st.just("proto"), proto), st.tuples(st.just("json"), as_json))


def _requests(seeded: Sequence[str]) -> st.SearchStrategy[tuple[str, str, bytes]]:
    return st.one_of([st.tuples(st.just(m.name), _bodies(m, seeded)).map(lambda t: (t[0], *t[1]))
                      for m in DESCRIPTOR.methods if not m.server_streaming])   # the unary calls Connect serves


def _parsed(cls: type, codec: str, data: bytes) -> Any:
    from google.protobuf.json_format import Parse

    try:
        return cls.FromString(data) if codec == "proto" else Parse(data, cls())
    except Exception:
        return None


def fuzzer(endpoint: str, seeded_ids: Sequence[str]):
    session = requests.Session()
    base = endpoint.rstrip("/")

    def execute(case: tuple[str, str, bytes], tally: Tally, model: Model) -> None:
        method, codec, data = case
        response = session.post(f"{base}/{SERVICE}/{method}", data=data, timeout=CALL_TIMEOUT,
                                headers={"Content-Type": MEDIA[codec], "Connect-Protocol-Version": "1"})
        if response.status_code == 200:
            code = "ok"
        else:
            try:
                code = str(json.loads(response.content)["code"])
            except (ValueError, KeyError, TypeError):
                code = f"HTTP {response.status_code} without a Connect error"
        tally.saw(f"{method} {codec} {code}")
        if code in SERVER_ERRORS or (code not in CONTRACT_CODES and response.status_code >= 500):
            tally.server_errors += 1
        if code not in CONTRACT_CODES:
            tally.fail(case, f"{method} ({codec}) answered {code}, not a contract code")
        request_game = _parsed(pb.Game, codec, data) if method in ("CreateGame", "UpdateGame") else None
        game_id = request_game.id if request_game is not None else getattr(_parsed(pb.GameId, codec, data), "id", "")
        if code == "ok" and method in ("CreateGame", "UpdateGame", "DeleteGame"):
            sent = message_to_game(request_game) if request_game is not None else None
            if method == "CreateGame":
                reply = _parsed(pb.Game, codec, response.content)
                model.acknowledged(case, "create", reply.id if reply is not None else "", sent)
            elif method == "UpdateGame":
                model.acknowledged(case, "update", game_id, sent)
            else:
                model.acknowledged(case, "delete", game_id)
        model.check(case, (game_id,) if game_id else ())

    return _requests(seeded_ids), execute, session.close
