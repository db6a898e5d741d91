"""The Feathers comparison on Locust (python -m studies feathers): the same
tiny call (health: the smallest call every protocol has) over HTTP and over
one WebSocket per client, 100 connections × N calls each (the study's 1, 10,
50, 500, 1,000 and 2,000), connection setup included; requests/s = all calls
/ (first connection's start to last call's end). --path runs it again on each
network path named (e.g. loopback rtt80ms: a round trip near the study's
laptop-to-Heroku one, results named <implementation>@<path>).

The bytes of a connection's setup apart from a call's: each row's bytes per
connection (application bytes counted in the Locust process, sent +
received) against its calls per connection, fitted by least squares
(statistics.linear_regression): the slope is a call's bytes on an open
connection, the intercept the setup's (the WebSocket upgrade, socket.io's
handshake; HTTP/1.1 has none of its own). Results:
results/load/feathers-<date>.json and feathers-latest.json ("bytes_split").

By default the study's servers' runtime: the Node.js implementations (manifest
`language`) of REST and of every messaging protocol (descriptors' `messaging`).
"""

from __future__ import annotations

import argparse
import statistics
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
# make reference (report/reference.py): this study's arguments at the full design (the study's
# ladder, 1 to 2,000 calls a connection, on loopback and on the round trip near the study's, with a
# connection's setup timed apart there) and at the smoke scale (minutes, every code path)
REFERENCE_ARGS = {"full": ["--calls", "1", "10", "50", "500", "1000", "2000",
                           "--path", "loopback", SCENARIO["path_near_study"], "--setup-rounds", "30"],
                  "smoke": ["--impl", "ws/node_ws", "--calls", "1", "10", "--duration", "1"]}
CONNECTIONS: int = SCENARIO["connections"]
CALLS: tuple[int, ...] = tuple(SCENARIO["calls"])   # the study's 1 to 2,000 (--calls for fewer)


def default() -> list[str]:
    """The study's servers were Node.js (Express for HTTP, socket.io): the lab's
    Node.js implementations of REST and of every messaging protocol."""
    return [i.name for i in select() if i.language == SCENARIO["language"]
            and (i.protocol == SCENARIO["http_protocol"] or protocol(i.protocol).messaging)]


def parser() -> argparse.ArgumentParser:
    p = load_parser()
    p.prog = f"python -m studies {STUDY.name}"
    p.add_argument("--calls", nargs="*", type=int,
                   help=f"calls per connection (default {' '.join(map(str, CALLS))}; the study's)")
    p.add_argument("--setup-rounds", type=int, default=0, metavar="N",
                   help="then time a new connection's setup apart from a kept one's call, N rounds on each "
                        "--path but loopback (benchmarks/connection_setup.py; 0, the default: not)")
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
    split = {subject: fit for subject, rows in results.items() if (fit := bytes_split(rows))}
    path = write(args.out or STUDY.name, {"context": context, "results": results, "bytes_split": split},
                 kind=STUDY.name)
    print(f"results: {path}")
    shaped = [p.name for p in paths if p.veth]
    if args.setup_rounds and shaped:
        from benchmarks import connection_setup
        return connection_setup.main(["--paths", ",".join(shaped), "--impl", *names,
                                      "--rounds", str(args.setup_rounds)])
    return 0


def bytes_split(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A connection's setup bytes apart from a call's, from the rows' bytes per connection at their
    calls per connection (least squares; at least two call counts): {"per_call_bytes", "setup_bytes",
    "points"}; None where fewer than two rows counted bytes."""
    points = [(r["calls_per_connection"], r["bytes_per_connection"]) for r in rows
              if r.get("bytes_per_connection") is not None]
    if len({c for c, _ in points}) < 2:
        return None
    fit = statistics.linear_regression([float(c) for c, _ in points], [b for _, b in points])
    return {"per_call_bytes": round(fit.slope, 1), "setup_bytes": round(fit.intercept, 1),
            "points": [list(p) for p in points],
            "how": "least squares of bytes per connection (sent + received, counted in the Locust process) "
                   "on calls per connection"}


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
            "bytes_per_connection": (round((row["bytes_per_op"]["sent"] + row["bytes_per_op"]["received"]) * ops
                                           / CONNECTIONS, 1) if row.get("bytes_per_op") else None),
            "generator_cpu_s": round(generator, 3), "generator_cpu_percent": row["generator_cpu_percent"],
            "valid": ops == calls * CONNECTIONS and not row["errors_total"]
            and not any("generator used" in r for r in row["invalid_reasons"]),
            "invalid_reasons": row["invalid_reasons"]}


