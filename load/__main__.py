"""python -m load (make load, protolab load): the load sweep.

Default: every implementation that serves fetch-one, closed model at 10 and
100 clients, the open model stepped to each one's knee (up to 5 steps), then
1,000 clients; each service is stopped once measured. Results in
results/load/<scenario>-<date>.json and <scenario>-latest.json, with the
per-implementation summary (load/summary.py), printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from lab import settings
from lab.context import run_context
from lab.host.tools import k6, k6_version
from lab.registry import select
from lab.stack import running_lab
from load import operations, pinning, runner, summary
from load.state import prepare

RESULTS = settings.RESULTS / "load"
SWEEP_CLIENTS = (10, 100, 1000)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="protolab load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", nargs="*", metavar="IMPL", help="implementations (default: all)")
    p.add_argument("--scenario", default="sweep",
                   help="sweep (default), feathers, fernando or kcheck (k6 at concurrency 1, issue 9); the push "
                        "scenarios (Timeplus, Pathan): python -m load.push")
    p.add_argument("--operation", default="fetch-one", choices=operations.OPERATIONS)
    p.add_argument("--clients", nargs="*", type=int, default=list(SWEEP_CLIENTS),
                   help="closed-model virtual users (default: 10 100 1000, which fits 15 minutes for every "
                        "implementation here; the issue's full ladder: 10 50 100 500 1000)")
    p.add_argument("--model", choices=("closed", "open", "both"), default="both")
    p.add_argument("--duration", type=float, default=1.5, help="steady window per run, s (default 1.5)")
    p.add_argument("--warmup", type=float, default=0.5, help="warm-up before the window, s (default 0.5)")
    p.add_argument("--p99-limit", type=float, default=runner.P99_LIMIT_MS,
                   help="open model: the knee is the highest rate held at this p99, ms (default 50)")
    p.add_argument("--knee-steps", type=int, default=5, help="open-model steps per implementation, at most (default 5)")
    p.add_argument("--no-pin", action="store_true", help="do not pin services and k6 to disjoint CPUs")
    p.add_argument("--target-host", help="dial this address instead of the one the services bind")
    p.add_argument("--generators", type=int, default=1,
                   help="k6 processes splitting each run by execution segments (default 1)")
    p.add_argument("--netns", action="store_true",
                   help="services and generators in network namespaces joined by veth, MTU 1500")
    p.add_argument("--calls", nargs="*", type=int,
                   help="feathers: calls per connection (default 1 10 50 500; the study: up to 2000)")
    p.add_argument("--runs", type=int, default=3, help="fernando: runs at each client count (default 3)")
    p.add_argument("--budget", type=float, default=600.0,
                   help="fernando: start no run after this many seconds (default 600; 0: no limit)")
    p.add_argument("--out", type=_result_name, metavar="NAME",
                   help="results/load/NAME-<date>.json and NAME-latest.json (default NAME: the scenario)")


def _result_name(name: str) -> str:
    """--out names a result in results/load (make report reads it there), never a path."""
    if not name or "/" in name or name.startswith("."):
        raise argparse.ArgumentTypeError(f"{name!r} is a path; give a name: the results go to results/load/")
    return name


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run(args)


def drivable(names: list[str] | None, operations_: tuple[str, ...]) -> list[str]:
    """The implementations named (default: all) that k6 can drive with every
    one of `operations_`; the others are named with the reason."""
    chosen = []
    for impl in select(names or None):
        reasons = [r for op in operations_ if (r := operations.why_not(impl, op))]
        if reasons:
            print(f"{impl.name}: left out: {reasons[0]}")
        else:
            chosen.append(impl.name)
    if not chosen:
        raise SystemExit("no implementation to drive")
    return chosen


def run(args: argparse.Namespace) -> int:
    settings.measuring()
    if args.scenario != "sweep":
        from load import scenarios
        return scenarios.main(args)
    k6()  # built once, before anything starts
    if args.netns and "LAB_HOST" not in os.environ:
        os.environ["LAB_HOST"] = "0.0.0.0"  # bind every address: the generators dial their links' host side
    began = time.monotonic()
    pins = pinning.plan(not args.no_pin)
    s = runner.Settings(operation=args.operation, warmup_s=args.warmup, steady_s=args.duration,
                        p99_limit_ms=args.p99_limit, pinning=pins, target_host=args.target_host,
                        segments=args.generators)
    with running_lab(drivable(args.impl, (args.operation,))) as lab, _network(args, s, lab):
        results: dict[str, Any] = {}
        for impl in lab.implementations:
            results[impl.name] = sweep_one(lab, impl, s, args)
            # Its queue of abandoned requests (and its memory) must not weigh
            # on the next implementation's runs on the same CPU.
            lab.processes[impl.name].stop(grace=2.0)
        context = run_context(lab.mode, lab.database, lab.implementations)
        context.update(load_context(args, s, pins))
        context["load"]["sweep_seconds"] = round(time.monotonic() - began, 1)
    table = summary.table(results)
    path = write(args.out or "sweep", {"context": context, "results": results,
                                       "summary": [summary.cells(n, e) for n, e in results.items()]})
    print("\n" + table)
    print(f"load sweep: {context['load']['sweep_seconds']:.0f} s; results: {path.relative_to(settings.ROOT)}")
    return 0


def sweep_one(lab: Any, impl: Any, s: runner.Settings, args: argparse.Namespace) -> dict[str, Any]:
    """One implementation's closed levels and knee. The largest closed level
    runs last, after the open-model steps, so the requests it leaves queued
    (clients gone, the service still working them off) do not weigh on them."""
    t0 = time.monotonic()
    prepare(lab, args.operation)
    levels = sorted(args.clients) if args.model in ("closed", "both") else []
    last = levels[-1:] if args.model == "both" and len(levels) > 1 else []
    closed = runner.closed_sweep(lab, impl, s, tuple(levels[:len(levels) - len(last)]))
    entry: dict[str, Any] = {"closed": closed}
    if args.model in ("open", "both"):
        # Where to start looking: the closed runs' best throughput, an invalid
        # run's included (a generator over its CPU limit shows a lower bound).
        peak = max((r.get("throughput_rps") or 0 for r in closed if "skipped" not in r), default=0.0)
        start = 0.6 * peak if peak else 50.0
        rows, knee = runner.knee_search(lab, impl, s, start, args.knee_steps)
        entry.update(open=rows, knee_rps=knee, p99_limit_ms=args.p99_limit)
        print(f"{impl.name}: knee {knee if knee is not None else 'not found'} requests/s "
              f"at p99 ≤ {args.p99_limit:g} ms")
    if last:
        closed += runner.closed_sweep(lab, impl, s, tuple(last), previous=closed)
    entry["seconds"] = round(time.monotonic() - t0, 1)
    entry["concurrency"] = impl.manifest.get("concurrency", "")
    return entry


def _network(args: argparse.Namespace, s: runner.Settings, lab: Any) -> Any:
    from contextlib import nullcontext
    if not args.netns:
        return nullcontext()
    from load import netns
    return netns.generator_namespaces(s, max(2, args.generators))


def load_context(args: argparse.Namespace, s: runner.Settings, pins: pinning.Pinning) -> dict[str, Any]:
    return {"load": {
        "engine": "k6", "engine_version": k6_version(), "scenario": args.scenario,
        "operation": s.operation, "models": args.model, "closed_clients": list(args.clients),
        "warmup_s": s.warmup_s, "steady_s": s.steady_s, "max_run_s": runner.MAX_RUN_S, "p99_limit_ms": s.p99_limit_ms,
        "held_fraction": runner.HELD_FRACTION, "generator_cpu_limit": runner.GENERATOR_CPU_LIMIT,
        "pinning": pins.describe(), "generator_processes": s.segments,
        "target_host": s.target_host, "netns": bool(args.netns)}}


def write(name: str, data: dict[str, Any], directory: Any = RESULTS) -> Any:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = data["context"]["date"].replace(":", "").replace("+0000", "Z")
    path = directory / f"{name}-{stamp}.json"
    text = json.dumps(data, indent=1)
    path.write_text(text)
    (directory / f"{name}-latest.json").write_text(text)
    return path


if __name__ == "__main__":
    raise SystemExit(main())
