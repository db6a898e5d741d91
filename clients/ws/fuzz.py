"""WebSocket: requests drawn from contract/ws-protocol.schema.json (a small
JSON Schema to Hypothesis translation of what that schema uses), requests
with wrong members and values, and frames that are no JSON at all. Every
reply must validate against the schema, echo the request id, and carry a
contract code when it is an error."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally, hostile_text
from clients.ws.client import Connection
from contract.errors import INTERNAL
from contract.validate import ws_message_errors, ws_schema

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text(10), inner, max_size=4),
    max_leaves=10)


def from_schema(schema: dict[str, Any], root: dict[str, Any], seeded: Sequence[str]) -> st.SearchStrategy[Any]:
    """Values valid by `schema` (the subset of JSON Schema the contract uses)."""
    if schema is True or schema == {}:
        return JSON_VALUES
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].split("#", 1)[1].strip("/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return from_schema(target, root, seeded) if target is not None else JSON_VALUES
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([from_schema(s, root, seeded) for s in schema[key]])
    kinds = schema.get("type", "object")
    if isinstance(kinds, list):
        return st.one_of([from_schema({**schema, "type": k}, root, seeded) for k in kinds])
    if kinds == "string":
        if schema.get("pattern") and schema["pattern"] == root["$defs"]["Id"]["pattern"]:
            return st.one_of(st.sampled_from(seeded), st.from_regex(schema["pattern"], fullmatch=True))
        return st.from_regex(schema["pattern"], fullmatch=True) if "pattern" in schema else hostile_text()
    if kinds == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kinds == "boolean":
        return st.booleans()
    if kinds == "null":
        return st.none()
    if kinds == "array":
        return st.lists(from_schema(schema.get("items", {}), root, seeded), max_size=4)
    properties = {name: from_schema(s, root, seeded) for name, s in schema.get("properties", {}).items()}
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries({k: v for k, v in properties.items() if k in required},
                                 optional={k: v for k, v in properties.items() if k not in required})


def valid_requests(seeded: Sequence[str]) -> st.SearchStrategy[dict[str, Any]]:
    """One strategy per op: its params from the schema's if/then for that op."""
    root = ws_schema()
    request = root["$defs"]["Request"]
    # The CRUD operations: push ops (subscribe, echo, ...) are stateful and outside this model.
    crud = {"create", "get", "list", "update", "delete", "health"}
    params_of: dict[str, dict[str, Any] | None] = {op: None for op in request["properties"]["op"]["enum"]
                                                   if op in crud}
    for rule in request["allOf"]:
        condition = rule["if"]["properties"]["op"]
        for op in condition.get("enum", [condition.get("const")]):
            if op in params_of:
                params_of[op] = rule["then"]["properties"]["params"]
    per_op = []
    for op, params in params_of.items():
        members = {"request_id": from_schema(request["properties"]["request_id"], root, seeded), "op": st.just(op)}
        optional = {}
        if params is not None and "params" in rule_required(request, op):
            members["params"] = from_schema({"type": "object", **params}, root, seeded)
        elif params is not None:
            optional["params"] = from_schema({"type": "object", **params}, root, seeded)
        per_op.append(st.fixed_dictionaries(members, optional=optional))
    return st.one_of(per_op)


def rule_required(request: dict[str, Any], op: str) -> set[str]:
    for rule in request["allOf"]:
        condition = rule["if"]["properties"]["op"]
        if op in condition.get("enum", [condition.get("const")]):
            return set(rule["then"].get("required", ()))
    return set()


def invalid_requests(seeded: Sequence[str]) -> st.SearchStrategy[Any]:
    """Requests with members or values the schema refuses, and frames of no JSON."""
    wrong_member = st.tuples(valid_requests(seeded), hostile_text(12), JSON_VALUES).map(lambda t: {**t[0], t[1]: t[2]})
    wrong_params = st.tuples(valid_requests(seeded), st.dictionaries(hostile_text(12), JSON_VALUES, max_size=3)).map(
        lambda t: {**t[0], "params": t[1]})
    return st.one_of(wrong_member, wrong_params, JSON_VALUES, st.binary(max_size=200), st.text(max_size=100))


def judge(case: Any, label: str, valid: bool, request: Any, answer: dict[str, Any], tally: Tally,
          model: Model) -> None:
    """What the WebSocket and socket.io fuzzers check of one answer to `request`:
    the schema, no INTERNAL, a valid request not refused, and the stored data
    changed only as an acknowledged write says."""
    error = answer.get("error") or {}
    tally.saw(f"{label} {error.get('code', 'result')}")
    problems = ws_message_errors(answer)
    if problems:
        tally.fail(case, f"reply outside the schema: {problems[:3]}")
    if error.get("code") == INTERNAL:
        tally.server_errors += 1
        tally.fail(case, f"INTERNAL: {error.get('message')}")
    if valid and error.get("code") not in (None, "NOT_FOUND"):
        tally.fail(case, f"a valid request was refused: {error}")
    is_request = isinstance(request, dict)
    params = request.get("params") if is_request and isinstance(request.get("params"), dict) else {}
    game_id = params.get("id")
    op = request.get("op") if is_request else None
    if "result" in answer and op in ("create", "update", "delete"):
        target = answer["result"]["id"] if op == "create" else game_id
        model.acknowledged(case, op, target, params.get("game") if op != "delete" else None)
    model.check(case, (game_id,) if type(game_id) is str else ())


def fuzzer(endpoint: str, seeded_ids: Sequence[str]):
    ws = Connection(endpoint)
    strategy = st.one_of(st.tuples(st.just(True), valid_requests(seeded_ids)),
                         st.tuples(st.just(False), invalid_requests(seeded_ids)))

    def execute(case: Any, tally: Tally, model: Model) -> None:
        valid, request = case
        if isinstance(request, bytes | str):
            frame: str | bytes = request
        else:
            frame = json.dumps(request)
        if not ws.connected:
            tally.fail(case, f"the server had closed the connection: {ws.close_reason} {ws.close_message!r}")
            return
        ws.send(frame)
        reply = ws.receive(timeout=CALL_TIMEOUT)
        if reply is None:
            tally.fail(case, "no reply")
            return
        answer = json.loads(reply)
        valid_request = valid and isinstance(request, dict)
        if valid_request and answer.get("request_id") != request["request_id"]:
            tally.fail(case, f"reply names request {answer.get('request_id')!r}")
        judge(case, "valid" if valid else "invalid", valid, request, answer, tally, model)

    def close() -> None:
        if ws.connected:  # else the server closed it, and the cases after that failed
            ws.close()

    return strategy, execute, close
