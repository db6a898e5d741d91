"""Why is an interleaved subject slower, and which design gives ratios that
hold? The experiment behind the latency suite's design (README, "How it
measures"), reproducible:

    .venv/bin/python -m benchmarks.study [--reps 3] [--rounds 400] [--operation fetch-one]

Part 1, the cause: the direct baseline (and REST) called back to back, after
an idle gap (sleep), after the same time of busy pure-Python work (no idling,
but other code through the caches), and after an idle gap while the CPUs are
kept from idling by SCHED_IDLE spinners (they yield at once to any real
task). A rise after a sleep but not after busy work is wake-up from idle; a
rise after busy work too is cache (or branch-predictor) eviction.

Part 2, the designs: sequential blocks (the old way), per-call interleaving
(with 0, 1 or 2 discarded calls before each timed one), interleaved blocks
with discarded calls (--keep-warm: per-call with spinners too), `--reps`
times, repetitions interleaved across designs. Printed:
each subject's median ÷ direct's median per repetition, and the spread
(max − min) / median of that ratio across repetitions, and each design's
absolute medians. Results: results/study-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.interleave import Design, measure
from lab import results as lab_results
from lab import workload
from lab.context import host_context
from lab.processes import terminate
from lab.stack import running_lab

SPIN = ("import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "while True:\n    pass\n")


@contextmanager
def keep_warm() -> Iterator[None]:
    """One SCHED_IDLE busy loop per CPU: a CPU never idles (no halt, no deep
    C-state, no vCPU exit to the hypervisor), yet any runnable task preempts it."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
                for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.2)
        yield
    finally:
        for p in spinners:
            terminate(p, 2.0)


def busy(seconds: float) -> None:
    d = {"a": list(range(300)), "b": "x" * 1000}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        json.loads(json.dumps(d))


def gaps(call: Callable[[], Any], n: int, gap: float, how: str) -> float:
    """Median µs of `call` with `gap` seconds of `how` (sleep / busy) before each."""
    out = []
    for _ in range(n):
        if gap:
            (time.sleep if how == "sleep" else busy)(gap)
        start = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - start) / 1e3)
    return statistics.median(out)


def cause(calls: dict[str, Callable[[], Any]], names: list[str], n: int, reps: int) -> dict[str, Any]:
    """What precedes a timed call, drawn at random per call (so every condition
    meets the same machine): the same subject's call (warm), 1 ms of sleep
    (idle), 1 ms of busy pure Python in the client (caches and predictors see
    other code, nothing idles), one call of another subject (what per-call
    interleaving does), or, kept warm by SCHED_IDLE spinners, 1 ms of sleep."""
    import random

    others = [x for x in names if x != "direct"]
    probe = ["direct", *others[:1]]
    conditions = ["same subject", "sleep 1 ms", "busy 1 ms", "another subject's call"]
    found: dict[str, dict[str, list[float]]] = {}
    rng = random.Random(3)
    for _rep in range(reps):
        for subject in probe:
            times: dict[str, list[float]] = {c: [] for c in conditions}
            for _ in range(n):
                condition = rng.choice(conditions)
                if condition == "same subject":
                    calls[subject]()
                elif condition == "sleep 1 ms":
                    time.sleep(0.001)
                elif condition == "busy 1 ms":
                    busy(0.001)
                else:
                    calls[rng.choice([x for x in names if x != subject])]()
                start = time.perf_counter_ns()
                calls[subject]()
                times[condition].append((time.perf_counter_ns() - start) / 1e3)
            for c, t in times.items():
                found.setdefault(subject, {}).setdefault(c, []).append(statistics.median(t))
    print("Part 1: median µs of one call, by what preceded it (drawn at random per call); per repetition")
    for subject, rows in found.items():
        for c, values in rows.items():
            print(f"  {subject:<28}{c:<26}" + "".join(f"{v:>8.0f}" for v in values))
    return found


def save(kind: str, out: dict[str, Any]) -> None:
    """Write a study's results to results/<kind>-<date>.json, and say where."""
    path = lab_results.write(kind, kind, host_context(), out, latest=False)
    print(f"\nwritten to {path}")


def ratios(times: dict[str, list[float]]) -> dict[str, float]:
    base = statistics.median(times["direct"])
    return {s: statistics.median(t) / base for s, t in times.items() if s != "direct"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.study", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--operation", default="fetch-one",
                        choices=[n for n in workload.LATENCY if workload.get(n).repeatable])
    parser.add_argument("--skip-cause", action="store_true")
    parser.add_argument("--keep-warm", action="store_true", help="also per-call with SCHED_IDLE spinners")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "operation": args.operation, "rounds": args.rounds, "load_before": os.getloadavg()}
    with running_lab() as lab:
        store = lab.store()
        op = workload.get(args.operation)
        workload.prepare(store.games, op)
        names = [*lab.endpoints, "direct"]
        clients = {n: lab.client(n) for n in names}
        calls = {n: op.call(c) for n, c in clients.items()}

        if not args.skip_cause:
            out["cause"] = cause(calls, names, args.rounds * 2, args.reps)

        r = args.rounds
        designs: dict[str, tuple[Design, bool]] = {
            "sequential": (Design(block=r, discard=50, blocks=1, warmup=0), False),
            "per-call": (Design(block=1, discard=0, blocks=r, warmup=30), False),
            "per-call, 1 discarded": (Design(block=1, discard=1, blocks=r, warmup=30), False),
            "per-call, 2 discarded": (Design(block=1, discard=2, blocks=r, warmup=30), False),
            "blocks 5 (2 discarded)": (Design(block=5, discard=2, blocks=r // 5, warmup=30), False),
            "blocks 20 (3 discarded)": (Design(block=20, discard=3, blocks=r // 20, warmup=30), False),
        }
        if args.keep_warm:
            designs["per-call, kept warm"] = (Design(block=1, discard=0, blocks=r, warmup=30), True)
        results: dict[str, list[dict[str, Any]]] = {d: [] for d in designs}
        for rep in range(args.reps):
            for label, (design, warm) in designs.items():
                t0 = time.monotonic()
                if warm:
                    with keep_warm():
                        times = measure(calls, design, seed=rep).times
                else:
                    times = measure(calls, design, seed=rep).times
                results[label].append({
                    "seconds": time.monotonic() - t0,
                    "median_us": {s: statistics.median(t) * 1e6 for s, t in times.items()},
                    "ratio": ratios(times)})
                print(f"rep {rep + 1} {label}: {time.monotonic() - t0:.1f} s", flush=True)
        out["designs"] = results
        out["load_after"] = os.getloadavg()
        for c in clients.values():
            c.close()
        store.close()

    print(f"\nPart 2: {args.operation}, {r} timed calls per subject; ratio to direct per repetition; "
          "spread = (max − min) / median")
    for label, reps in results.items():
        print(f"\n{label}  (median µs per rep: " + "; ".join(
            ", ".join(f"{s.split('/')[0]} {v:.0f}" for s, v in rep["median_us"].items()) for rep in reps) + ")")
        for subject in reps[0]["ratio"]:
            values = [rep["ratio"][subject] for rep in reps]
            spread = (max(values) - min(values)) / statistics.median(values)
            print(f"  {subject:<28}" + "".join(f"{v:>7.2f}" for v in values) + f"   spread {spread:6.1%}")
    save("study", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
