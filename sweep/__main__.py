"""python -m sweep (make sweep): the latency suite over the grid (sweep/__init__.py).

    python -m sweep                                  # the default grid (~28 minutes planned; --dry-run says)
    python -m sweep --axis payload --cycles 50       # one slice
    python -m sweep --grid full                      # every implementation, more sizes and paths
    python -m sweep --dry-run                        # the cells, the commands and the time plan; runs nothing
    python -m sweep --from results/sweep/runs/*.json # the sweep result again from runs already made

Each group is one run of `python -m pytest benchmarks --benchmark-only -p no:xdist` with its
environment; its latency file goes to results/sweep/runs/. The sweep result:
results/sweep/latest.json and results/sweep/sweep-<date>.json (kind "sweep").
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from lab import results as lab_results
from lab import settings
from lab.context import host_context
from sweep import cells, crossover, grid

RAW = re.compile(r"^raw results: (\S+\.json)\s*$", re.M)
RUN_TIMEOUT_FACTOR, RUN_TIMEOUT_MIN_S = 4.0, 900.0   # a run longer than this is stopped (its plan × 4)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sweep", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", choices=("default", "full"), default="default",
                   help="default: one implementation per protocol, fits 30 minutes here; full: every "
                        "implementation, the sized payload rows, more paths")
    p.add_argument("--axis", action="append", choices=("payload", "compression", "path"),
                   help="the slices to run (repeatable; default: all three)")
    p.add_argument("--cycles", type=int, help="measured cycles of every run (default: scaled per run from "
                                              "the time plan, at least 20)")
    p.add_argument("--impl", help="implementations, a comma list (default: the grid's)")
    p.add_argument("--operations", help="the payload (or path) slice's operations, a comma list "
                                        "(default: fetch-1,fetch-10,fetch-100,fetch-1000)")
    p.add_argument("--paths", help="the path slice's network paths, a comma list (default: "
                                   + ",".join(grid.PATHS) + ")")
    p.add_argument("--variant-axis", default=grid.VARIANT_AXIS,
                   help=f"the variant axis of the compression slice (lab/axes.py; default {grid.VARIANT_AXIS})")
    p.add_argument("--dry-run", action="store_true", help="print the cells, commands and time plan; run nothing")
    p.add_argument("--from", dest="from_files", nargs="+", metavar="RUN",
                   help="build the sweep result from these latency files (results/sweep/runs/) without running")
    p.add_argument("--out", default=str(settings.RESULTS / "sweep"), help="the sweep result's folder")
    return p


def split(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def plan(args: argparse.Namespace, axes_wanted: list[str] | None = None,
         budget_s: float | None = None) -> list[grid.Group]:
    return grid.grid(args.grid, axes_wanted or args.axis or ("payload", "compression", "path"), split(args.impl),
                     args.cycles, split(args.operations), split(args.paths), args.variant_axis, budget_s=budget_s)


def replanned(args: argparse.Namespace, pending: list[grid.Group], spent_s: float) -> list[grid.Group]:
    """The slices not yet run, planned again after each run: calibrated with what the runs so far
    measured (grid.calibration() reads results/sweep/runs/, newest first) and fitted to the time
    the budget has left. A first plan made without a saved run uses the model's defaults, which do
    not know an implementation's own cost (a fresh clone: the slowest implementation's fetch-1000 is ~70x the default's);
    from the second slice on the plan is this machine's, this hour's. Fixed --cycles are kept."""
    if args.cycles is not None or not pending:
        return pending
    budget = (grid.FULL_BUDGET_S if args.grid == "full" else grid.BUDGET_S) - grid.MARGIN_S - spent_s
    again = plan(args, [g.axis for g in pending], max(budget, 0.0))
    for old, new in zip(pending, again, strict=False):
        if (old.cycles, old.planned_seconds()) != (new.cycles, new.planned_seconds()):
            print(f"sweep: [{new.name}] planned again with this run's costs and {budget / 60:.1f} min left: "
                  f"{old.cycles} -> {new.cycles} cycles, {new.planned_seconds() / 60:.1f} min", flush=True)
    return again


def show_plan(groups: list[grid.Group], runs_dir: str) -> list[str]:
    lines = []
    total = 0.0
    for group in groups:
        seconds = group.planned_seconds()
        total += seconds
        env = group.env(runs_dir)
        lines.append(f"[{group.name}] {len(group.cells())} cells: {', '.join(group.operations)} × "
                     f"{', '.join(v or 'base' for v in group.variants)} × {', '.join(group.paths)}; "
                     f"{len(group.subjects())} subjects and direct per site; {group.cycles} cycles "
                     f"(a cycle planned at {group.cycle_seconds():.2f} s); planned {seconds / 60:.1f} min")
        for note in group.left_out:
            lines.append(f"    left out: {note}")
        for cell in group.cells():
            lines.append(f"    cell: {cell['operation']} | {cell['variant'] or 'base'} | {cell['path']}")
        lines.append("    " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " "
                     + " ".join(shlex.quote(part) for part in group.command()))
    lines.append(f"planned: {total / 60:.1f} min in {len(groups)} runs (the default grid's budget: "
                 f"{grid.BUDGET_S / 60:.0f} min; the full grid's: {grid.FULL_BUDGET_S / 3600:.0f} h)")
    return lines


def run_group(group: grid.Group, runs_dir: str, log_dir: Path) -> Path:
    """One run of the latency suite; the latency file it wrote. Its output goes to the terminal and
    to a log; it is stopped (by its process id) past its plan × RUN_TIMEOUT_FACTOR or on Ctrl-C."""
    env = {**os.environ, **group.env(runs_dir), "PYTHONUNBUFFERED": "1"}  # its lines as they come
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{group.name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.log"
    timeout = max(RUN_TIMEOUT_MIN_S, RUN_TIMEOUT_FACTOR * group.planned_seconds())
    print(f"sweep: [{group.name}] running ({group.cycles} cycles, planned {group.planned_seconds() / 60:.1f} min, "
          f"stopped after {timeout / 60:.0f} min); log {log}", flush=True)
    output: list[str] = []
    with open(log, "w") as out:
        process = subprocess.Popen(group.command(), cwd=settings.ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        watchdog = threading.Timer(timeout, stop, (process,))
        watchdog.daemon = True
        watchdog.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                out.write(line)
                output.append(line)
                print(line, end="", flush=True)
            code = process.wait(timeout=120)
        except BaseException:
            stop(process)
            raise
        finally:
            watchdog.cancel()
    found = RAW.findall("".join(output))
    if not found:
        raise RuntimeError(f"the {group.name} run (exit {code}) wrote no latency file; its log: {log}")
    path = Path(found[-1])
    return path if path.is_absolute() else settings.ROOT / path


def stop(process: subprocess.Popen) -> None:
    """SIGTERM (pytest unwinds the lab, stopping what it started), then SIGKILL after 60 s."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def build(files: list[tuple[str, Path]], variant_axis: str, groups: list[dict[str, Any]],
          started: float | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sweep result's context and data from (group, latency file) pairs."""
    values, why = grid.variant_values(variant_axis)
    all_cells: list[dict[str, Any]] = []
    contexts: dict[str, Any] = {}
    for group, path in files:
        run = lab_results.read(path, "latency")
        shown = str(path.relative_to(settings.ROOT)) if path.is_relative_to(settings.ROOT) else str(path)
        all_cells += cells.cells_of(run, shown, variant_axis, values, group)
        contexts[shown] = run["context"]   # each run's own: database, implementations and versions, design, noise
    statements = crossover.statements(all_cells, values, variant_axis)
    context = host_context(sweep={
        "variant_axis": {"name": variant_axis, "values": list(values), "base": values[0] if values else "",
                         **({"absent": why} if why else {})},
        "groups": groups, "runs": list(contexts), "run_contexts": contexts,
        **({"seconds": round(time.monotonic() - started)} if started is not None else {})})
    return context, {"cells": all_cells, "crossovers": statements}


