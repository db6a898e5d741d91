"""Fernando & Engel's WebSocket library comparison (their Table 2)
(python -m studies fernando): the echo test (each client sends ECHO_PAYLOAD
and waits for it back, again and again: connection time, round trip,
messages/s) and the broadcast test (one sender, every other client receives:
latency = receive − send time) on the lab's Go load client (--client go, the
default: load/messages.py, one compiled process whose own CPU is shown beside
the limit that makes a run invalid) or on Locust (--client locust: the lab's
Python clients under gevent, load/broadcast.py) at CLIENTS (--clients for
others, e.g. the study's 100 200 400 600 800 1000), --runs runs each (default
3), interleaved: run r of both tests, every level and every implementation
before run r + 1. --budget (default 600 s): no run starts after it; those
left are listed in the result's context.

By default every implementation whose manifest's operations include echo and
broadcast (the study's every WebSocket library).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any

from contract.codec import dumps
from lab import workload
from lab.context import run_context
from lab.host import pinning
from lab.registry import select
from lab.stack import running_lab
from load import broadcast, messages, runner
from load.__main__ import parser as load_parser
from load.common import SWEEP_CLIENTS, drivable, load_context, settings_from, write
from studies.fernando import STUDY

SCENARIO = STUDY.published()["scenario"]
# make reference (report/reference.py): this study's arguments at the full design (no time budget; the
# two counts its headline claims and the text's 100-client figures rest on, 3 runs each: ~20 min, where all
# six counts would take ~1 h) and at the smoke scale (minutes, every code path)
REFERENCE_ARGS = {"full": ["--clients", "100", "1000", "--budget", "0"],
                  "smoke": ["--impl", "ws/go_gorilla", "--clients", "10", "--runs", "1", "--budget", "30",
                            "--duration", "1"]}
CLIENTS: tuple[int, ...] = tuple(SCENARIO["clients"])   # the study: 100, 200, 400, 600, 800, 1,000 (--clients)
SERVED: tuple[str, ...] = tuple(SCENARIO["operations"])  # echo, broadcast


def default() -> list[str]:
    """Every implementation that serves echo and broadcast (the study's WebSocket libraries)."""
    return [i.name for i in select() if i.serves(*SERVED)]


def parser() -> argparse.ArgumentParser:
    p = load_parser()
    p.prog = f"python -m studies {STUDY.name}"
    p.add_argument("--runs", type=int, default=3, help="runs at each client count (default 3)")
    p.add_argument("--budget", type=float, default=600.0,
                   help="start no run after this many seconds (default 600; 0: no limit)")
    p.add_argument("--client", choices=("go", "locust"), default="go",
                   help="the echo clients and broadcast receivers: the lab's Go load client (default) or Locust")
    p.add_argument("--broadcasts", type=int, default=messages.BROADCASTS,
                   help=f"broadcasts per run, {messages.INTERVAL_MS} ms apart (--client go; default "
                        f"{messages.BROADCASTS})")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.scenario = STUDY.name
    return run(args)


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    load_before = os.getloadavg()  # the machine may be shared: said beside the figures
    pins = pinning.plan(not args.no_pin)
    chosen = args.clients != list(SWEEP_CLIENTS)  # the sweep's default: not asked for
    levels = tuple(args.clients) if chosen else CLIENTS
    runs = max(1, args.runs)
    # 1,000 clients took up to 8 s to connect here (socket.io, a loaded machine): 10 s allowed
    s = settings_from(args, pins, operation="echo", ws_connect_s_per_client=1 / 100)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {"echo": {}, "broadcast": {}}
    names = drivable(args.impl or default(), ("echo",))
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
                        if args.client == "go":
                            row = _go_run(lab, impl, test, clients, s, args)
                        elif test == "echo":
                            row = _echo_run(lab, impl, s, clients, allowance)
                        else:
                            row = broadcast.run(lab, impl, clients, s)
                        row.update(implementation=impl.name, clients=clients, run=r)
                        print(_line(test, row), flush=True)
                        results[test].setdefault(impl.name, []).append(row)
        if not_run:
            print(f"{STUDY.name}: the {args.budget:.0f} s budget was spent: {len(not_run)} runs not started "
                  f"(--budget 0 for all of them)", flush=True)
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"].update(
            scenario=STUDY.name, clients=list(levels), runs=runs, seconds=round(time.monotonic() - began, 1),
            budget_s=args.budget, not_run=not_run,
            loadavg_start=[round(x, 2) for x in load_before], loadavg_end=[round(x, 2) for x in os.getloadavg()],
            client=args.client,
            client_how=(f"the lab's Go load client (load/push-client, {messages.__name__}): one process, a goroutine "
                        f"per connection, on the generator's CPUs; invalid at {messages.push.CLIENT_BOUND:.0%} of "
                        "them" if args.client == "go" else "Locust: the lab's Python clients under gevent"),
            echo={"payload_bytes": len(dumps(workload.ECHO_PAYLOAD).encode()), "warmup_s": s.warmup_s,
                  "window_s": s.steady_s, "model": "closed: each client sends, waits for its echo, sends again",
                  "clock": ("Go's monotonic clock in each goroutine" if args.client == "go" else
                            "time.perf_counter_ns() in each Locust user (1 ns)")},
            broadcast={"broadcasts_per_run": args.broadcasts if args.client == "go" else broadcast.BROADCASTS,
                       "interval_ms": messages.INTERVAL_MS if args.client == "go" else broadcast.INTERVAL_MS,
                       "senders": 1, "receivers": "the client count (the sender is one more connection)"
                       if args.client == "go" else "the client count less the sender",
                       "clock": ("unix µs at both ends (one machine's clock)" if args.client == "go" else
                                 "time.time_ns() at both ends (one machine's clock)")})
    path = write(args.out or STUDY.name, {"context": context, "results": results}, kind=STUDY.name)
    print(f"{STUDY.name}: {time.monotonic() - began:.0f} s; results: {path}")
    return 0


