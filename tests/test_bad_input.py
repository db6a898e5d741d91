"""Bad input gets the contract's error in the protocol's own terms; the server
keeps serving and no stored data changes. Nothing from a request reaches
MongoDB as a query operator."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from expect import expect
from lxml import etree

from clients.protocols import PROTOCOLS
from clients.soap.client import SOAP_ENV
from contract.errors import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    RESOURCE_EXHAUSTED,
)
from contract.game import MAX_REQUEST_BYTES, MAX_URI_BYTES
from contract.grpc_codec import game_to_message
from contract.validate import rest_response_errors
from lab import dataset
from lab.pytest_plugin.fixtures import implementations
from lab.registry import CRUD_CALLS, discover

PROTOCOL = {impl.name: impl.protocol for impl in discover()}
JSON_PROTOCOLS = ("rest", "graphql", "ws", "socketio")
# Those whose requests are messages on one connection (JSON objects with an op).
MESSAGING = tuple(name for name, descriptor in PROTOCOLS.items() if descriptor.messaging)

UNKNOWN_ID = "999999999999"
MALFORMED_IDS = ["not-an-id", "1234567890123", '{"$ne": null}', '{"$where": "sleep(100)"}',
                 "ABCDEF0123456789ABCDEF01", "570 ", ""]


def _game(**changes: Any) -> dict[str, Any]:
    game = dataset.games(1)[0]
    game.update(changes)
    return game


def _without(field: str) -> dict[str, Any]:
    game = dataset.games(1)[0]
    del game[field]
    return game


BAD_GAMES = {
    "wrong type: bool as string": _game(has_paid_dlc="yes"),
    "wrong type: string as number": _game(name=5),
    "wrong type: list as string": _game(tags="Action"),
    "wrong type: null where not nullable": _game(description=None),
    "wrong type: nested object incomplete": _game(language_details=[{"name": "English"}]),
    "unknown field": _game(extra=1),
    "operator as key": _game(**{"$where": "sleep(100)"}),
    "operator as value": _game(name={"$ne": None}),
    "operator inside a list": _game(developer=[{"$gt": ""}]),
    "missing field": _without("name"),
    "client-chosen id": _game(id="570"),
}


def only(*protocols: str, reason: str):
    """The test applies to these protocols only (`reason`: why not to the others):
    it is generated for their implementations alone."""
    return pytest.mark.protocols(*protocols, reason=reason)


def all_but(*protocols: str, reason: str):
    """The test applies to every protocol but these (`reason`: why not to them)."""
    return only(*(p for p in PROTOCOLS if p not in protocols), reason=reason)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`served` over every CRUD implementation of the protocols the test applies to."""
    if "served" not in metafunc.fixturenames:
        return
    applies = metafunc.definition.get_closest_marker("protocols")
    metafunc.parametrize("served", implementations(
        *CRUD_CALLS, where=lambda impl: applies is None or impl.protocol in applies.args), indirect=True)


@pytest.fixture
def served(request):
    """A client of one implementation over seeded data; afterwards checks that
    the server still serves and that nothing stored changed."""
    impl = request.param
    client = request.getfixturevalue("client_of")(impl)
    seeded = request.getfixturevalue("seeded")
    fingerprint = request.getfixturevalue("fingerprint")
    before = fingerprint()
    yield impl, PROTOCOL[impl], client
    client.health()
    known = dataset.documents(seeded[:1])[0]["_id"]
    assert client.get(known)["id"] == known
    assert fingerprint() == before, "a rejected request changed stored data"


def test_unknown_id_is_not_found(served, seeded):
    impl, protocol, client = served
    expect(protocol, NOT_FOUND, client.get, UNKNOWN_ID)
    expect(protocol, NOT_FOUND, client.update, UNKNOWN_ID, seeded[0])
    expect(protocol, NOT_FOUND, client.delete, UNKNOWN_ID)


def _malformed_id_is_invalid(served, seeded, bad_id):
    impl, protocol, client = served
    expect(protocol, INVALID_ARGUMENT, client.get, bad_id)
    expect(protocol, INVALID_ARGUMENT, client.update, bad_id, seeded[0])
    expect(protocol, INVALID_ARGUMENT, client.delete, bad_id)


@pytest.mark.parametrize("bad_id", [i for i in MALFORMED_IDS if i])
def test_malformed_id_is_invalid(served, seeded, bad_id):
    _malformed_id_is_invalid(served, seeded, bad_id)


