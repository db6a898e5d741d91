"""Scenarios beyond the default sweep (python -m load --scenario NAME):

kcheck    k6 at concurrency 1 (issue 9): insert, fetch-one and fetch-100 for
          every implementation, the database prepared as benchmarks/ does, the
          same game; medians beside the Python client's (report).
feathers  The Feathers comparison: the same tiny call (health: the smallest
          call every protocol has) over HTTP and over one WebSocket per client,
          100 connections × N calls each, connection setup included; requests/s
          = all calls / (first call's start to last call's end).
fernando  Fernando & Engel's WebSocket library comparison (their Table 2) on
          every WebSocket and socket.io implementation: the echo test (each
          client sends ECHO_PAYLOAD and waits for it back, again and again:
          connection time, round trip, messages/s; load/scripts/ws.js) and the
          broadcast test (one sender, every other client receives: latency =
          receive − send time; load/broadcast.py) at FERNANDO_CLIENTS (--clients
          for others, e.g. the study's 100 200 400 600 800 1000), --runs runs each
          (default 3), interleaved: run r of both tests, every level and every
          implementation before run r + 1. --budget (default 600 s): no run
          starts after it; those left are listed in the result's context.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any

from lab.context import run_context
from lab.host.tools import k6 as k6_binary
from lab.stack import running_lab
from load import broadcast, k6, operations, pinning, runner
from load.state import prepare

KCHECK_OPERATIONS = ("insert", "fetch-one", "fetch-100")
FEATHERS_CONNECTIONS = 100
FEATHERS_CALLS = (1, 10, 50, 500)        # the study also ran 1,000 and 2,000 (--calls)
# The study's servers were Node.js (Express for HTTP, socket.io): the lab's
# Node.js HTTP, socket.io and plain WebSocket implementations (--impl for others).
FEATHERS_DEFAULT = ("rest/node_fastify", "socketio/node_socketio", "ws/node_ws")
FERNANDO_CLIENTS = (100, 1000)   # the study: 100, 200, 400, 600, 800, 1,000 (--clients)
FERNANDO_DEFAULT = ("ws/python_simple_websocket", "ws/go_gorilla", "ws/go_coder", "ws/node_ws",
                    "socketio/node_socketio")


def main(args: argparse.Namespace) -> int:
    k6_binary()
    if args.scenario == "kcheck":
        return kcheck(args)
    if args.scenario == "feathers":
        return feathers(args)
    if args.scenario == "fernando":
        return fernando(args)
    raise SystemExit(f"unknown scenario {args.scenario!r}: sweep, kcheck, feathers, fernando "
                     "(the push scenarios, Timeplus and Pathan: python -m load.push)")


def kcheck(args: argparse.Namespace) -> int:
    from load.__main__ import load_context, write
    pins = pinning.plan(not args.no_pin)
    results: dict[str, dict[str, Any]] = {}
    from load.__main__ import drivable
    with running_lab(drivable(args.impl, KCHECK_OPERATIONS)) as lab:
        for operation in KCHECK_OPERATIONS:
            s = runner.Settings(operation=operation, warmup_s=args.warmup, steady_s=max(args.duration, 3.0),
                                pinning=pins)
            for impl in lab.implementations:
                warmed = warm(lab, impl, operation)
                prepare(lab, operation)
                row = runner.run(lab, impl, s, model="closed", clients=1)
                print(runner.line(row).replace("closed", operation[:7].ljust(7)))
                lat = row["latency_us"]
                results.setdefault(operation, {})[impl.name] = {
                    "median_us": lat["p50"], "p90_us": lat["p90"], "p99_us": lat["p99"],
                    "count": lat["count"], "clock": row["latency_clock"],
                    # 1 client, closed: the mean time per call is 1 / throughput (µs-exact timestamps)
                    "mean_us_from_throughput": round(1e6 / row["throughput_rps"], 1) if row["throughput_rps"] else None,
                    "valid": row["valid"], "invalid_reasons": row["invalid_reasons"],
                    "resources": row["resources"], "warmup_calls": warmed}
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"]["scenario"] = "kcheck"
    path = write("kcheck", {"context": context, "results": results})
    print(f"results: {path}")
    return 0


def warm(lab: Any, impl: Any, operation: str, max_s: float | None = None) -> int | None:
    """The untimed calls the latency suite gives a subject whose manifest asks
    for them (`[bench] warmup_calls`: the Node.js services, 6,000), through the
    lab's Python client, at most `max_s` seconds (default: the suite's
    LAB_BENCH_WARMUP_MAX_S): V8 speeds a service up by what it has executed,
    so k6's warm-up in seconds alone left them less warm than under the Python
    client (grpc-js and Yoga came out slower under k6, 2026-11-25). How many
    were made; None: not asked."""
    if not impl.warmup_calls:
        return None
    from benchmarks.interleave import untimed_calls
    from benchmarks.suite import OPERATION, design_from_env
    prepare(lab, operation)
    client = lab.client(impl.name)
    try:
        limit = design_from_env().warmup_max_s if max_s is None else max_s
        return untimed_calls(OPERATION[operation].call(client), impl.warmup_calls, limit)
    finally:
        client.close()


def feathers(args: argparse.Namespace) -> int:
    from load.__main__ import load_context, write
    pins = pinning.plan(not args.no_pin)
    calls_list = tuple(args.calls) if getattr(args, "calls", None) else FEATHERS_CALLS
    s = runner.Settings(operation="health", pinning=pins)
    results: dict[str, list[dict[str, Any]]] = {}
    from load.__main__ import drivable
    with running_lab(drivable(args.impl or list(FEATHERS_DEFAULT), ("health",))) as lab:
        prepare(lab, "health")
        for impl in lab.implementations:
            for calls in calls_list:
                runner.settle(lab, impl)
                row = once(lab, impl, calls, pins)
                print(f"{impl.name:<34} {FEATHERS_CONNECTIONS} connections × {calls:>5} calls: "
                      f"{row['requests_per_s']:8.0f} requests/s  ({row['seconds']:.2f} s, errors {row['errors']})")
                results.setdefault(impl.name, []).append(row)
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"].update(scenario="feathers", connections=FEATHERS_CONNECTIONS, calls=list(calls_list),
                               operation="health")
    path = write("feathers", {"context": context, "results": results})
    print(f"results: {path}")
    return 0


def once(lab: Any, impl: Any, calls: int, pins: pinning.Pinning) -> dict[str, Any]:
    """100 clients, each: open its connection, make `calls` calls one after another, close."""
    target = runner.endpoint(lab, impl, runner.Settings())
    plan = {"target": target, "request": operations.request(impl.protocol, target, "health"),
            "executor": {"executor": "per-vu-iterations", "vus": FEATHERS_CONNECTIONS, "iterations": 1,
                         "maxDuration": "600s"},
            "calls": calls, "timeout": "30s"}
    if impl.protocol in ("rest", "graphql"):
        plan["request"].setdefault("headers", {})
    if pins.enabled:
        for pid in (lab.pids[impl.name], lab.database.pid):
            if pid:
                runner.pin_tree(pid, pins.services)
    run = k6.K6Run(impl.protocol, plan, cpus=set(pins.generator) if pins.enabled else None).start()
    t0 = time.monotonic()
    try:
        run.wait(timeout=660)
    finally:
        run.stop()
    first, _ = k6.run_start(run.check_output(), impl.protocol)
    samples = k6.read_samples(run.csv, impl.protocol, (0, 2 ** 62))
    run.cleanup()
    # From the first call's start (its connection set up just before it; for
    # WebSocket the handshake is in lab_connect) to the last reply.
    connect = samples.connect.get_max_value() if samples.connect.get_total_count() else 0
    span = ((samples.last_us or 0) - (first or 0)) / 1e6 + connect / 1e6
    return {"calls_per_connection": calls, "connections": FEATHERS_CONNECTIONS, "ops": samples.ops_total,
            "seconds": round(span, 3), "requests_per_s": round(samples.ops_total / span, 1) if span > 0 else 0,
            "errors": dict(samples.errors), "wall_s": round(time.monotonic() - t0, 2),
            "latency_us": k6.latency_summary(samples.histogram),
            "connect_us": k6.latency_summary(samples.connect) if samples.connect.get_total_count() else None,
            "k6_bytes_per_call": {"sent": round(samples.bytes_sent / samples.ops_total, 1),
                                  "received": round(samples.bytes_received / samples.ops_total, 1)}
            if samples.ops_total else None,
            "generator_cpu_s": run.cpu_s, "valid": samples.dropped_iterations == 0 and samples.ops_total > 0}


def fernando(args: argparse.Namespace) -> int:
    from load.__main__ import SWEEP_CLIENTS, drivable, load_context, write
    began = time.monotonic()
    load_before = os.getloadavg()  # the machine may be shared: said beside the figures
    pins = pinning.plan(not args.no_pin)
    chosen = args.clients != list(SWEEP_CLIENTS)  # the sweep's default: not asked for
    levels = tuple(args.clients) if chosen else FERNANDO_CLIENTS
    runs = max(1, args.runs)
    # 1,000 clients took up to 8 s to connect here (socket.io, a loaded machine): 10 s allowed
    s = runner.Settings(operation="echo", warmup_s=args.warmup, steady_s=args.duration, pinning=pins,
                        ws_connect_s_per_client=1 / 100)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {"echo": {}, "broadcast": {}}
    names = drivable(args.impl or list(FERNANDO_DEFAULT), ("echo",))
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
                            row = broadcast.run(lab, impl, clients, pins)
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
            echo={"payload_bytes": len(operations.dumps(operations.ECHO_PAYLOAD)), "warmup_s": s.warmup_s,
                  "window_s": s.steady_s, "model": "closed: each client sends, waits for its echo, sends again",
                  "clock": k6.CLOCK["ws"]},
            broadcast={"broadcasts_per_run": broadcast.BROADCASTS, "interval_ms": broadcast.INTERVAL_MS,
                       "senders": 1, "receivers": "the client count", "payload_pad": broadcast.PAD,
                       "clock": "Date.now() in one k6 process at both ends (1 ms)"})
    path = write(args.out or "fernando", {"context": context, "results": results})
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
                                   for r in row["invalid_reasons"]) or attempt == 2:
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
