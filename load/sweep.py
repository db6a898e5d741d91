"""The default load sweep (make load): every implementation that serves the
operation (default fetch-one), closed model at 10 and 100 clients, the open
model stepped to each one's knee (up to 5 steps), then 1,000 clients; each
service process is stopped once its last subject is measured (release()). With --path, the same on each network path
in turn (its own lab beyond the path, Locust on the host): results named
<implementation>@<path>, each path's set and measured values in the context."""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext
from typing import Any

from lab import registry, settings
from lab.axes import NetworkPath
from lab.context import run_context
from lab.host import pinning
from lab.resources import cpu_seconds
from lab.stack import running_lab
from load import netns, runner, summary
from load.common import drivable, load_context, prepare, settings_from, write


def run(args: argparse.Namespace) -> int:
    settings.measuring()
    paths = [NetworkPath.parse(p) for p in (getattr(args, "path", None) or ["loopback"])]
    if args.netns and any(p.veth for p in paths):
        raise SystemExit("--netns and --path: the workers' namespaces dial the host, a path's services sit in "
                         "its own namespace; use one or the other")
    if args.netns and "LAB_HOST" not in os.environ:
        os.environ["LAB_HOST"] = "0.0.0.0"  # bind every address: the workers dial their links' host side
    began = time.monotonic()
    pins = pinning.plan(not args.no_pin)
    s = settings_from(args, pins)
    names = drivable(chosen(args), (args.operation,))
    results: dict[str, Any] = {}
    links: dict[str, Any] = {}
    context: dict[str, Any] = {}
    for path in paths:
        # one path at a time, each its own lab (database and services beyond that path); Locust on the host
        with running_lab(names, path=path) as lab, _network(args, s, lab):
            if path.veth:
                links[path.name] = lab.link
            for done, impl in enumerate(lab.implementations):
                entry = sweep_one(lab, impl, s, args)
                entry.update(implementation=impl.name, path=path.name)
                results[lab.site.subject(impl.name)] = entry
                release(lab, done)
            context = context or run_context(lab.mode, lab.database, lab.implementations)
    context.update(load_context(args, s, pins))
    context["load"]["sweep_seconds"] = round(time.monotonic() - began, 1)
    if links:
        context["load"]["paths"] = {p.name: links.get(p.name) for p in paths}   # set and measured, per path
    table = summary.table(results)
    out = args.out or ("paths" if links else "sweep")
    path = write(out, {"context": context, "results": results,
                       "summary": [summary.cells(n, e) for n, e in results.items()]}, kind="load")
    print("\n" + table)
    if links:
        print("\n" + summary.path_table(results, context["load"]["paths"]))
    print(f"load sweep: {context['load']['sweep_seconds']:.0f} s; results: {path.relative_to(settings.ROOT)}")
    return 0


def release(lab: Any, done: int, quiet_share: float = 0.05, within_s: float = 60.0) -> str:
    """After lab.implementations[done] was measured: its process is stopped, so its queue of abandoned
    requests (the 1,000-client run's) and its memory do not weigh on the next implementation's runs on
    the same CPU; but a process that serves a subject still to come (lab/registry.py, served_by: a
    client-side variant) is kept, and waited for until it is quiet (its CPU under `quiet_share` of a
    core over a second, at most `within_s`). Until 2026-12-03 it was stopped after its first subject,
    and every later subject of it met a closed port (connect/python_connectrpc+grpcweb: 0 answers,
    thousands of errors). Returns what was done: "stopped", "quiet" or "busy"."""
    order = lab.implementations
    process = lab.processes[order[done].name]
    if not any(lab.processes.get(later.name) is process for later in order[done + 1:]):
        process.stop(grace=2.0)
        return "stopped"
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        before = cpu_seconds(process.pid)
        time.sleep(1.0)
        if cpu_seconds(process.pid) - before < quiet_share:
            return "quiet"
    return "busy"


def chosen(args: argparse.Namespace) -> list[str] | None:
    """The implementations asked for: --impl's, else one per protocol with --per-protocol, else all (None)."""
    if args.impl:
        return list(args.impl)
    if getattr(args, "per_protocol", False):
        return registry.one_per_protocol()
    return None


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