def _go_run(lab: Any, impl: Any, test: str, clients: int, s: runner.Settings, args: argparse.Namespace
            ) -> dict[str, Any]:
    """One run on the Go load client; the service's and the database's processes on the services' CPUs."""
    pins = s.pinning
    if pins and pins.enabled:
        for pid in (lab.pids[impl.name], lab.database.pid):
            if pid:
                pinning.pin_tree(pid, pins.services)
    endpoint, pid = lab.endpoints[impl.name], lab.pids[impl.name]
    if test == "broadcast":
        return messages.broadcast(endpoint, impl.protocol, pid, clients, pins, args.broadcasts)
    # every client connects first (the Go client waits for them all), then the warm-up, then the window
    return messages.echo(endpoint, impl.protocol, pid, clients, max(s.warmup_s, 1.0), s.steady_s, pins,
                         workload.ECHO_PAYLOAD)


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


def _line(test: str, row: dict[str, Any]) -> str:
    head = f"{test:<9} {row['implementation']:<28} {row['clients']:>5} clients run {row['run']}: "
    if test == "echo":
        body = (f"connect {row['connect_ms']['mean']} ms, RTT mean {row['rtt_ms']['mean']} ms, "
                f"{row['messages_per_s'] or 0:,.0f} msg/s, errors {sum(row['errors'].values())}")
    else:
        body = (f"latency mean {row['latency_ms']['mean']} ms (n {row['latency_ms']['count']}), "
                f"broadcasts {row['broadcasts']}, lost {row['lost']}, errors {sum(row['errors'].values())}")
    if row.get("client_cpu_limit_percent") is not None:
        body += (f", client CPU {row['client_cpu_percent']:.0f} % (limit {row['client_cpu_limit_percent']:.0f} %), "
                 f"service {row['service_cpu_percent']:.0f} %, machine {row['machine_cpu_percent']:.0f} %")
    return head + body + ("" if row["valid"] else "  INVALID: " + "; ".join(row["invalid_reasons"]))

