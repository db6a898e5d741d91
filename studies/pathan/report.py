"""Pathan beside the lab (python -m studies push --scenario pathan): push
latency at 10-1,000 clients over WebSocket, SSE and HTTP polling with CPU,
its Tables 3 and 5 beside the lab's mean ± sd, p50, p99 and CPU.

Reads only results/load/push-latest.json (its "studies" member holds the
figures the run was compared with; else published.json)."""

from __future__ import annotations

from typing import Any

from lab.page import Bullets, Heading, Page, Para, Table
from studies.common import read_json
from studies.pathan import STUDY
from studies.pathan.scenario import figures

KEY = {"ws": "ws", "sse-h1": "sse", "poll": "rest"}  # the lab's transport -> the study's protocol
NAME = {"ws": "WebSocket", "sse": "SSE", "rest": "REST polling"}


def opt1(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def rss(r: dict[str, Any]) -> str:
    """The service's resident memory, MB: its total, and each process's where it has several."""
    if r.get("server_rss_bytes") is None:
        return "–"
    total = f"{r['server_rss_bytes'] / 2**20:,.1f}"
    procs = r.get("server_processes") or []
    each = " + ".join(f"{p['rss_bytes'] / 2**20:,.1f}" for p in procs)
    return total + (f" ({each})" if len(procs) > 1 else "")


def section(page: Page, inputs: Any) -> list[str]:
    data = read_json(inputs.results_dir / "load" / "push-latest.json", "push") or {"rows": []}
    rows = [r for r in data["rows"] if r["scenario"] == STUDY.name]
    page.add(Heading(2, "Pathan: push latency at 10–1,000 clients", "push-pathan"))
    if not rows:
        page.add(Para("Not measured: `python -m studies push --scenario pathan`."))
        return []
    study = data.get("studies", {}).get(STUDY.name) or figures()
    lat, cpu = study.get("latency_ms", {}), study.get("cpu_percent", {})
    mem = study.get("memory_mb") or figures()["memory_mb"]
    table = []
    for r in sorted(rows, key=lambda r: (r["clients"], KEY.get(r["transport"], ""), r["implementation"])):
        key = KEY.get(r["transport"], "")
        theirs = lat.get(key, {}).get(str(r["clients"]))
        their_cpu = cpu.get(key, {}).get(str(r["clients"]))
        their_mem = mem.get(key, {}).get(str(r["clients"]))
        ms = r["latency_ms"]
        table.append([f"{r['clients']:,}", NAME.get(key, r["transport"]),
                      f"{theirs[0]:.2f} ± {theirs[1]:.2f}" if theirs else "–",
                      f"{their_cpu:.1f}" if their_cpu is not None else "–",
                      r["implementation"], f"{ms['mean']:.2f} ± {ms['sd']:.2f}", f"{ms['p50']:.2f}",
                      f"{ms['p99']:.2f}", f"{r['messages'] / r['seconds']:,.0f}", f"{r['server_cpu_percent']:.1f}",
                      f"{r['client_cpu_percent']:.1f}", opt1(r.get("machine_cpu_percent")),
                      f"{their_mem[0]:,.0f} ± {their_mem[1]:.0f}" if their_mem else "–",
                      rss(r), f"{r['errors']}" + (f" {r['errors_by_kind']}" if r.get("errors") else "")])
    page.add(Table(["clients", "protocol", "Pathan ms (mean ± sd)", "Pathan CPU %", "lab implementation",
                    "lab ms (mean ± sd)", "lab p50 ms", "lab p99 ms", "lab messages/s", "lab server CPU %",
                    "lab client CPU %", "lab machine CPU %", "Pathan memory MB", "lab server RSS MB (per process)",
                    "errors"], table,
                   "One message per second per client (batch 1) for WebSocket and SSE; polling: each client GETs "
                   "one freshly stamped message after another (Pathan's REST loop). Pathan's columns: its Tables 3, "
                   "5 and 6. The lab's CPU three ways: the server's process tree and the push client, each % of one "
                   "core, and the whole machine's busy share (% of all CPUs, as Pathan's currentLoad; other work on "
                   "a shared machine included); memory: each service process's resident set at the run's end.",
                   "push-pathan-table"),
             Bullets([f"Pathan: {study.get('setup', '')}. Its CPU is the testing machine's load (% of all logical "
                      "cores, the clients included), not the server's; the lab gives the server process tree and "
                      "the client apart, each as % of one core.",
                      "Pathan reports the mean ± sd only; the lab adds p50 and p99 from every message, so a mean "
                      "pulled up by a few spikes (Pathan's SSE at 1,000 clients: 9.75 ± 49.06 ms) shows as such.",
                      "The lab's polling client asks the SSE service for a one-message feed (count=1) over a kept-"
                      "alive HTTP/1.1 connection; Pathan's asked a separate Express server. Both stamp the message "
                      "in the request's handler, so both latencies are the answer's way back, not the round trip."]))
    return []
