"""One descriptor per protocol (clients/<protocol>/__init__.py) covers every implementation,
and the places that used to hold their own tables read it."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
from dataclasses import replace
from pathlib import Path

import pytest

from capture import dissect, wire
from capture import report as capture_report
from capture.dissect import DISSECTOR, Layers
from capture.tshark import Packet
from clients import connect
from clients.protocols import PAYLOADS, PROTOCOLS, Protocol, get
from contract.errors import CONNECT_CODE, ERRORS, HTTP_STATUS, ContractError
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


# Every hook of a descriptor ("module:function" it names) and what says it does not apply:
# a field of its own saying why, or None where an empty hook means "nothing of this kind".
HOOKS = {"client": None, "fuzzer": None, "load_client": "no_load", "crosscheck_plan": "no_crosscheck",
         "codegen": "nothing generated from the contract"}


REF = re.compile(r"[a-z_][\w.]*:[A-Za-z_]\w*")  # "module:function"


def _defined(ref: str) -> bool:
    """`ref` ("module:function") names a top-level function or class of an existing module,
    read from its source: a load client's module patches its library for gevent on import,
    which this test process must not."""
    module, _, attr = ref.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    tree = ast.parse(Path(spec.origin).read_text())
    return any(isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == attr for node in tree.body)


def test_the_hook_table_names_every_hook_of_the_descriptor() -> None:
    hooks = {f.name for f in dataclasses.fields(Protocol)
             if any(isinstance(getattr(p, f.name), str) and REF.fullmatch(getattr(p, f.name))
                    for p in PROTOCOLS.values())}
    assert hooks == set(HOOKS), "a new hook: add it to HOOKS, with what says it does not apply"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_descriptor_provides_every_hook_or_says_it_does_not_apply(protocol: str) -> None:
    p = get(protocol)
    for hook, why_not in HOOKS.items():
        ref = getattr(p, hook)
        if ref:
            assert _defined(ref), f"{protocol}: {hook} = {ref!r} names nothing"
        else:
            assert why_not is not None, f"{protocol}: every protocol needs a {hook}"
            assert getattr(p, why_not, why_not), f"{protocol}: no {hook}, and {why_not} does not say why"
    if p.crosscheck:
        assert (p.crosscheck_dir() / "crosscheck.toml").is_file()


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
    "connect": lambda code: CONNECT_CODE[code],
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


# --- push: the ways a protocol carries a feed (Protocol.push, clients/protocols.py PushWay) ---

def test_every_implementation_serving_subscribe_has_its_protocols_default_push_ways() -> None:
    """The push load instrument (load/push.py) measures an implementation over its
    protocol's default ways, nothing of its own; a protocol that lists ways has an
    implementation that serves the feeds, and one that serves them lists ways."""
    from load import push
    serving = [impl for impl in IMPLEMENTATIONS if impl.serves("subscribe")]
    assert serving
    for impl in serving:
        ways = get(impl.protocol).push
        assert any(w.default for w in ways), f"{impl.name} serves subscribe: its protocol needs a default push way"
        assert push.transports(impl.name) == tuple(w.key for w in ways if w.default), impl.name
    assert {p.name for p in PROTOCOLS.values() if p.push} == {impl.protocol for impl in serving}
    for impl in IMPLEMENTATIONS:
        if not get(impl.protocol).push:
            assert push.transports(impl.name) == (), impl.name
    # the keys the results and the studies have always used, and polling only where a study asks for it
    assert {impl.protocol: push.transports(impl.name) for impl in serving} == {
        "sse": ("sse-h1", "sse-h2c"), "ws": ("ws",), "socketio": ("ws",), "grpc": ("grpc",)}
    with pytest.raises(ValueError, match="no implementation"):
        push.transports("sse/nowhere")


def test_a_push_way_key_means_one_thing_wherever_it_appears() -> None:
    """Rows name a way by its key alone ("transport"): protocols that share a key
    (socket.io and WebSocket: "ws") must agree on what the load client runs and the
    labels the rows and tables carry."""
    from clients.protocols import push_way, push_ways
    seen: dict[str, tuple] = {}
    for p in PROTOCOLS.values():
        keys = [w.key for w in p.push]
        assert len(keys) == len(set(keys)), p.name
        for w in p.push:
            what = (w.label, w.short, w.mode, w.h2, w.default, w.capture_label, w.client_options)
            assert seen.setdefault(w.key, what) == what, (p.name, w.key)
    assert set(push_ways()) == set(seen) == {"sse-h1", "sse-h2c", "ws", "poll", "grpc"}
    assert push_way("poll").mode == "poll" and not push_way("poll").default and not push_way("poll").capture_label
    with pytest.raises(ValueError, match="no push way"):
        push_way("carrier-pigeon")


def test_push_rows_keep_their_transports_and_labels() -> None:
    """The labels the push results have always carried (tests/data/push-quick.json,
    tests/data/push-capture.json), now from the descriptors."""
    import json
    from pathlib import Path

    from capture import push as capture_push
    from load import push
    data = Path(__file__).parent / "data"
    rows = json.loads((data / "push-quick.json").read_text())["rows"]
    for row in rows:
        assert push.push_way(row["transport"]).label == row["transport_label"]
    captured = {(r["protocol"], r["transport"]) for r in json.loads((data / "push-capture.json").read_text())["rows"]}
    assert {(p, w.capture_label) for p in PROTOCOLS for w in capture_push._variants(p)} == captured
    assert [w.capture_label for w in capture_push._variants("sse")] == ["HTTP/1.1", "HTTP/2 (h2c)"]
    assert [w.capture_label for w in capture_push._variants("grpc")] == ["gRPC streaming (h2c)"]  # Subscribe


def test_the_push_capture_makes_each_ways_client_through_the_lab_with_its_options(monkeypatch) -> None:
    """capture/push.py's client of a way: the lab's client of the implementation (its protocol's
    client, clients.connect) with the way's options (HTTP/2 prior knowledge for h2c), not a
    client it names itself."""
    from capture import push as capture_push
    from lab.running import Lab
    made = []

    class Recorder:
        def __init__(self, endpoint, **options):
            made.append((endpoint, options))

    monkeypatch.setattr(Protocol, "client_class", lambda self: Recorder)
    serving = [i for i in IMPLEMENTATIONS if i.serves("subscribe")]
    lab = Lab(mode="native", database=None, implementations=serving,  # type: ignore[arg-type]
              endpoints={i.name: f"http://h:{n}" for n, i in enumerate(serving)})
    for n, impl in enumerate(serving):
        made.clear()
        for way in capture_push._variants(impl.protocol):
            lab.client(impl.name, **way.client_options)
        assert made == [(f"http://h:{n}", w.client_options) for w in get(impl.protocol).push if w.capture_label]
    monkeypatch.undo()
    for way in (w for p in PROTOCOLS.values() for w in p.push if w.client_options):  # the real client takes them
        client = connect(next(p for p in PROTOCOLS.values() if way in p.push).name, "http://127.0.0.1:9",
                         **way.client_options)
        client.close()
    assert {k: v for p in PROTOCOLS.values() for w in p.push for k, v in w.client_options.items()} == {"http2": True}


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


# The protocols' names as words (not "rest", an English word, nor "ws", the WebSocket transport's own,
# nor "connect", an English word and the clients' own function; Connect RPC by its other names).
NAMED = re.compile(r"\b(" + "|".join(sorted(set(PROTOCOLS) - {"rest", "ws", "connect"})
                                     + ["connectrpc", "connect-go", "connect rpc"]) + r")\b", re.IGNORECASE)
INSTRUMENTS = ("lab", "benchmarks", "load", "capture", "fuzz", "sweep", "report")  # and the lab's core
NEUTRAL = sorted(str(path.relative_to(settings.ROOT)) for folder in INSTRUMENTS
                 for path in (settings.ROOT / folder).rglob("*") if path.suffix in (".py", ".js")
                 and "node_modules" not in path.parts)


def test_the_name_check_reads_every_instrument_file() -> None:
    assert "capture/wire.py" in NEUTRAL and "load/locustfile.py" in NEUTRAL and len(NEUTRAL) > 60
    assert NAMED.search("over gRPC") and NAMED.search("socketio/node_socketio") and not NAMED.search("REST, ws")
    assert NAMED.search("served by connect-go") and NAMED.search("Connect RPC") and not NAMED.search("connect()")


@pytest.mark.parametrize("path", NEUTRAL)
def test_the_instruments_and_the_labs_core_name_no_protocol(path: str) -> None:
    """Issue 44: a protocol's specifics live in clients/<protocol>/; the instruments and the lab's
    core read descriptors and manifests (the same words as grep -iw finds them)."""
    lines = (settings.ROOT / path).read_text().splitlines()
    named = [f"{path}:{i}: {line.strip()}" for i, line in enumerate(lines, 1) if NAMED.search(line)]
    assert not named, "\n".join(named)
