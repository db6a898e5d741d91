"""benchmarks/memory_reducer.py's two conditions and its reading of V8's --trace-gc log, on a
synthetic log with known answers; every Node.js service's manifest runs without the reducer, and a
result file says so (its context names each service's command); a lab runs the changed commands
the experiment gives it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from benchmarks import memory_reducer
from benchmarks.memory_reducer import FLAG, collections, node_command, subjects
from lab import settings
from lab.context import run_context
from lab.registry import CRUD_CALLS, discover, select
from lab.stack import running_lab


def test_the_conditions_differ_only_in_the_reducer_flag_and_the_trace() -> None:
    command = ("node", FLAG, "--stack-size=900", "/srv/server.js")
    assert node_command(command, reducer=False, trace=False) == command
    assert node_command(command, reducer=True, trace=False) == ("node", "--stack-size=900", "/srv/server.js")
    assert node_command(command, reducer=True, trace=True) == \
        ("node", "--stack-size=900", "--trace-gc", "/srv/server.js")
    assert node_command(("node", "/srv/server.js"), reducer=False, trace=True) == \
        ("node", FLAG, "--trace-gc", "/srv/server.js")


def test_the_trace_is_read_for_reducing_collections_and_scavenges_by_half(tmp_path: Path) -> None:
    # born at t=1000 s; measured from 1100 s to 1200 s of the clock: 100-200 s of its life, halves at 150 s
    line = "[7:0x1]  {ms} ms: {kind} 20.0 ({before}) -> 10.0 ({after}) MB, 1.0 / 0.0 ms  allocation failure;"
    log = tmp_path / "service.log"
    log.write_text("\n".join([
        "listening on 127.0.0.1:5000",                                                   # not a GC line
        line.format(ms=50_000, kind="Scavenge", before="30.0", after="31.0"),            # before the cycles
        line.format(ms=120_000, kind="Scavenge", before="30.0", after="31.0"),           # first half
        line.format(ms=140_000, kind="Mark-Compact", before="58.0", after="58.0"),       # not a reducing one
        line.format(ms=160_400, kind="Mark-Compact (reduce)", before="58.0", after="24.0"),
        line.format(ms=170_000, kind="Scavenge", before="24.0", after="24.0"),           # second half
        line.format(ms=199_999, kind="Scavenge", before="24.0", after="24.0"),           # second half
        line.format(ms=250_000, kind="Scavenge", before="24.0", after="24.0"),           # after them
    ]))
    got = collections(log, born=1000.0, measured=(1100.0, 1200.0))
    assert got == {"reducing": [{"s": 160, "mb": [58.0, 24.0]}], "measured_s": [100, 200], "scavenges_by_half": [1, 2]}


def _impl(name: str, language: str, operations: tuple[str, ...] = CRUD_CALLS,
          served_by: str = "") -> SimpleNamespace:
    return SimpleNamespace(name=name, language=language, protocol=name.split("/")[0],
                           served_by=served_by or name,
                           serves=lambda *ops: set(ops) <= set(operations))


def test_the_subjects_are_the_node_request_answering_services_and_a_python_control_per_protocol() -> None:
    fake = [_impl("a/python_x", "python"), _impl("a/python_y", "python"), _impl("a/go_z", "go"),
            _impl("a/node_n", "node"), _impl("b/go_q", "go"), _impl("b/node_m", "node"),
            _impl("c/python_p", "python"), _impl("c/node_push", "node", ("health", "subscribe")),
            _impl("d/python_h", "python", ("health", "subscribe")), _impl("d/node_k", "node"),
            _impl("d/node_k+json", "node", served_by="d/node_k")]
    # b and d: no Python one that answers requests, so no control; c: its Node.js one only pushes;
    # d/node_k+json: a client-only variant, served by d/node_k's process
    assert subjects(fake) == (["a/node_n", "b/node_m", "d/node_k"], ["a/python_x"])


def test_the_default_subjects_follow_the_manifests() -> None:
    node, control = subjects()
    registry = select()
    assert node == [i.name for i in registry if i.language == "node" and i.serves(*CRUD_CALLS)
                    and i.served_by == i.name]  # connect/node_connect+grpc is node_connect's process
    # the experiment's first run (docs/notes/latency-design-experiments.md): these five, Flask and graphene
    # controls; connect/node_connect (2026-12-03) answers the same calls and joins them
    assert set(node) == {"ws/node_ws", "grpc/node_grpcjs", "graphql/node_yoga", "rest/node_fastify",
                         "socketio/node_socketio", "connect/node_connect"}
    assert {"rest/python_flask", "graphql/python_graphene"} <= set(control)
    by_name = {i.name: i for i in registry}
    protocols = [by_name[c].protocol for c in control]
    assert all(by_name[c].language == "python" for c in control) and len(set(protocols)) == len(protocols)
    assert set(protocols) == {by_name[n].protocol for n in node} & {i.protocol for i in registry
                                                                    if i.language == "python"}


def test_impl_names_the_subjects_and_the_node_ones_change_with_the_condition(monkeypatch) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(settings, "measuring", lambda: None)
    monkeypatch.setattr(settings, "mode", lambda: "native")
    monkeypatch.setattr(memory_reducer, "one", lambda *args: calls.append(args) or {})
    monkeypatch.setattr(memory_reducer, "save", lambda kind, out: None)
    assert memory_reducer.main(["--executions", "1", "--impl", "rest/python_flask", "ws/node_ws"]) == 0
    assert calls == [("insert", True, False, ["ws/node_ws"], ["rest/python_flask"])]
    assert memory_reducer.main(["--executions", "1"]) == 0
    assert calls[1][3:] == subjects()
    with pytest.raises(SystemExit):
        memory_reducer.main(["--impl", "rest/no_such_server"])


def test_every_node_service_runs_without_the_memory_reducer() -> None:
    node = [impl for impl in discover() if impl.command[0] == "node"]
    assert {impl.name for impl in node} >= set(subjects()[0])
    assert all(impl.command[1:2] == (FLAG,) for impl in node), [impl.command for impl in node]


class _Database:
    def describe(self) -> dict[str, str]:
        return {"server": "SecantusDB secantusd-rs", "version": "0.5.3-beta.193"}


def test_a_result_says_how_each_service_was_started() -> None:
    chosen = [impl for impl in discover() if impl.name in ("ws/node_ws", "rest/go_nethttp")]
    described = run_context("native", _Database(), chosen)["implementations"]
    started = {name: about["command"] for name, about in described.items()}
    assert started["ws/node_ws"] == ["node", FLAG, "{dir}/server.js"]
    assert started["rest/go_nethttp"] == list(next(i for i in chosen if i.name == "rest/go_nethttp").command)


def test_a_lab_runs_the_commands_it_is_given() -> None:
    # the experiment's "with" condition: ws/node_ws started without the flag its manifest carries
    ws = next(impl for impl in discover() if impl.name == "ws/node_ws")
    changed = replace(ws, command=node_command(ws.command, reducer=True, trace=False))
    with running_lab(implementations=[changed], mode="native") as lab:
        started = psutil.Process(lab.pids["ws/node_ws"]).cmdline()
        lab.client("ws/node_ws").health()  # it serves
    assert FLAG in ws.command and FLAG not in started and started[0].endswith("node"), started


def test_given_implementations_replace_names_in_native_mode_only() -> None:
    ws = [impl for impl in discover() if impl.name == "ws/node_ws"]
    with pytest.raises(ValueError, match="native mode only"), running_lab(["ws/node_ws"], implementations=ws):
        pass
    with pytest.raises(ValueError, match="native mode only"), running_lab(mode="docker", implementations=ws):
        pass
