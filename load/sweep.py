"""The default load sweep (make load): every implementation that serves the
operation (default fetch-one), closed model at 10 and 100 clients, the open
model stepped to each one's knee (up to 5 steps), then 1,000 clients; each
service is stopped once measured."""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext
from typing import Any

from lab import settings
from lab.context import run_context
from lab.host import pinning
from lab.stack import running_lab
from load import netns, runner, summary
from load.common import drivable, load_context, prepare, settings_from, write


def run(args: argparse.Namespace) -> int:
    settings.measuring()
    if args.netns and "LAB_HOST" not in os.environ:
        os.environ["LAB_HOST"] = "0.0.0.0"  # bind every address: the workers dial their links' host side
    began = time.monotonic()
    pins = pinning.plan(not args.no_pin)
    s = settings_from(args, pins)
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
                                       "summary": [summary.cells(n, e) for n, e in results.items()]}, kind="load")
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
    entry["concurrency"] = impl.concurrency
    return entry


def _network(args: argparse.Namespace, s: runner.Settings, lab: Any) -> Any:
    if not args.netns:
        return nullcontext()
    return netns.worker_namespaces(s, max(1, s.workers))
