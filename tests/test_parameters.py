"""The tests' implementation parameters (lab.pytest_plugin.fixtures.implementations): a test is
generated only for the implementations it applies to, and a skip is left only
where this machine lacks something, saying what and how to get it. No lab."""

from __future__ import annotations

import shutil

from lab import registry
from lab.pytest_plugin.fixtures import IMPLEMENTATIONS, implementations
from lab.registry import CRUD_CALLS, TOOLCHAIN_HINTS, discover


def _names(params: list) -> list:
    return [p.values[0] for p in params]


def _skips(params: list) -> list[str]:
    return [m.kwargs["reason"] for p in params for m in p.marks if m.name == "skip"]


def test_the_crud_parameters_are_the_crud_implementations_only():
    here = [i for i in discover() if not i.missing()]
    assert _skips(IMPLEMENTATIONS) == []
    assert _names(IMPLEMENTATIONS) == [i.name for i in here if i.serves(*CRUD_CALLS)]
    assert [i.name for i in here if not i.serves(*CRUD_CALLS)], "a push-only implementation to leave out"


def test_an_operation_and_a_filter_narrow_the_parameters():
    ws = implementations("subscribe", where=lambda impl: impl.protocol == "ws")
    assert _names(ws) and all(name.startswith("ws/") for name in _names(ws))
    served = {i.name for i in discover() if i.serves("subscribe")}
    assert set(_names(ws)) <= served
    # ws/python_simple_websocket+gthread serves CRUD only: no feed test is generated for it
    assert "ws/python_simple_websocket+gthread" not in _names(ws)
    assert "ws/python_simple_websocket+gthread" in _names(implementations(where=lambda i: i.protocol == "ws"))


def test_none_in_the_repository_gives_no_parameter():
    """pytest then reports the empty parameter set: the test names nothing that exists."""
    assert implementations("subscribe", where=lambda impl: impl.protocol == "rest") == []


def test_a_toolchain_missing_here_leaves_one_skip_that_says_what_and_how(monkeypatch):
    which = shutil.which
    monkeypatch.setattr(registry.shutil, "which", lambda tool, *a, **k: None if tool in ("node", "npm")
                        else which(tool, *a, **k))
    socketio = implementations("subscribe", where=lambda impl: impl.protocol == "socketio")
    assert _names(socketio) == [None]
    (reason,) = _skips(socketio)
    assert "socketio/node_socketio left out: needs node" in reason
    assert TOOLCHAIN_HINTS["node"] in reason
    # where one implementation of several is left, the others are generated, without a skip
    rest = implementations(where=lambda impl: impl.protocol == "rest")
    assert "rest/node_fastify" not in _names(rest) and "rest/python_flask" in _names(rest)
    assert _skips(rest) == []



def test_the_run_names_the_implementations_left_out_at_its_top(monkeypatch):
    from lab.pytest_plugin.fixtures import pytest_report_header

    assert pytest_report_header(None) == [registry.missing_line(i) for i in discover() if i.missing()]
    monkeypatch.setattr(registry.shutil, "which", lambda tool, *a, **k: None)
    header = pytest_report_header(None)
    assert any(line.startswith("protolab: socketio/node_socketio left out: needs node") for line in header)
    assert not any("python_flask" in line for line in header)  # it needs nothing beyond Python
