"""The contract files pass their own ecosystems' validators, and agree with
contract/contract.json (fields, types, limits, id pattern, error codes)."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import pytest
from graphql import parse, validate
from jsonschema.exceptions import SchemaError
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from clients.graphql.client import QUERIES
from contract.errors import ERRORS
from contract.game import FIELDS, ID_PATTERN, LIMITS
from contract.validate import (
    check_openapi_document,
    check_ws_schema,
    graphql_schema,
    openapi,
    rest_response_errors,
    ws_message_errors,
    ws_schema,
)
from lab import dataset
from lab.settings import ROOT

SCHEMA_OF_KIND = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "bool or null": {"type": ["boolean", "null"]},
    "list of string": {"type": "array", "items": {"type": "string"}},
}


def test_openapi_passes_openapi_spec_validator():
    check_openapi_document()


def test_openapi_spec_validator_can_fail():
    """The validator is really consulted: a broken document is refused."""
    from openapi_spec_validator import validate as validate_spec

    broken = {**openapi(), "paths": {"/games": {"get": {"responses": {"200": {}}}}}}
    with pytest.raises(OpenAPIValidationError):
        validate_spec(broken)


def test_ws_schema_is_a_valid_json_schema():
    check_ws_schema()
    with pytest.raises(SchemaError):
        from jsonschema import Draft202012Validator
        Draft202012Validator.check_schema({"type": "no-such-type"})


def test_graphql_sdl_builds_and_the_clients_queries_validate():
    schema = graphql_schema()
    for op, query in QUERIES.items():
        assert validate(schema, parse(query)) == [], op
    assert validate(schema, parse("{ game(id: 1) { nosuchfield } }"))  # and it can refuse


def test_proto_compiles_with_protoc():
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT}", f"--descriptor_set_out={out}/set.pb",
             "--fatal_warnings", str(ROOT / "contract" / "games.proto")],
            capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_limits_agree_with_contract_json():
    assert openapi()["info"]["x-protolab-limits"] == LIMITS
    assert ws_schema()["x-protolab-limits"] == LIMITS
    params = {p["name"]: p["schema"] for p in openapi()["paths"]["/games"]["get"]["parameters"]}
    assert params["limit"] == {"type": "integer", "minimum": 1, "maximum": LIMITS["max_list_limit"],
                               "default": LIMITS["default_list_limit"]}
    assert params["offset"] == {"type": "integer", "minimum": 0, "maximum": LIMITS["max_offset"], "default": 0}
    ws_list = next(c["then"]["properties"]["params"]["properties"] for c in ws_schema()["$defs"]["Request"]["allOf"]
                   if c["if"]["properties"]["op"].get("const") == "list")
    assert ws_list["limit"] == params["limit"] and ws_list["offset"] == params["offset"]


def test_id_pattern_fields_and_error_codes_agree_with_contract_json():
    schemas = openapi()["components"]["schemas"]
    assert schemas["Id"]["pattern"] == ID_PATTERN == ws_schema()["$defs"]["Id"]["pattern"]
    for name in ("GameFields", "Game"):
        for doc in (schemas, ws_schema()["$defs"]):
            schema = doc[name]
            expected = list(FIELDS) if name == "GameFields" else ["id", *FIELDS]
            assert schema["required"] == expected and list(schema["properties"]) == expected, name
            assert schema["additionalProperties"] is False
            for field, kind in FIELDS.items():
                if kind in SCHEMA_OF_KIND:
                    assert schema["properties"][field] == SCHEMA_OF_KIND[kind], (name, field)
    codes = schemas["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    assert set(codes) == set(ERRORS)
    assert set(ws_schema()["$defs"]["Reply"]["properties"]["error"]["properties"]["code"]["enum"]) == set(ERRORS)
    operations = [op for path in openapi()["paths"].values() for op in path.values() if isinstance(op, dict)]
    declared = {int(status) for op in operations for status in op["responses"]}
    assert {row["http"] for code, row in ERRORS.items() if code != "INTERNAL"} <= declared


def test_real_games_validate_and_a_wrong_one_does_not():
    game = {"id": "730", **dataset.games(1)[0]}
    body = __import__("json").dumps(game).encode()
    assert rest_response_errors("GET", "/games/730", 200, "application/json", body) == []
    assert ws_message_errors({"request_id": 1, "result": game}) == []
    assert ws_message_errors({"request_id": 1, "result": [game, game]}) == []
    wrong = __import__("json").dumps({**game, "extra": 1}).encode()
    assert rest_response_errors("GET", "/games/730", 200, "application/json", wrong)
    assert rest_response_errors("GET", "/games/730", 418, "application/json", body)
    assert ws_message_errors({"request_id": 1, "result": {**game, "is_dead": "no"}})


def test_push_messages_validate_and_wrong_ones_do_not():
    """SSE events by push.schema.json, as the push tests check every one they receive."""
    from contract.validate import sse_event_errors
    from services.common.feeds import PUSH

    event = [1763890123456789012, *PUSH["synthetic_event"][1:]]
    game = {"id": "730", **dataset.games()[0]}
    assert sse_event_errors("synthetic", [event, event], "17") == []
    assert sse_event_errors("changes", {"type": "updated", "id": "730", "game": game}, "8263abc") == []
    assert sse_event_errors("changes", {"type": "deleted", "id": "730", "game": None}, "8263abd") == []
    assert sse_event_errors("end", {"sent": 20}, None) == []
    assert sse_event_errors("error", {"code": "UNAVAILABLE", "message": "gone"}, None) == []
    assert sse_event_errors("synthetic", [event[:11]], "1")  # an event short of a field
    assert sse_event_errors("synthetic", [[event[0], *event[1:-1], "changed"]], "1")  # a field not the contract's
    assert sse_event_errors("synthetic", [event], None)  # no id
    assert sse_event_errors("changes", {"type": "renamed", "id": "730", "game": None}, "1")
    assert sse_event_errors("changes", {"type": "updated", "id": "730", "game": {**game, "extra": 1}}, "1")
    assert sse_event_errors("end", {"sent": -1}, None)
    assert sse_event_errors("error", {"code": "TEAPOT", "message": ""}, None)
    assert sse_event_errors("message", {}, None)  # no such event
    push = {"event": "synthetic", "id": "1", "data": [event]}
    assert ws_message_errors(push) == []
    assert ws_message_errors({**push, "data": [event[:3]]})
    assert ws_message_errors({"event": "end", "feed": "synthetic", "data": {"sent": "3"}})


ENVELOPE = ('<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" '
            'xmlns:g="urn:protolab:games"><soap:Body>{}</soap:Body></soap:Envelope>')


def test_soap_messages_validate_by_the_wsdls_schema_and_wrong_ones_do_not():
    """games.wsdl's XML Schema, compiled by lxml, as the conformance suite checks
    every SOAP exchange; it can refuse."""
    from contract.validate import soap_message_errors, wsdl_schema

    assert wsdl_schema() is not None
    ok = ENVELOPE.format("<g:list><g:limit>5</g:limit><g:offset>0</g:offset></g:list>").encode()
    assert soap_message_errors(ok) == []
    assert soap_message_errors(ENVELOPE.format("<g:get><g:id>730</g:id></g:get>").encode()) == []
    fault = ("<soap:Fault><faultcode>soap:Client</faultcode><faultstring>no</faultstring>"
             "<detail><code>NOT_FOUND</code></detail></soap:Fault>")
    assert soap_message_errors(ENVELOPE.format(fault).encode()) == []
    assert soap_message_errors(ok.replace(b">5<", b">five<"))  # wrong type
    assert soap_message_errors(ENVELOPE.format("<g:get></g:get>").encode())  # missing element
    assert soap_message_errors(ENVELOPE.format("<g:get><g:id>1</g:id><g:x/></g:get>").encode())  # unknown one
    assert soap_message_errors(ENVELOPE.format("<g:steal/>").encode())  # no such operation
    assert soap_message_errors(ok[:-20])  # malformed XML
    assert soap_message_errors(ENVELOPE.format(fault.replace("NOT_FOUND", "OOPS")).encode())
    assert soap_message_errors(ENVELOPE.format(fault.replace("soap:Client", "soap:Teapot")).encode())


def _schema_refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [*([node["$ref"]] if isinstance(node.get("$ref"), str) else []),
                *(r for v in node.values() for r in _schema_refs(v))]
    if isinstance(node, list):
        return [r for v in node for r in _schema_refs(v)]
    return []


def test_the_json_schemas_have_absolute_ids_and_refer_to_each_other_by_them():
    import json

    from contract.validate import SCHEMA_PATHS

    schemas = {p.name: json.loads(p.read_text()) for p in sorted(SCHEMA_PATHS)}
    assert {s["$id"] for s in schemas.values()} == {"urn:protolab:push", "urn:protolab:ws-protocol"}
    ids = {s["$id"] for s in schemas.values()}
    for name, schema in schemas.items():
        outside = {r.split("#")[0] for r in _schema_refs(schema) if not r.startswith("#")}
        assert outside and outside <= ids - {schema["$id"]}, name  # each refers to the other, by its $id only


def _plain_registry_case() -> tuple[dict, dict, dict, dict]:
    """The two files as a new user reads them, a subscribe request whose feed
    (push.schema.json's Feed, reached from ws-protocol.schema.json) is right, and one where it is not."""
    import json

    from contract.validate import PUSH_SCHEMA_PATH, WS_SCHEMA_PATH

    good = {"request_id": 1, "op": "subscribe", "params": {"feed": "changes"}}
    return (json.loads(WS_SCHEMA_PATH.read_text()), json.loads(PUSH_SCHEMA_PATH.read_text()),
            good, {**good, "params": {"feed": "nonsense"}})


def test_a_plain_referencing_registry_resolves_the_cross_file_refs():
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    ws, push, good, bad = _plain_registry_case()
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in (ws, push))
    validator = Draft202012Validator(ws, registry=registry)
    assert validator.is_valid(good) and not validator.is_valid(bad)


def test_jsonschema_rs_builds_a_validator_for_ws_protocol_from_a_plain_registry():
    """Issue 44: tried as a new user would, jsonschema-rs could not build one ("No base URI is available")."""
    import jsonschema_rs

    ws, push, good, bad = _plain_registry_case()
    registry = jsonschema_rs.Registry([(s["$id"], s) for s in (ws, push)])
    validator = jsonschema_rs.validator_for(ws, registry=registry)
    assert validator.is_valid(good) and not validator.is_valid(bad)
    feed = jsonschema_rs.validator_for({"$ref": "urn:protolab:push#/$defs/Feed"}, registry=registry)
    assert feed.is_valid("changes") and not feed.is_valid("nonsense")