def write(context: dict[str, Any], data: dict[str, Any], out: Path) -> Path:
    """results/sweep/sweep-<date>.json and results/sweep/latest.json."""
    path = lab_results.write("sweep", "sweep", context, data, out, latest=False)
    lab_results.write("sweep", "latest", context, data, out, stamped=False)
    return path


def summary(data: dict[str, Any]) -> list[str]:
    lines = ["", "protolab: sweep"]
    for cell in data["cells"]:
        lines.append(f"{cell['operation']} | {cell['variant'] or 'base'} | {cell['path']} "
                     f"({cell['cycles']} cycles): {cells.chain_text(cell)}")
    lines.append("")
    lines.append("crossovers (99 % intervals of the paired ratio; an order holds only where it excludes 1):")
    for s in data["crossovers"]:
        lines.append(f"  [{s['axis']}: {s['line']}] {s['text']}")
    if not data["crossovers"]:
        lines.append("  none to state: no pair measured at two points of an axis")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    out = Path(args.out)
    runs_dir = grid.results_dir()
    if args.from_files:
        files = [("", Path(f).resolve()) for f in args.from_files]
        absent = [str(p) for _, p in files if not p.exists()]
        if absent:
            print(f"sweep: no such latency file: {', '.join(absent)}")
            return 2
        context, data = build(files, args.variant_axis, [])
    else:
        groups = plan(args)
        source = grid.calibration()[1]
        print(f"time plan: calibrated from {source}" if source else
              "time plan: the model's defaults (no saved latency run to calibrate it from)")
        for line in show_plan(groups, runs_dir):
            print(line)
        if args.dry_run or not groups:
            return 0
        started = time.monotonic()
        files, failed, took = [], {}, {}
        pending, ran = list(groups), []
        while pending:
            group = pending.pop(0)
            began = time.monotonic()
            try:
                files.append((group.name, run_group(group, runs_dir, out / "logs")))
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:  # the other slices still run
                failed[group.name] = str(exc)
                print(f"sweep: [{group.name}] failed: {exc}", flush=True)
            took[group.name] = round(time.monotonic() - began)
            ran.append(group)
            pending = replanned(args, pending, time.monotonic() - started)
        if not files:
            print("sweep: no run wrote a latency file; nothing to write")
            return 1
        described = [{**g.describe(), "took_s": took.get(g.name)} for g in ran]   # planned_s beside it
        context, data = build(files, args.variant_axis, described, started)
        if failed:
            context["sweep"]["failed"] = failed
    path = write(context, data, out)
    for line in summary(data):
        print(line)
    print(f"sweep result: {path} and {out / 'latest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