@all_but("rest", reason="REST: an empty id is the collection URL, not a malformed id")
def test_empty_id_is_invalid(served, seeded):
    _malformed_id_is_invalid(served, seeded, "")


@only("graphql", "ws", "socketio",
      reason="REST, gRPC and SOAP: an id is a string by construction (URL path, protobuf string, XML text)")
def test_operator_object_as_id_is_invalid(served):
    impl, protocol, client = served
    for operator in ({"$ne": None}, {"$where": "sleep(100)"}, {"$gt": ""}):
        expect(protocol, INVALID_ARGUMENT, client.get, operator)
        expect(protocol, INVALID_ARGUMENT, client.delete, operator)


@pytest.mark.parametrize("case", BAD_GAMES)
@only(*JSON_PROTOCOLS, reason="the others' typed clients cannot encode it; see test_grpc_raw_bytes, test_soap_raw_xml")
def test_bad_game_is_invalid(served, seeded, case):
    impl, protocol, client = served
    game = BAD_GAMES[case]
    known = dataset.documents(seeded[:1])[0]["_id"]
    if protocol == "graphql" and case == "wrong type: list as string":
        # GraphQL's input coercion turns a single value into a one-item list
        # (spec, "Input Coercion" of List): valid there, and stored as a list.
        created = client.create(game)
        assert created["tags"] == ["Action"]
        client.delete(created["id"])
        return
    expect(protocol, INVALID_ARGUMENT, client.create, game)
    expect(protocol, INVALID_ARGUMENT, client.update, known, game)


@pytest.mark.parametrize("body", [b'{"name": ', b"\xff\xfe", b"[1, 2]", b"null", b"{}"])
@only(*JSON_PROTOCOLS, reason="the others: see test_grpc_raw_bytes, test_soap_raw_xml")
def test_malformed_body_is_invalid(served, seeded, body):
    impl, protocol, client = served
    known = dataset.documents(seeded[:1])[0]["_id"]
    expect(protocol, INVALID_ARGUMENT, client.send_raw, "create", body)
    expect(protocol, INVALID_ARGUMENT, client.send_raw, "update", body, known)


@pytest.mark.parametrize("frame", [b'{"request_id": 1, "op": ["get"], "params": {"id": "730"}}',
                                   b'{"request_id": 1, "op": {"get": 1}}', b'{"request_id": 1, "op": 5}',
                                   b'{"request_id": 1, "op": null}',
                                   b'{"request_id": 1, "op": "get", "params": ["730"]}'])
@only(*MESSAGING, reason="the others' requests are not JSON objects with an op")
def test_a_message_whose_op_or_params_has_the_wrong_type_is_invalid(served, frame):
    """Found by make fuzz: an op that is a list or an object (unhashable) was INTERNAL."""
    impl, protocol, client = served
    expect(protocol, INVALID_ARGUMENT, client.send_raw, "get", frame)


def test_oversize_request_is_refused(served, seeded):
    impl, protocol, client = served
    huge = _game(description="x" * (MAX_REQUEST_BYTES + 1000))
    expect(protocol, RESOURCE_EXHAUSTED, client.create, huge)


@pytest.mark.parametrize("limit,offset", [(5000, 0), (10, -1)])
def test_bad_page_is_invalid(served, limit, offset):
    impl, protocol, client = served
    expect(protocol, INVALID_ARGUMENT, client.list, limit, offset)


@all_but("grpc", "connect", reason="gRPC, Connect: limit 0 is proto3's unset value, meaning the default")
def test_page_of_zero_is_invalid(served):
    impl, protocol, client = served
    expect(protocol, INVALID_ARGUMENT, client.list, 0, 0)


@pytest.mark.parametrize("case,suffix", [
    ("unknown field number", b"\xa0\x06\x01"),  # field 100, varint
    ("wrong wire type", b"\x18\x05"),  # field 3 (name, a string) sent as a varint
    ("bad UTF-8 in a string", b"\x1a\x02\xff\xfe"),  # field 3 with invalid UTF-8
    ("truncated message", b"\x1a\x10ab"),
])
@only("grpc", "connect", reason="protobuf encoding (Connect with the JSON codec: bytes that are no JSON)")
def test_grpc_raw_bytes(served, seeded, case, suffix):
    impl, protocol, client = served
    body = game_to_message(seeded[0]).SerializeToString() + suffix
    known = dataset.documents(seeded[:1])[0]["_id"]
    expect(protocol, INVALID_ARGUMENT, client.send_raw, "create", body)
    expect(protocol, INVALID_ARGUMENT, client.send_raw, "update",
            game_to_message(seeded[0], known).SerializeToString() + suffix)


