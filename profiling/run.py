"""One profiling run: the lab started once with every chosen implementation
(each with its runtime's profiler switched on), then, one implementation and
operation at a time (the workload table's, lab/workload.py: by default the
latency suite's fetch-one and fetch-100), the operation's database state,
warm-up calls, and `seconds` of its call in a loop while the profilers sample; the results written after the lab
stopped (a Node.js service writes its profile as it exits)."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from lab import settings, workload
from lab.context import run_context
from lab.registry import Implementation, select
from lab.resources import CpuClock
from lab.stack import Lab, running_lab
from profiling import fold, summary
from profiling.runtimes import RUNTIMES, Perf, Unavailable

SCHEMA = {"name": "protolab.profile", "version": 1}
OUT = settings.RESULTS / "profiles"


def profilable(name: str) -> str:
    """`name` if the workload table has it (lab/workload.py, parametric names too) and
    its call can be repeated for seconds from one state (not insert, not delete)."""
    try:
        op = workload.get(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not op.repeatable:
        raise argparse.ArgumentTypeError(f"{name} changes the state it starts from: not profiled")
    return name


# By default the latency suite's calls that leave the state as they find it: fetch-one, fetch-100.
DEFAULT = tuple(name for name in workload.LATENCY if workload.get(name).repeatable)


@dataclass(frozen=True)
class Profiled(Implementation):
    """An implementation started with its profiler's environment and command-line flags."""
    runtime: Any = None

    def service_env(self) -> dict[str, str]:
        return {**super().service_env(), **self.runtime.environment()}

    def argv(self) -> list[str]:
        return self.runtime.command(super().argv())

    @classmethod
    def of(cls, impl: Implementation, runtime: Any) -> Profiled:
        return cls(**{f.name: getattr(impl, f.name) for f in fields(Implementation)}, runtime=runtime)


@dataclass
class Window:
    impl: Implementation
    operation: str
    directory: Path
    calls: int = 0
    seconds: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)
    database_stacks: fold.Stacks | None = None
    database_note: str = ""
    error: str = ""


def profile_one(lab: Lab, impl: Implementation, runtime: Any, operation: str, args: argparse.Namespace,
                perf: bool) -> Window:
    window = Window(impl, operation, args.out / impl.name / operation)
    shutil.rmtree(window.directory, ignore_errors=True)
    window.directory.mkdir(parents=True)
    op = workload.get(operation)
    client = lab.client(impl.name)
    try:
        call = op.call(client)
        op.check(call())
        # The suite's warm-up count (the manifest's, e.g. Node.js's 6,000), bounded in time.
        warm_until = time.monotonic() + args.warmup_seconds
        for _ in range(impl.warmup_calls or 30):
            call()
            if time.monotonic() > warm_until:
                break
        db_pid = lab.database.pid
        clock = CpuClock({"service": lab.pids[impl.name], **({"database": db_pid} if db_pid else {})})
        recorder = Perf() if perf and db_pid else None
        runtime.begin(lab.pids[impl.name], args.seconds, window.directory)
        if recorder is not None:
            recorder.begin(db_pid, args.seconds, window.directory)
        before, started = clock.read(), time.monotonic()
        deadline = started + args.seconds + 60
        while (runtime.sampling() or time.monotonic() - started < args.seconds) and time.monotonic() < deadline:
            call()
            window.calls += 1
        after = clock.read(closing=True)
        window.seconds = time.monotonic() - started
        runtime.end(args.seconds)
        window.cpu_s = {k: (after[k] - before[k]) / 1e9 for k in before}
        if recorder is not None:
            window.database_stacks = recorder.end(args.seconds)
    except (Unavailable, AssertionError, OSError) as exc:
        window.error = f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    return window


