"""Scenarios beyond the default sweep (python -m load --scenario NAME), on Locust:

feathers  The Feathers comparison: the same tiny call (health: the smallest
          call every protocol has) over HTTP and over one WebSocket per client,
          100 connections × N calls each, connection setup included; requests/s
          = all calls / (first connection's start to last call's end).
fernando  Fernando & Engel's WebSocket library comparison (their Table 2) on
          every WebSocket and socket.io implementation: the echo test (each
          client sends ECHO_PAYLOAD and waits for it back, again and again:
          connection time, round trip, messages/s) and the broadcast test (one
          sender, every other client receives: latency = receive − send time;
          load/broadcast.py) at FERNANDO_CLIENTS (--clients for others, e.g.
          the study's 100 200 400 600 800 1000), --runs runs each (default 3),
          interleaved: run r of both tests, every level and every
          implementation before run r + 1. --budget (default 600 s): no run
          starts after it; those left are listed in the result's context.

The implementations a study's scenario uses by default come from manifest
fields (`runtime` / `language`), as the study's servers were: Feathers's
were Node.js; Fernando & Engel's every WebSocket library.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any

from clients.protocols import get as protocol
from contract.codec import dumps
from lab import workload
from lab.context import run_context
from lab.host import pinning
from lab.registry import select
from lab.stack import running_lab
from load import broadcast, runner
from load.common import SWEEP_CLIENTS, drivable, load_context, prepare, settings_from, write

FEATHERS_CONNECTIONS = 100
FEATHERS_CALLS = (1, 10, 50, 500)        # the study also ran 1,000 and 2,000 (--calls)
FERNANDO_CLIENTS = (100, 1000)   # the study: 100, 200, 400, 600, 800, 1,000 (--clients)


def feathers_default() -> list[str]:
    """The study's servers were Node.js (Express for HTTP, socket.io): the lab's
    Node.js implementations of REST and of every messaging protocol."""
    return [i.name for i in select() if i.language == "node"
            and (i.protocol == "rest" or protocol(i.protocol).messaging)]


def fernando_default() -> list[str]:
    """Every implementation that serves echo and broadcast (the study's WebSocket libraries)."""
    return [i.name for i in select() if i.serves("echo", "broadcast")]


def main(args: argparse.Namespace) -> int:
    if args.scenario == "feathers":
        return feathers(args)
    if args.scenario == "fernando":
        return fernando(args)
    raise SystemExit(f"unknown scenario {args.scenario!r}: sweep, feathers, fernando "
                     "(the cross-check: python -m load.crosscheck; the push scenarios: python -m load.push)")


def feathers(args: argparse.Namespace) -> int:
    pins = pinning.plan(not args.no_pin)
    calls_list = tuple(args.calls) if getattr(args, "calls", None) else FEATHERS_CALLS
    s = settings_from(args, pins, operation="health")
    results: dict[str, list[dict[str, Any]]] = {}
    with running_lab(drivable(args.impl or feathers_default(), ("health",))) as lab:
        prepare(lab, "health")
        for impl in lab.implementations:
            for calls in calls_list:
                runner.settle(lab, impl)
                row = once(lab, impl, calls, s)
                print(f"{impl.name:<34} {FEATHERS_CONNECTIONS} connections × {calls:>5} calls: "
                      f"{row['requests_per_s']:8.0f} requests/s  ({row['seconds']:.2f} s, errors {row['errors']})")
                results.setdefault(impl.name, []).append(row)
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"].update(scenario="feathers", connections=FEATHERS_CONNECTIONS, calls=list(calls_list),
                               operation="health")
    path = write(args.out or "feathers", {"context": context, "results": results}, kind="feathers")
    print(f"results: {path}")
    return 0


def once(lab: Any, impl: Any, calls: int, s: runner.Settings) -> dict[str, Any]:
    """100 clients, each: open its connection, make `calls` calls one after another, close."""
    row = runner.run(lab, impl, s, model="closed", clients=FEATHERS_CONNECTIONS, calls=calls)
    span = row["call_span_s"] or 0.0
    ops = row["ops_total"]
    generator = sum(v["cpu_s"] for k, v in row["resources"].items() if k.startswith("generator"))
    return {"calls_per_connection": calls, "connections": FEATHERS_CONNECTIONS, "ops": ops,
            "seconds": round(span, 3), "requests_per_s": round(ops / span, 1) if span > 0 else 0,
            "errors": row["errors_total"], "latency_us": row["latency_us"], "connect_us": row["connect_us"],
            "bytes_per_call": row["bytes_per_op"],
            "generator_cpu_s": round(generator, 3), "generator_cpu_percent": row["generator_cpu_percent"],
            "valid": ops == calls * FEATHERS_CONNECTIONS and not row["errors_total"]
            and not any("generator used" in r for r in row["invalid_reasons"]),
            "invalid_reasons": row["invalid_reasons"]}


