"""One descriptor per protocol (clients/<protocol>/__init__.py) covers every implementation,
and the places that used to hold their own tables read it."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from capture import dissect, wire
from capture import report as capture_report
from capture.dissect import DISSECTOR, Layers
from capture.tshark import Packet
from clients import connect
from clients.protocols import PAYLOADS, PROTOCOLS, get
from contract.errors import ERRORS, HTTP_STATUS, ContractError
from lab import settings
from lab.context import CLIENT_PACKAGES
from lab.registry import discover
from studies import published
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
    with pytest.raises(ValueError, match="clients/<protocol>/"):
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


def test_a_manifest_may_ask_for_its_own_warm_up_and_a_bad_count_is_refused(tmp_path, monkeypatch) -> None:
    """[bench] warmup_calls: the Node.js services ask for 6,000 (V8's speed-up),
    the others take the suite's default; a count that is not a whole number stops the run."""
    from lab import registry
    from lab.registry import _load
    monkeypatch.setattr(registry, "SERVICES", tmp_path)
    counts = {impl.name: impl.warmup_calls for impl in IMPLEMENTATIONS if impl.serves("create", "get", "list")}
    assert {n for n, c in counts.items() if c is not None} == {n for n in counts if "/node_" in n}
    assert all(c == 6000 for n, c in counts.items() if "/node_" in n)
    source = (settings.ROOT / "services/rest/go_nethttp/manifest.toml").read_text()
    folder = tmp_path / "rest" / "x"
    folder.mkdir(parents=True)
    for text, expect in (("\n[bench]\nwarmup_calls = 12\n", 12), ("", None)):
        (folder / "manifest.toml").write_text(source + text)
        assert _load(folder / "manifest.toml").warmup_calls == expect
    for bad in ("-1", "2.5", '"many"', "true"):
        (folder / "manifest.toml").write_text(source + f"\n[bench]\nwarmup_calls = {bad}\n")
        with pytest.raises(SystemExit, match="warmup_calls must be a whole number"):
            _load(folder / "manifest.toml")


def test_capture_counts_each_payload_by_the_transport_or_by_the_field_its_descriptor_names() -> None:
    for p in PROTOCOLS.values():
        if p.message_field:
            assert p.message_field in dissect.MESSAGE_FIELDS and p.message_field in dissect._FIELDS, p.name
        else:
            assert PAYLOADS[p.payload] == p.transport, p.name
    assert get("grpc").message_field == "grpc.message_length" and get("rest").message_field == ""
    # the transport's framing on another transport, or a name that is no tshark field: refused
    with pytest.raises(AssertionError, match="websocket_data on http"):
        replace(get("rest"), payload="websocket_data")
    with pytest.raises(AssertionError, match="no tshark field"):
        replace(get("grpc"), payload="grpc_messages")


def test_a_new_protocols_message_field_is_summed_without_a_change_to_capture(monkeypatch) -> None:
    framed = replace(get("grpc"), name="framed", payload="framed.msg_len")
    monkeypatch.setitem(wire.PROTOCOLS, "framed", framed)
    port = 9000

    def packet(number: int, dst: int) -> Packet:
        return Packet(number, 0.0, 100, 0, 5555 if dst == port else port, dst, 34, 20, 20, False, True, False, False)
    packets = [packet(1, port), packet(2, 5555), packet(3, port)]
    layers = {1: Layers(messages={"framed.msg_len": [10, 20], "other.len": [999]}),
              2: Layers(messages={"framed.msg_len": [7]}, http_body=500),
              3: Layers(http_body=40)}  # no message of its own: nothing counted
    assert wire.app_payload(packets, layers, port, "framed") == (30, 7)
    assert wire.app_payload(packets, layers, port, "rest") == (40, 500)


# The protocols' names as words (not "rest", an English word, nor "ws", the WebSocket transport's own).
NAMED = re.compile(r"\b(" + "|".join(sorted(set(PROTOCOLS) - {"rest", "ws"})) + r")\b", re.IGNORECASE)
NEUTRAL = ["capture/wire.py", "capture/dissect.py", "capture/report.py", "benchmarks/cpus.py",
           "benchmarks/memory_reducer.py", "benchmarks/executions.py"]


@pytest.mark.parametrize("path", NEUTRAL)
def test_the_capture_and_the_experiments_name_no_protocol(path: str) -> None:
    """Issue 44: a protocol's specifics live in clients/<protocol>/; these files read descriptors and manifests."""
    lines = (settings.ROOT / path).read_text().splitlines()
    named = [f"{path}:{i}: {line.strip()}" for i, line in enumerate(lines, 1) if NAMED.search(line)]
    assert not named, "\n".join(named)
