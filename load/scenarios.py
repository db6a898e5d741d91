"""Scenarios beyond the default sweep (python -m load --scenario NAME):

kcheck    k6 at concurrency 1 (issue 9): insert, fetch-one and fetch-100 for
          every implementation, the database prepared as benchmarks/ does, the
          same game; medians beside the Python client's (report).
feathers  The Feathers comparison: the same tiny call (health: the smallest
          call every protocol has) over HTTP and over one WebSocket per client,
          100 connections × N calls each, connection setup included; requests/s
          = all calls / (first call's start to last call's end).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from lab.context import run_context
from lab.stack import running_lab
from lab.tools import k6 as k6_binary
from load import k6, operations, pinning, runner
from load.state import prepare

KCHECK_OPERATIONS = ("insert", "fetch-one", "fetch-100")
FEATHERS_CONNECTIONS = 100
FEATHERS_CALLS = (1, 10, 50, 500)        # the study also ran 1,000 and 2,000 (--calls)
# The study's servers were Node.js (Express for HTTP, socket.io): the lab's
# Node.js HTTP, socket.io and plain WebSocket implementations (--impl for others).
FEATHERS_DEFAULT = ("rest/node_fastify", "socketio/node_socketio", "ws/node_ws")


def main(args: argparse.Namespace) -> int:
    k6_binary()
    if args.scenario == "kcheck":
        return kcheck(args)
    if args.scenario == "feathers":
        return feathers(args)
    raise SystemExit(f"unknown scenario {args.scenario!r}: sweep, kcheck, feathers "
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
                    "resources": row["resources"]}
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"]["scenario"] = "kcheck"
    path = write("kcheck", {"context": context, "results": results})
    print(f"results: {path}")
    return 0


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
