"""The contract files read by their own ecosystems' validators, and messages
checked against them.

    rest_response_errors("GET", "/games/730", 200, "application/json", body)  # [] when valid
    ws_message_errors(message)
    sse_event_errors("synthetic", data, "17")
    soap_message_errors(envelope)

openapi.yaml is OpenAPI 3.1, whose schemas are JSON Schema 2020-12: responses
are checked with jsonschema against the operation's declared response (status,
media type, body). The WebSocket messages are checked against
ws-protocol.schema.json (its push messages' payloads by push.schema.json), SSE
events by push.schema.json, and SOAP envelopes by the XML Schema in
games.wsdl's <types>, built by lxml (libxml2's XML Schema validator). Used
by the tests (conformance, fuzzing), never by a service or inside a timed benchmark region.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from lxml import etree
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from contract.errors import ERRORS

CONTRACT_DIR = Path(__file__).resolve().parent
OPENAPI_PATH = CONTRACT_DIR / "openapi.yaml"
WS_SCHEMA_PATH = CONTRACT_DIR / "ws-protocol.schema.json"
PUSH_SCHEMA_PATH = CONTRACT_DIR / "push.schema.json"
GRAPHQL_SDL_PATH = CONTRACT_DIR / "schema.graphql"
WSDL_PATH = CONTRACT_DIR / "games.wsdl"
SOAP_ENV = "http://schemas.xmlsoap.org/soap/envelope/"
_WSDL_NS = "http://schemas.xmlsoap.org/wsdl/"
_XSD_NS = "http://www.w3.org/2001/XMLSchema"
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
def push_schema() -> dict[str, Any]:
    return json.loads(PUSH_SCHEMA_PATH.read_text())


# Each JSON Schema of the contract has an absolute $id (urn:protolab:<name>) and
# refers to the other by it, so any validator resolves them from a plain
# registry of the files keyed by their $ids (docs/results.md shows one).
SCHEMA_PATHS = (WS_SCHEMA_PATH, PUSH_SCHEMA_PATH)


@cache
def _push_registry() -> Registry:
    # ws-protocol.schema.json refers to push.schema.json (the feeds) and back, by $id.
    return Registry().with_resources(
        (schema["$id"], Resource(contents=schema, specification=DRAFT202012))
        for schema in (ws_schema(), push_schema()))


@cache
def _ws_validator() -> Draft202012Validator:
    return Draft202012Validator(ws_schema(), registry=_push_registry())


@cache
def _push_validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"{push_schema()['$id']}#/$defs/{definition}"}, registry=_push_registry())


# An SSE event's name -> the push.schema.json definition of its data (push.md).
SSE_EVENT_DATA = {"synthetic": "SyntheticMessage", "changes": "ChangeMessage", "end": "EndMessage",
                  "error": "ErrorMessage"}


def sse_event_errors(event: str, data: Any, event_id: str | None) -> list[str]:
    """What is wrong with an SSE event by push.md and push.schema.json ([] when it
    conforms): its name is a feed's, end or error; its data (the parsed data
    lines) that name's payload; a feed's message carries an id (EventId)."""
    definition = SSE_EVENT_DATA.get(event)
    if definition is None:
        return [f"event {event!r}: not one of {sorted(SSE_EVENT_DATA)}"]
    problems = [f"{event} data{error.json_path[1:]}: {error.message[:200]}"
                for error in _push_validator(definition).iter_errors(data)]
    if event in push_schema()["$defs"]["Feed"]["enum"]:
        problems += [f"{event} id: {error.message[:200]}" for error in _push_validator("EventId").iter_errors(event_id)]
    return problems


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


@cache
def wsdl_schema() -> etree.XMLSchema:
    """The XML Schema of games.wsdl's <types>, compiled by lxml (raises
    XMLSchemaParseError on an invalid schema)."""
    definitions = etree.parse(str(WSDL_PATH)).getroot()
    types = definitions.find(f"{{{_WSDL_NS}}}types/{{{_XSD_NS}}}schema")
    # A schema document of its own, declaring the prefixes its QName values use (tns:, xs:)
    schema = etree.Element(types.tag, attrib=dict(types.attrib), nsmap={**definitions.nsmap, **types.nsmap})
    schema.extend(copy.deepcopy(child) for child in types)
    return etree.XMLSchema(schema)


def soap_message_errors(envelope: bytes) -> list[str]:
    """What is wrong with a SOAP 1.1 envelope by games.wsdl ([] when it conforms):
    an Envelope whose Body holds one element, validated by the WSDL's XML
    Schema; or a Fault with faultcode Client or Server (SOAP 1.1 dotted subcodes
    allowed), a faultstring and the contract's code in <detail><code>."""
    try:  # as a SOAP receiver reads it: entities declared are not fetched, nothing from the network
        root = etree.fromstring(envelope, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as exc:
        return [f"not XML: {exc}"]
    if root.tag != f"{{{SOAP_ENV}}}Envelope":
        return [f"root element {root.tag!r}, not a SOAP 1.1 Envelope"]
    body = root.find(f"{{{SOAP_ENV}}}Body")
    parts = [] if body is None else [child for child in body if isinstance(child.tag, str)]
    if len(parts) != 1:
        return [f"the Body holds {len(parts)} elements, not one"]
    part = parts[0]
    if part.tag == f"{{{SOAP_ENV}}}Fault":
        faultcode = (part.findtext("faultcode") or "").split(":")[-1].split(".")[0]
        problems = [] if faultcode in ("Client", "Server") else [f"faultcode {faultcode!r}"]
        if part.find("faultstring") is None:
            problems.append("a Fault without faultstring")
        code = part.findtext("detail/code")
        if code is not None and code not in ERRORS:  # spyne's own faults (schema validation) carry none
            problems.append(f"detail code {code!r} not the contract's")
        return problems
    schema = wsdl_schema()
    try:
        if schema.validate(part):
            return []
    except etree.XMLSchemaValidateError as exc:  # libxml2 gives up, e.g. on an entity reference in a value
        return [f"{etree.QName(part).localname}: not validated: {exc}"]
    return [f"{etree.QName(part).localname}: {error.message[:200]}" for error in schema.error_log]
