"""The Feathers comparison on Locust (python -m studies feathers): the same
tiny call (health: the smallest call every protocol has) over HTTP and over
one WebSocket per client, 100 connections × N calls each, connection setup
included; requests/s = all calls / (first connection's start to last call's
end). Results: results/load/feathers-<date>.json and feathers-latest.json.

By default the study's servers' runtime: the Node.js implementations (manifest
`language`) of REST and of every messaging protocol (descriptors' `messaging`).
"""

from __future__ import annotations

import argparse
from typing import Any

from clients.protocols import get as protocol
from lab.axes import NetworkPath
from lab.context import run_context
from lab.host import pinning
from lab.registry import select
from lab.stack import running_lab
from load import runner
from load.__main__ import parser as load_parser
from load.common import drivable, load_context, prepare, settings_from, write
from studies.feathers import STUDY

SCENARIO = STUDY.published()["scenario"]
CONNECTIONS: int = SCENARIO["connections"]
CALLS: tuple[int, ...] = tuple(SCENARIO["calls"])   # the study also ran 1,000 and 2,000 (--calls)


def default() -> list[str]:
    """The study's servers were Node.js (Express for HTTP, socket.io): the lab's
    Node.js implementations of REST and of every messaging protocol."""
    return [i.name for i in select() if i.language == SCENARIO["language"]
            and (i.protocol == SCENARIO["http_protocol"] or protocol(i.protocol).messaging)]


def parser() -> argparse.ArgumentParser:
    p = load_parser()
    p.prog = f"python -m studies {STUDY.name}"
    p.add_argument("--calls", nargs="*", type=int,
                   help=f"calls per connection (default {' '.join(map(str, CALLS))}; the study: up to 2000)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.scenario = STUDY.name
    return run(args)


def run(args: argparse.Namespace) -> int:
    pins = pinning.plan(not args.no_pin)
    calls_list = tuple(args.calls) if getattr(args, "calls", None) else CALLS
    s = settings_from(args, pins, operation="health")
    results: dict[str, list[dict[str, Any]]] = {}
    names = drivable(args.impl or default(), (SCENARIO["operation"],))
    paths = [NetworkPath.parse(p) for p in (getattr(args, "path", None) or ["loopback"])]
    links: dict[str, Any] = {}
    context: dict[str, Any] = {}
    for path in paths:   # --path: the same on each network path in turn, results named <implementation>@<path>
        with running_lab(names, path=path) as lab:
            if path.veth:
                links[path.name] = lab.link
            prepare(lab, "health")
            for impl in lab.implementations:
                subject = lab.site.subject(impl.name)
                for calls in calls_list:
                    runner.settle(lab, impl)
                    row = once(lab, impl, calls, s)
                    print(f"{subject:<34} {CONNECTIONS} connections × {calls:>5} calls: "
                          f"{row['requests_per_s']:8.0f} requests/s  ({row['seconds']:.2f} s, errors {row['errors']})")
                    results.setdefault(subject, []).append(row)
            context = context or run_context(lab.mode, lab.database, lab.implementations)
    context.update(load_context(args, s, pins))
    context["load"].update(scenario=STUDY.name, connections=CONNECTIONS, calls=list(calls_list),
                           operation="health")
    if links:
        context["load"]["paths"] = {p.name: links.get(p.name) for p in paths}
    path = write(args.out or STUDY.name, {"context": context, "results": results}, kind=STUDY.name)
    print(f"results: {path}")
    return 0


def once(lab: Any, impl: Any, calls: int, s: runner.Settings) -> dict[str, Any]:
    """100 clients, each: open its connection, make `calls` calls one after another, close."""
    row = runner.run(lab, impl, s, model="closed", clients=CONNECTIONS, calls=calls)
    span = row["call_span_s"] or 0.0
    ops = row["ops_total"]
    generator = sum(v["cpu_s"] for k, v in row["resources"].items() if k.startswith("generator"))
    return {"calls_per_connection": calls, "connections": CONNECTIONS, "ops": ops,
            "seconds": round(span, 3), "requests_per_s": round(ops / span, 1) if span > 0 else 0,
            "errors": row["errors_total"], "latency_us": row["latency_us"], "connect_us": row["connect_us"],
            "bytes_per_call": row["bytes_per_op"],
            "generator_cpu_s": round(generator, 3), "generator_cpu_percent": row["generator_cpu_percent"],
            "valid": ops == calls * CONNECTIONS and not row["errors_total"]
            and not any("generator used" in r for r in row["invalid_reasons"]),
            "invalid_reasons": row["invalid_reasons"]}