SOAP_ENVELOPE = ('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
                 'xmlns:g="urn:protolab:games"><soapenv:Body>{}</soapenv:Body></soapenv:Envelope>')


def _soap_create(game_xml: str) -> bytes:
    return SOAP_ENVELOPE.format(f"<g:create><g:game>{game_xml}</g:game></g:create>").encode()


@pytest.mark.parametrize("case,body", [
    ("not XML", b"<soapenv:Envelope"),
    ("bad UTF-8", b"\xff\xfe<x/>"),
    ("no body", SOAP_ENVELOPE.format("").encode()),
    ("unknown operation", SOAP_ENVELOPE.format("<g:drop/>").encode()),
    ("game missing every field", _soap_create("")),
    ("bool as text", _soap_create("<g:has_paid_dlc>yes</g:has_paid_dlc>")),
    ("operator as element", _soap_create("<g:name><g:ne/></g:name>")),
    ("external entity", b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                        + _soap_create("<g:name>&x;</g:name>")),
])
@only("soap", reason="SOAP envelopes")
def test_soap_raw_xml(served, case, body):
    impl, protocol, client = served
    expect(protocol, INVALID_ARGUMENT, client.send_raw, "create", body)


@only("soap", reason="SOAP envelopes")
def test_soap_action_that_does_not_name_the_operation_is_a_client_fault(served, seeded):
    """SOAPAction must be the called operation's (WS-I BP R2744): a "get" under a
    "delete" action (or the reverse) is refused, and deletes nothing (served checks)."""
    impl, protocol, client = served
    known = dataset.documents(seeded[:1])[0]["_id"]
    for action, call in (("delete", "get"), ("get", "delete"), ("nope", "health")):
        body = SOAP_ENVELOPE.format(f"<g:{call}><g:id>{known}</g:id></g:{call}>" if call != "health"
                                    else "<g:health/>").encode()
        expect(protocol, INVALID_ARGUMENT, client.send_raw, action, body)
    assert b"getResponse" in client.send_raw("get", SOAP_ENVELOPE.format(
        f"<g:get><g:id>{known}</g:id></g:get>").encode())


def test_operator_lookalike_strings_are_stored_literally(served, lab):
    """A string that looks like an operator is data, not a query."""
    impl, protocol, client = served
    game = _game(name='{"$ne": null}', notes="$where: sleep(100)")
    created = client.create(game)
    try:
        assert client.get(created["id"])["name"] == '{"$ne": null}'
    finally:
        client.delete(created["id"])