def write(window: Window, runtime: Any, context: dict[str, Any]) -> dict[str, Any]:
    d = window.directory
    out: dict[str, Any] = {"schema": SCHEMA, "implementation": window.impl.name, "operation": window.operation,
                           "language": window.impl.language, "profiler": type(runtime).__name__,
                           "native": runtime.native, "calls": window.calls, "seconds": round(window.seconds, 3)}
    if window.calls:
        out["cpu_us_per_call"] = {k: round(v / window.calls * 1e6, 1) for k, v in window.cpu_s.items()}
        out["calls_per_s"] = round(window.calls / window.seconds, 1)
    if not window.error:
        try:
            stacks = runtime.finish(d)
            fold.write_collapsed(stacks, d / "stacks.collapsed")
            out.update(summary.summarize(stacks, window.impl.language))
            if window.cpu_s.get("service"):
                # the samples against the service's CPU seconds: how much of its CPU the profile sees
                out["coverage"] = round(out["samples"] / runtime.rate / window.cpu_s["service"], 3)
        except (Unavailable, OSError, ValueError, KeyError) as exc:
            window.error = f"{type(exc).__name__}: {exc}"
    if window.error:
        out["error"] = window.error
    if window.database_stacks is not None:
        fold.write_collapsed(window.database_stacks, d / "database.collapsed")
        out["database"] = summary.summarize(window.database_stacks, "native")
    else:
        out["database"] = {"note": window.database_note}
    out["context"] = context
    (d / "summary.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def chosen(names: list[str] | None, operations: list[str]) -> list[Implementation]:
    """The implementations named (default: all) that serve every operation's contract call."""
    needs = list(dict.fromkeys(workload.get(o).contract_op for o in operations))
    found = []
    for impl in select(names or None):
        if all(impl.serves(op) for op in needs):
            found.append(impl)
        else:
            print(f"{impl.name}: left out: it serves no {' or '.join(op for op in needs if not impl.serves(op))}")
    return found


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The profiles (the caller sets the measurement's settings: __main__ calls settings.measuring())."""
    began = time.monotonic()
    impls = chosen(args.impl, args.operation)
    why_no_perf = Perf.why_not()
    with tempfile.TemporaryDirectory(prefix="protolab-profile-") as work:
        runtimes, started = {}, []
        for impl in impls:
            try:
                runtimes[impl.name] = RUNTIMES[impl.language](Path(work))
            except (Unavailable, KeyError) as exc:
                print(f"{impl.name}: not profiled: {exc}")
                continue
            started.append(Profiled.of(impl, runtimes[impl.name]))
        if not started:
            raise SystemExit("nothing to profile")
        windows: list[Window] = []
        with running_lab(implementations=started) as lab:
            context = run_context(lab.mode, lab.database, lab.implementations)
            store = lab.store()
            try:
                for impl in started:
                    for operation in args.operation:
                        workload.prepare(store.games, workload.get(operation))  # its state (lab/workload.py)
                        print(f"profiling {impl.name} {operation} ({args.seconds:g} s)", flush=True)
                        window = profile_one(lab, impl, runtimes[impl.name], operation, args, why_no_perf is None)
                        window.database_note = why_no_perf and f"no stack profile: {why_no_perf}" or ""
                        windows.append(window)
            finally:
                store.close()
        context["profile_seconds"] = round(time.monotonic() - began, 1)
        results = [write(w, runtimes[w.impl.name], context) for w in windows]
    for r in results:
        print(line(r))
    print(f"make profile: {time.monotonic() - began:.0f} s; results: {args.out}/")
    return results


SHORT = {"protocol library": "protocol", "database driver": "driver", "contract checks": "checks",
         "the lab's own code": "lab"}


def line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{r['implementation']:32} {r['operation']:18} ERROR {r['error']}"
    cpu = r.get("cpu_us_per_call", {})
    top = ", ".join(f"{t['frame'][:40]} {t['self_share']:.0%}" for t in r["top"][:3])
    split = " ".join(f"{SHORT.get(c, c)} {s:.0%}" for c, s in r["categories"].items())
    return (f"{r['implementation']:32} {r['operation']:18} {r['calls']:6} calls  service {cpu.get('service', 0):8.0f} "
            f"µs/call  db {cpu.get('database', 0):6.0f}  | {split} | {top}")