def fernando(args: argparse.Namespace) -> int:
    began = time.monotonic()
    load_before = os.getloadavg()  # the machine may be shared: said beside the figures
    pins = pinning.plan(not args.no_pin)
    chosen = args.clients != list(SWEEP_CLIENTS)  # the sweep's default: not asked for
    levels = tuple(args.clients) if chosen else FERNANDO_CLIENTS
    runs = max(1, args.runs)
    # 1,000 clients took up to 8 s to connect here (socket.io, a loaded machine): 10 s allowed
    s = settings_from(args, pins, operation="echo", ws_connect_s_per_client=1 / 100)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {"echo": {}, "broadcast": {}}
    names = drivable(args.impl or fernando_default(), ("echo",))
    with running_lab(names) as lab:
        impls = [i for i in lab.implementations if i.serves("broadcast")]
        allowance: dict[str, float] = {}  # s per client to connect them all, learnt per implementation
        not_run: list[str] = []
        for r in range(1, runs + 1):
            for test in ("echo", "broadcast"):
                for clients in levels:
                    for impl in impls:
                        if args.budget and time.monotonic() - began > args.budget:
                            not_run.append(f"{test} {impl.name} {clients} clients run {r}")
                            continue
                        if test == "echo":
                            row = _echo_run(lab, impl, s, clients, allowance)
                        else:
                            row = broadcast.run(lab, impl, clients, s)
                        row.update(implementation=impl.name, clients=clients, run=r)
                        print(_fernando_line(test, row), flush=True)
                        results[test].setdefault(impl.name, []).append(row)
        if not_run:
            print(f"fernando: the {args.budget:.0f} s budget was spent: {len(not_run)} runs not started "
                  f"(--budget 0 for all of them)", flush=True)
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"].update(
            scenario="fernando", clients=list(levels), runs=runs, seconds=round(time.monotonic() - began, 1),
            budget_s=args.budget, not_run=not_run,
            loadavg_start=[round(x, 2) for x in load_before], loadavg_end=[round(x, 2) for x in os.getloadavg()],
            echo={"payload_bytes": len(dumps(workload.ECHO_PAYLOAD).encode()), "warmup_s": s.warmup_s,
                  "window_s": s.steady_s, "model": "closed: each client sends, waits for its echo, sends again",
                  "clock": "time.perf_counter_ns() in each Locust user (1 ns)"},
            broadcast={"broadcasts_per_run": broadcast.BROADCASTS, "interval_ms": broadcast.INTERVAL_MS,
                       "senders": 1, "receivers": "the client count less the sender",
                       "clock": "time.time_ns() at both ends (one machine's clock)"})
    path = write(args.out or "fernando", {"context": context, "results": results}, kind="fernando")
    print(f"fernando: {time.monotonic() - began:.0f} s; results: {path}")
    return 0


def _echo_run(lab: Any, impl: Any, s: runner.Settings, clients: int, allowance: dict[str, float]
              ) -> dict[str, Any]:
    """One echo run; the time allowed for connecting grows to 1.5 × the slowest
    handshake seen so far for this implementation (per client), and a run whose
    clients were not all connected before its end is run once more with it."""
    for attempt in (1, 2):
        per_client = allowance.get(impl.name, s.ws_connect_s_per_client)
        raw = runner.run(lab, impl, dataclasses.replace(s, ws_connect_s_per_client=per_client),
                         model="closed", clients=clients)
        slowest = (raw.get("connect_us") or {}).get("max") or 0
        allowance[impl.name] = max(per_client, 1.5 * slowest / 1e6 / clients)
        row = _echo(raw)
        row["connect_allowance_s"] = round(per_client * clients, 1)
        if row["valid"] or not any("not a steady state" in r or "no request answered" in r
                                   or "never opened" in r for r in row["invalid_reasons"]) or attempt == 2:
            return row
        print(f"echo      {impl.name}: clients still connecting at the end "
              f"({slowest / 1e6:.1f} s for the slowest); once more with more time", flush=True)
    raise AssertionError("unreachable")


def _echo(row: dict[str, Any]) -> dict[str, Any]:
    """The echo test's figures from a closed-model run (ms, messages/s)."""
    def in_ms(summary: dict[str, Any] | None) -> dict[str, Any]:
        summary = summary or {}
        return {k: (round(summary[k] / 1000, 3) if summary.get(k) is not None else None)
                for k in ("mean", "p50", "stddev", "p99", "max")} | {"count": summary.get("count", 0)}
    service = row["resources"].get(row["implementation"], {})
    return {"connect_ms": in_ms(row.get("connect_us")), "rtt_ms": in_ms(row["latency_us"]),
            "messages_per_s": row["throughput_rps"], "errors": row["errors"], "valid": row["valid"],
            "invalid_reasons": row["invalid_reasons"], "window_s": row["window_s"],
            "service_cpu_percent": service.get("cpu_percent"),
            "generator_cpu_percent": row["generator_cpu_percent"], "histogram": row["histogram"]}


def _fernando_line(test: str, row: dict[str, Any]) -> str:
    head = f"{test:<9} {row['implementation']:<28} {row['clients']:>5} clients run {row['run']}: "
    if test == "echo":
        body = (f"connect {row['connect_ms']['mean']} ms, RTT mean {row['rtt_ms']['mean']} ms, "
                f"{row['messages_per_s'] or 0:,.0f} msg/s, errors {sum(row['errors'].values())}")
    else:
        body = (f"latency mean {row['latency_ms']['mean']} ms (n {row['latency_ms']['count']}), "
                f"broadcasts {row['broadcasts']}, lost {row['lost']}, errors {sum(row['errors'].values())}")
    return head + body + ("" if row["valid"] else "  INVALID: " + "; ".join(row["invalid_reasons"]))