@pytest.mark.parametrize("protocol_name", ["rest", "graphql"])
def test_oversize_http_request_leaves_the_connection_usable(lab, protocol_name):
    """An oversize body is read before the 413 goes out, so the same kept-alive
    connection serves the next request (closing it instead would fail a
    client's next request on that connection)."""
    body = b"{" + b" " * (MAX_REQUEST_BYTES + 5000) + b"}"
    implementations = [i for i in lab.implementations if i.protocol == protocol_name]
    assert implementations
    for impl in implementations:
        url = urlsplit(lab.endpoints[impl.name])
        path = url.path or "/games"
        with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
            reader = sock.makefile("rb")
            for _ in range(3):
                sock.sendall(f"POST {path} HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                assert _read_response(reader)[0] == 413, impl.name
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: lab\r\n\r\n")
                assert _read_response(reader)[0] == 200, impl.name


def _read_response(reader: Any) -> tuple[int, bytes]:
    status = int(reader.readline().split()[1])
    length = 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, reader.read(length)


REST = implementations(where=lambda impl: impl.protocol == "rest")
# The other HTTP services gunicorn serves (its request-line limit is theirs too).
GUNICORN_HTTP = [impl.name for impl in discover()
                 if impl.language == "python" and impl.protocol in ("graphql", "soap")]


@pytest.mark.parametrize("impl", REST)
def test_rest_repeated_query_parameter_is_invalid(impl, lab, seeded, fingerprint):
    """GET /games?limit=5&limit=6 names two pages: the contract's 400, not a guess."""
    endpoint = lab.endpoints[impl]
    before = fingerprint()
    for query in ("limit=5&limit=6", "offset=0&offset=1", "limit=5&limit=5", "limit=5&offset=1&limit=6"):
        response = requests.get(f"{endpoint}/games?{query}", timeout=10)
        assert response.status_code == 400, (query, response.status_code, response.text[:200])
        assert response.json()["error"]["code"] == INVALID_ARGUMENT, query
        assert rest_response_errors("GET", "/games", 400, response.headers.get("Content-Type"),
                                    response.content) == []
    page = requests.get(f"{endpoint}/games?limit=5&offset=1", timeout=10)
    assert page.status_code == 200 and len(page.json()) == 5
    assert fingerprint() == before


def _uri_probe(impl: str, endpoint: str, length: int) -> requests.Response:
    """A request of `impl`'s protocol whose request target is exactly `length` bytes."""
    url = urlsplit(endpoint)
    if PROTOCOL[impl] == "rest":  # an id that is no id: 400 when within the limit
        target = "/games/"
        target += "9" * (length - len(target))
        return requests.get(f"{url.scheme}://{url.netloc}{target}", timeout=10)
    if PROTOCOL[impl] == "graphql":
        target = f"{url.path}?query=%7Bhealth%7D&pad="
        target += "x" * (length - len(target))
        return requests.get(f"{url.scheme}://{url.netloc}{target}", timeout=10,
                            headers={"Accept": "application/json"})
    target = f"{url.path}?pad="
    target += "x" * (length - len(target))
    envelope = (f'<soap:Envelope xmlns:soap="{SOAP_ENV}" xmlns:g="urn:protolab:games">'
                "<soap:Body><g:health/></soap:Body></soap:Envelope>")
    return requests.post(f"{url.scheme}://{url.netloc}{target}", data=envelope, timeout=10,
                         headers={"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '"health"'})


def _contract_code(impl: str, response: requests.Response) -> str | None:
    """The contract's code an error response carries, in the protocol's own terms (None: none)."""
    if PROTOCOL[impl] == "soap":
        fault = etree.fromstring(response.content).find(f".//{{{SOAP_ENV}}}Fault")
        return None if fault is None else fault.findtext("detail/code")
    body = response.json()
    if PROTOCOL[impl] == "graphql":
        return (body.get("errors") or [{}])[0].get("extensions", {}).get("code")
    return body["error"]["code"] if "error" in body else None


@pytest.mark.parametrize("impl", REST + GUNICORN_HTTP)
def test_a_request_target_over_max_uri_bytes_is_the_contracts_error(impl, lab, seeded, fingerprint):
    """Over max_uri_bytes the service answers in the contract's terms (REST and
    GraphQL: 414 with their JSON error; SOAP: a Client Fault), also well past it
    (where gunicorn's default limit would answer its own HTML page) and past
    gunicorn's maximum (12 KiB); at the
    limit it is not refused for its length. The service keeps serving."""
    endpoint = lab.endpoints[impl]
    before = fingerprint()
    at_limit = _uri_probe(impl, endpoint, MAX_URI_BYTES)
    assert at_limit.status_code != 414 and _contract_code(impl, at_limit) != RESOURCE_EXHAUSTED, at_limit.text[:300]
    # 3 × max_uri_bytes is past gunicorn's own limit on the request line (8,190):
    # gunicorn answers it, in the protocol's terms too (services/common/gunicorn_errors.py).
    # 5 × is past Node's 16 KiB of headers: Node answers 431 (fastify in the
    # contract's terms), the others 414.
    for length in (MAX_URI_BYTES + 1, 2 * MAX_URI_BYTES - 200, 3 * MAX_URI_BYTES, 5 * MAX_URI_BYTES):
        response = _uri_probe(impl, endpoint, length)
        media = response.headers.get("Content-Type", "").split(";")[0]
        assert _contract_code(impl, response) == RESOURCE_EXHAUSTED, (length, response.status_code,
                                                                     response.text[:300])
        if PROTOCOL[impl] == "soap":  # SOAP 1.1 answers every Fault with 500
            assert (response.status_code, media) == (500, "text/xml")
            assert fault_code(response.content) == "Client"
        else:
            assert media.startswith("application/"), length
            assert response.status_code == 414 or (response.status_code == 431 and length > 16384), length
        if PROTOCOL[impl] == "rest":
            assert rest_response_errors("GET", "/games/9", response.status_code, response.headers.get("Content-Type"),
                                        response.content) == []
    assert _uri_probe(impl, endpoint, 100).status_code in (200, 400)  # still serving
    assert fingerprint() == before


def fault_code(body: bytes) -> str:
    return (etree.fromstring(body).findtext(f".//{{{SOAP_ENV}}}Fault/faultcode") or "").split(":")[-1]
