"""The contract files read by their own ecosystems' validators, and messages
checked against them.

    rest_response_errors("GET", "/games/730", 200, "application/json", body)  # [] when valid
    ws_message_errors(message)

openapi.yaml is OpenAPI 3.1, whose schemas are JSON Schema 2020-12: responses
are checked with jsonschema against the operation's declared response (status,
media type, body). The WebSocket messages are checked against
ws-protocol.schema.json. Used by the tests (conformance, fuzzing), never by a
service or inside a timed benchmark region.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

CONTRACT_DIR = Path(__file__).resolve().parent
OPENAPI_PATH = CONTRACT_DIR / "openapi.yaml"
WS_SCHEMA_PATH = CONTRACT_DIR / "ws-protocol.schema.json"
PUSH_SCHEMA_PATH = CONTRACT_DIR / "push.schema.json"
GRAPHQL_SDL_PATH = CONTRACT_DIR / "schema.graphql"
_OPENAPI_URI = "urn:protolab:openapi"


@cache
def openapi() -> dict[str, Any]:
    return yaml.safe_load(OPENAPI_PATH.read_text())


@cache
def ws_schema() -> dict[str, Any]:
    return json.loads(WS_SCHEMA_PATH.read_text())


@cache
def _openapi_registry() -> Registry:
    return Registry().with_resource(_OPENAPI_URI, Resource(contents=openapi(), specification=DRAFT202012))


@cache
def _openapi_validator(pointer: str) -> Draft202012Validator:
    """A validator of the schema at a JSON pointer of openapi.yaml ($refs resolve in the document)."""
    return Draft202012Validator({"$ref": f"{_OPENAPI_URI}#{pointer}"}, registry=_openapi_registry())


@cache
def _paths() -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"), template)
            for template in openapi()["paths"]]


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def rest_response_errors(method: str, path: str, status: int, content_type: str | None,
                         body: bytes) -> list[str]:
    """What is wrong with a REST response by openapi.yaml ([] when it conforms)."""
    template = next((t for pattern, t in _paths() if pattern.match(path)), None)
    where = f"{method} {path} -> {status}"
    if template is None:
        return [f"{where}: path not in openapi.yaml"]
    operation = openapi()["paths"][template].get(method.lower())
    if operation is None:
        return []  # not an operation of the contract: a 405 (checked by the tests of Allow)
    responses = operation["responses"]
    key = str(status) if str(status) in responses else f"{str(status)[0]}XX"
    if key not in responses:
        return [f"{where}: status {status} not declared (declared: {sorted(responses)})"]
    pointer = f"/paths/{_escape(template)}/{method.lower()}/responses/{key}"
    response = responses[key]
    if "$ref" in response:
        pointer = response["$ref"].lstrip("#")
        response = openapi()["components"]["responses"][pointer.rsplit("/", 1)[1]]
    content = response.get("content")
    if not content:
        return [f"{where}: declared without a body, got {len(body)} bytes"] if body else []
    media = (content_type or "").split(";")[0].strip()
    if media not in content:
        return [f"{where}: media type {media!r} not declared ({sorted(content)})"]
    try:
        document = json.loads(body)
    except ValueError as exc:
        return [f"{where}: body is not JSON: {exc}"]
    return [f"{where}: {path}: {message}"
            for path, message in _errors(f"{pointer}/content/{_escape(media)}/schema", document)]


# Results of validating a value against a schema, by the schema's pointer and
# the value's canonical JSON: the same game comes back in a create's answer
# and again in every page that lists it (the round trip of all 3,424 games
# would otherwise validate each twice, at milliseconds each).
_VALIDATED: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}


def _schema_at(pointer: str) -> tuple[str, dict[str, Any]]:
    """The schema at a JSON pointer of openapi.yaml, a bare $ref followed (so a
    Game is one key wherever it is referred to from)."""
    node: Any = openapi()
    for part in pointer.strip("/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    if isinstance(node, dict) and set(node) == {"$ref"} and node["$ref"].startswith("#/"):
        return _schema_at(node["$ref"][1:])
    return pointer, node


def _errors(pointer: str, document: Any) -> list[tuple[str, str]]:
    """(JSON path, message) of each error of `document` against the schema at `pointer`;
    an array of items is checked item by item."""
    pointer, schema = _schema_at(pointer)
    if isinstance(document, list) and set(schema) == {"type", "items"} and schema["type"] == "array":
        return [(f"$[{index}]{path[1:]}", message) for index, item in enumerate(document)
                for path, message in _errors(f"{pointer}/items", item)]
    key = (pointer, json.dumps(document, sort_keys=True))
    if key not in _VALIDATED:
        if len(_VALIDATED) > 50_000:
            _VALIDATED.clear()
        _VALIDATED[key] = tuple((error.json_path, error.message[:200])
                                for error in _openapi_validator(pointer).iter_errors(document))
    return list(_VALIDATED[key])


@cache
def _ws_validator() -> Draft202012Validator:
    # ws-protocol.schema.json refers to push.schema.json (the feeds) and back, by $id.
    push = json.loads(PUSH_SCHEMA_PATH.read_text())
    registry = Registry().with_resources(
        (schema["$id"], Resource(contents=schema, specification=DRAFT202012)) for schema in (ws_schema(), push))
    return Draft202012Validator(ws_schema(), registry=registry)


def ws_message_errors(message: str | bytes | dict[str, Any]) -> list[str]:
    """What is wrong with a WebSocket message by ws-protocol.schema.json ([] when it conforms)."""
    document = json.loads(message) if isinstance(message, str | bytes) else message
    return [f"{error.json_path}: {error.message[:200]}" for error in _ws_validator().iter_errors(document)]


def check_openapi_document() -> None:
    """openapi-spec-validator on openapi.yaml (raises on an invalid document)."""
    from openapi_spec_validator import validate

    validate(openapi())


def check_ws_schema() -> None:
    """The WebSocket JSON Schema is itself a valid 2020-12 schema (raises if not)."""
    Draft202012Validator.check_schema(ws_schema())


def graphql_schema() -> Any:
    """contract/schema.graphql built by graphql-core (raises on an invalid SDL)."""
    from graphql import assert_valid_schema, build_schema

    schema = build_schema(GRAPHQL_SDL_PATH.read_text())
    assert_valid_schema(schema)
    return schema
