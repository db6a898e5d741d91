"""What the sweep and the scenarios share: which implementations can be
driven, the database state a run starts from, the settings and context of a
run, and where results go (results/load/<name>-<date>.json, <name>-latest.json)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from clients.protocols import get as protocol
from lab import results as lab_results
from lab import settings, workload
from lab.host import pinning
from lab.registry import Implementation, select
from load import runner
from load.engine import locust_version

RESULTS = settings.RESULTS / "load"
SWEEP_CLIENTS = (10, 100, 1000)   # the default sweep's closed levels


def why_not(impl: Any, operation: str) -> str | None:
    """Why the load instrument cannot drive `impl` with `operation` (None: it can)."""
    op = workload.get(operation)
    if not op.served_by(impl):
        return f"it does not serve {op.contract_op!r} (its manifest's operations)"
    descriptor = protocol(impl.protocol)
    if not descriptor.load_client:
        return f"no load client for {impl.protocol}: {descriptor.no_load}"
    return None


def chosen(names: list[str] | None, reason: Callable[[Implementation], str | None], none_left: str) -> list[str]:
    """The implementations named (default: all) for which `reason` finds nothing against; each other one
    printed with its reason. SystemExit(none_left) when none is left."""
    out = []
    for impl in select(names or None):
        why = reason(impl)
        if why:
            print(f"{impl.name}: left out: {why}")
        else:
            out.append(impl.name)
    if not out:
        raise SystemExit(none_left)
    return out


def drivable(names: list[str] | None, operations_: tuple[str, ...]) -> list[str]:
    """The implementations named (default: all) that Locust can drive with every
    one of `operations_`; the others are named with the reason."""
    return chosen(names, lambda impl: next((r for op in operations_ if (r := why_not(impl, op))), None),
                  "no implementation to drive")


def settings_from(args: argparse.Namespace, pins: pinning.Pinning, **kw: Any) -> runner.Settings:
    workers = args.workers or (2 if args.netns else 0)
    values = {"operation": args.operation, "warmup_s": args.warmup, "steady_s": args.duration,
              "p99_limit_ms": args.p99_limit, "pinning": pins, "target_host": args.target_host,
              "workers": workers, "share_connection": getattr(args, "share_connection", False), **kw}
    return runner.Settings(**values)


def prepare(lab: Any, operation: str) -> None:
    """The database state `operation` starts from (lab/workload.py)."""
    store = lab.store()
    try:
        workload.prepare(store.games, workload.get(operation))
    finally:
        store.close()


def load_context(args: argparse.Namespace, s: runner.Settings, pins: pinning.Pinning) -> dict[str, Any]:
    return {"load": {
        "engine": "locust", "engine_version": locust_version(), "scenario": args.scenario,
        "operation": s.operation, "models": args.model, "closed_clients": list(args.clients),
        "warmup_s": s.warmup_s, "steady_s": s.steady_s, "max_run_s": runner.MAX_RUN_S, "p99_limit_ms": s.p99_limit_ms,
        "held_fraction": runner.HELD_FRACTION, "generator_cpu_limit": runner.GENERATOR_CPU_LIMIT,
        "pinning": pins.describe(), "workers": s.workers,
        "generator_processes": s.workers + 1 if s.workers else 1, "wake_lag_limit_ms": runner.WAKE_LAG_LIMIT_MS,
        "tail_answers": {"p99": 1000, "p99_9": 10000},
        "target_host": s.target_host, "netns": bool(args.netns),
        "share_connection": s.share_connection}}


def write(name: str, data: dict[str, Any], directory: Any = RESULTS, *, kind: str) -> Any:
    """results/load/<name>-<date>.json and <name>-latest.json, in the lab's results
    format (lab/results.py: `kind`'s schema); `data` holds the context beside the kind's data."""
    rest = {k: v for k, v in data.items() if k != "context"}
    return lab_results.write(kind, name, data["context"], rest, directory)
