"""benchmarks/cpus.py's subjects: `direct` and, by the manifests' protocol and language fields,
one implementation per pair that answers the CRUD operations; --impl names others."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks import cpus
from benchmarks.cpus import default_subjects
from lab import settings
from lab.registry import CRUD_CALLS, select


def _impl(name: str, language: str, operations: tuple[str, ...] = CRUD_CALLS) -> SimpleNamespace:
    return SimpleNamespace(name=name, language=language, protocol=name.split("/")[0],
                           serves=lambda *ops: set(ops) <= set(operations))


def test_the_subjects_are_direct_and_the_first_of_each_protocol_and_language() -> None:
    fake = [_impl("a/python_1", "python"), _impl("a/python_2", "python"), _impl("a/go_1", "go"),
            _impl("b/node_push", "node", ("health", "subscribe")), _impl("b/node_1", "node"),
            _impl("c/go_push", "go", ("health", "subscribe"))]
    assert default_subjects(fake) == ["direct", "a/python_1", "a/go_1", "b/node_1"]


def test_the_default_subjects_follow_the_manifests() -> None:
    got = default_subjects()
    registry = [i for i in select() if i.serves(*CRUD_CALLS)]
    pairs = {(i.protocol, i.language) for i in registry}
    by_name = {i.name: i for i in registry}
    assert got[0] == "direct" and len(got) == 1 + len(pairs)
    assert {(by_name[n].protocol, by_name[n].language) for n in got[1:]} == pairs
    # each the first of its pair in registry order
    assert all(by_name[n] == next(i for i in registry if (i.protocol, i.language) ==
                                  (by_name[n].protocol, by_name[n].language)) for n in got[1:])
    # the experiment's first run (docs/notes/latency-design-experiments.md, 2026-11-25) measured these seven
    assert {"rest/python_flask", "rest/go_nethttp", "grpc/python_grpcio", "grpc/node_grpcjs", "graphql/node_yoga",
            "ws/go_coder", "socketio/node_socketio"} <= set(got)


class _Started(Exception):
    pass


def test_impl_is_checked_against_the_registry(monkeypatch) -> None:
    monkeypatch.setattr(settings, "measuring", lambda: None)

    def running_lab(**_):
        raise _Started
    monkeypatch.setattr(cpus, "running_lab", running_lab)
    with pytest.raises(SystemExit, match="unknown implementation"):
        cpus.main(["--impl", "rest/no_such_server"])
    with pytest.raises(_Started):
        cpus.main(["--impl", "rest/go_nethttp"])
    assert cpus.chosen(["ws/go_coder", "rest/go_nethttp"]) == ["direct", "rest/go_nethttp", "ws/go_coder"]
    assert cpus.chosen(None) == default_subjects()
