"""One descriptor per protocol (clients/protocols.py) covers every implementation,
and the places that used to hold their own tables read it."""

from __future__ import annotations

import pytest

from capture import report as capture_report
from capture.dissect import DISSECTOR
from clients import connect
from clients.protocols import PROTOCOLS, get
from contract.errors import ERRORS, HTTP_STATUS, ContractError
from lab import settings
from lab.context import CLIENT_PACKAGES
from lab.registry import discover
from report import published
from tests.expect import assert_native

IMPLEMENTATIONS = discover()


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda i: i.name)
def test_every_implementation_has_a_descriptor_of_its_scheme(impl) -> None:
    descriptor = get(impl.protocol)
    scheme = impl.endpoint.split("://")[0] if "://" in impl.endpoint else ""
    assert scheme == descriptor.scheme, impl.endpoint
    assert descriptor.client_class().protocol == impl.protocol


def test_the_places_that_had_their_own_tables_read_the_descriptors() -> None:
    assert settings.PROTOCOL_ORDER == tuple(PROTOCOLS)
    for name, p in PROTOCOLS.items():
        assert DISSECTOR[name] == p.dissector
        assert published.name(name) == p.label
        assert set(p.client_packages) <= set(CLIENT_PACKAGES)
    assert "direct" not in PROTOCOLS and published.name("direct") == "direct"
    assert capture_report.label("grpc") == "gRPC"


def test_an_unknown_protocol_says_where_to_add_it() -> None:
    with pytest.raises(ValueError, match="clients/protocols.py"):
        connect("carrier-pigeon", "http://127.0.0.1:1")


# What each client puts in ContractError.native for a contract error code.
NATIVE_OF = {
    "rest": lambda code: HTTP_STATUS[code],
    "grpc": lambda code: __import__("grpc").StatusCode[code],
    "graphql": lambda code: ({"RESOURCE_EXHAUSTED": 413}.get(code, 200), code),
    "ws": lambda code: {"code": code, "message": "m"},
    "socketio": lambda code: {"code": code, "message": "m"},
    "sse": lambda code: HTTP_STATUS[code],
    "soap": lambda code: (ERRORS[code]["soap"]["faultcode"], code),
}


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_native_error_accepts_its_own_spelling_and_no_other(protocol: str) -> None:
    assert set(NATIVE_OF) == set(PROTOCOLS), "add the new protocol's native spelling here"
    spell = NATIVE_OF[protocol]
    for code in ERRORS:
        assert_native(protocol, ContractError("x", code=code, native=spell(code)), code)
        for other in ERRORS:
            if other != code and spell(other) != spell(code):
                assert not get(protocol).native_error(spell(other), code), (protocol, code, other)
