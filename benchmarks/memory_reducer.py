"""Does V8's memory reducer move the Node.js services' figures? The experiment
behind README, "Node.js without V8's memory reducer", reproducible:

    .venv/bin/python -m benchmarks.memory_reducer [--executions 6] [--operation insert] [--trace-gc]
                                                  [--impl NAME ...]

One lab per execution, as the latency suite measures (benchmarks/suite.py:
its design, warm-up counts, settling cycles; LAB_BENCH_* settings apply):
the request-answering Node.js services (subjects(): every implementation
whose manifest's language is Node.js and that serves the CRUD operations)
beside the Python reference of each of their protocols (the first Python
implementation of it in registry order, where there is one: the same
processes in both conditions, the control) and `direct`, so that each
service is visited a few times a second, as in a whole run. --impl names
the implementations instead (its Node.js ones change with the condition,
the others are the control). Executions
alternate between the two conditions, in the order with, without, without,
with, ...: "without" runs the manifests' command (`node --no-memory-reducer
...`), "with" the same command without that flag (V8's default).

Printed per execution and service: CPU µs per call of its service process,
its ratio of medians to `direct`, and that ratio's move from the first half
of the measured cycles to the second (a service slowing through its
measurement moves up; the moment moves every service alike). With
--trace-gc every Node.js service also runs with V8's `--trace-gc`: printed,
its memory-reducing full collections ("Mark-Compact (reduce)": when, in
seconds of the service's life, and the heap before and after) and its
young-generation collections in each half of the measured cycles.
Results: results/memory-reducer-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil

from benchmarks.executions import execution
from benchmarks.study import save
from benchmarks.suite import Suite, design_from_env
from lab import settings, workload
from lab.registry import CRUD_CALLS, Implementation, first_of_each, select
from lab.running import Sites
from lab.stack import running_lab

NODE, CONTROL = "node", "python"  # the manifests' language of the subjects and of the control
FLAG = "--no-memory-reducer"
GC_LINE = re.compile(r"\]\s+(\d+) ms: (Scavenge|Mark-Compact(?: \(reduce\))?)"
                     r" [\d.]+ \(([\d.]+)\) -> [\d.]+ \(([\d.]+)\) MB")


def _own_process(impl: Implementation) -> bool:
    """Whether `impl` runs a process of its own (not a client-only variant served by its base's)."""
    return impl.served_by == impl.name


def subjects(implementations: Sequence[Implementation] | None = None) -> tuple[list[str], list[str]]:
    """(the Node.js implementations that serve the CRUD operations, the first Python implementation
    of each of their protocols), both in registry order; `implementations`: the registry's (select()).
    One subject a service: a variant the default run measures beside its base (Connect's wire and codec
    values, which change only the lab's client) is the same process, its heap the base's."""
    found = [i for i in (select() if implementations is None else implementations) if _own_process(i)]
    node = [i for i in found if i.language == NODE and i.serves(*CRUD_CALLS)]
    protocols = {i.protocol for i in node}
    control = [i for i in found if i.language == CONTROL and i.protocol in protocols and i.serves(*CRUD_CALLS)]
    return [i.name for i in node], list(first_of_each(control, lambda i: i.protocol).values())


def named(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """--impl: (its Node.js implementations, the others), registry order; an unknown name stops the run."""
    chosen = select(names)
    return [i.name for i in chosen if i.language == NODE], [i.name for i in chosen if i.language != NODE]


def node_command(command: tuple[str, ...], reducer: bool, trace: bool) -> tuple[str, ...]:
    """The manifest's `node ...` command with V8's memory reducer on or off, and --trace-gc if asked."""
    flags = [part for part in command[1:] if part.startswith("--") and part != FLAG]
    rest = [part for part in command[1:] if not part.startswith("--")]
    return (command[0], *([] if reducer else [FLAG]), *flags, *(["--trace-gc"] if trace else []), *rest)


def collections(log: Path, born: float, measured: tuple[float, float]) -> dict[str, Any]:
    """From a --trace-gc log: the memory-reducing collections (seconds into the process's life,
    committed MB before and after) and the scavenges in each half of the measured cycles."""
    start, end = (t - born for t in measured)
    middle = (start + end) / 2
    reducing, halves = [], [0, 0]
    for line in log.read_text(errors="replace").splitlines():
        found = GC_LINE.search(line)
        if not found:
            continue
        at = int(found.group(1)) / 1000
        if found.group(2) == "Scavenge":
            if start <= at < end:
                halves[at >= middle] += 1
        elif "(reduce)" in found.group(2):
            reducing.append({"s": round(at), "mb": [float(found.group(3)), float(found.group(4))]})
    return {"reducing": reducing, "measured_s": [round(start), round(end)], "scavenges_by_half": halves}


def one(operation: str, reducer: bool, trace: bool, node: Sequence[str], control: Sequence[str]) -> dict[str, Any]:
    """One execution: a fresh lab, the suite's measurement of `operation`, per subject its figures
    (`node`: the services started with the reducer on or off; `control`: as their manifests say)."""
    design = design_from_env()
    names = [*node, *control]
    chosen = [replace(i, command=node_command(i.command, reducer, trace)) if i.name in node else i
              for i in select(names)]
    with running_lab(implementations=chosen) as running:
        suite = Suite(Sites.of(running), running.client, {operation: [*names, design.baseline]}, True, design)
        marks: dict[str, float] = {}
        suite.on_progress = lambda text: marks.setdefault("start", time.time()) if "measuring" in text else None
        result = suite.run(operation)
        marks["end"] = time.time()
        if result.errors:
            raise SystemExit(f"{result.errors}")
        per = execution(result.times, design.describe())
        out = {s: {**per[s], "service_cpu_us": result.cpu_us[s].get("service")} for s in names}
        if trace:
            for name in node:
                born = psutil.Process(running.pids[name]).create_time()
                out[name]["gc"] = collections(running.processes[name].log_path, born, (marks["start"], marks["end"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_reducer", description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=6, help="in all, alternating with and without")
    parser.add_argument("--operation", default="insert", choices=sorted(workload.LATENCY))
    parser.add_argument("--trace-gc", action="store_true", help="V8's --trace-gc in every Node.js service")
    parser.add_argument("--impl", nargs="+", metavar="NAME",
                        help="the implementations (default: the Node.js ones that answer requests, and a Python "
                             "control for each of their protocols)")
    args = parser.parse_args(argv)
    if settings.mode() != "native":
        parser.error("native mode only (it changes the command the lab starts each Node.js service with)")
    node, control = named(args.impl) if args.impl else subjects()
    if not node:
        parser.error("no Node.js implementation to run with and without the memory reducer")
    settings.measuring()
    out: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "operation": args.operation, "design": design_from_env().describe(),
                           "node": node, "control": control, "load_before": os.getloadavg(), "executions": []}
    for n in range(args.executions):
        reducer = n % 4 in (0, 3)  # with, without, without, with, ...
        found = one(args.operation, reducer, args.trace_gc, node, control)
        out["executions"].append({"reducer": reducer, "subjects": found})
        print(f"execution {n + 1}, memory reducer {'on' if reducer else 'off'}:", flush=True)
        for name, s in found.items():
            move = (s["second_half"] - s["first_half"]) / s["ratio"]
            gc = s.get("gc")
            print(f"  {name:<26} service CPU {s['service_cpu_us'] or 0:7,.0f} µs/op   ÷ direct {s['ratio']:6.3f}"
                  f"   halves {move:+6.1%}"
                  + (f"   reducing GCs {[(r['s'], r['mb']) for r in gc['reducing']]}, measured cycles at"
                     f" {gc['measured_s'][0]}–{gc['measured_s'][1]} s, scavenges by half {gc['scavenges_by_half']}"
                     if gc else ""), flush=True)
    by = {r: [e["subjects"] for e in out["executions"] if e["reducer"] == r] for r in (True, False)}
    if by[True] and by[False]:
        print(f"\n{args.operation}, mean over executions: service CPU µs/op and ratio to direct,"
              " memory reducer on → off")
        for name in (*node, *control):
            cpu, ratio = ({r: statistics.fmean(s[name][key] or 0 for s in by[r]) for r in by}
                          for key in ("service_cpu_us", "ratio"))
            print(f"  {name:<26} CPU {cpu[True]:7,.0f} → {cpu[False]:7,.0f}"
                  f"   ratio {ratio[True]:6.3f} → {ratio[False]:6.3f}")
    out["load_after"] = os.getloadavg()
    save("memory-reducer", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
