"""One descriptor per protocol (clients/<protocol>/__init__.py) covers every implementation,
and the places that used to hold their own tables read it."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

from capture import report as capture_report
from capture.dissect import DISSECTOR
from clients import connect
from clients.protocols import PROTOCOLS, Protocol, get
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
