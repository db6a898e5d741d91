"""Before and after a tuning, in one interleaved run: an implementation as
committed at --before REV (built from that revision's tree into a temporary
directory) beside the working tree's, and the direct baseline, visited in a
fresh random order every cycle (a discarded call, then --block timed calls),
the service tree's CPU read around each block (lab.resources.CpuClock).

    python -m profiling.ab --impl grpc/go_grpc graphql/go_gqlgen --before HEAD~1 --operation fetch-100

Prints, per variant: service CPU µs per call (the median over cycles, with
the spread of its five consecutive fifths: a repeat's range), the latency
median, the ratio to direct with its 99 % CI and the CPU ratio after ÷ before
with its 99 % CI (lab.stats.statistics, paired by cycle). Writes
results/profiles/ab-latest.json. Only implementations with a build step (Go)
can be built at another revision; Python and Node.js run from the tree."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import random
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from lab import settings, workload
from lab.registry import Implementation, select
from lab.resources import CpuClock
from lab.stack import running_lab
from lab.stats.statistics import PairedBootstrap, rank
from profiling.run import OUT, profilable

CONFIDENCE = 0.99


def build_at(impl: Implementation, rev: str, work: Path) -> Implementation:
    """`impl` built from revision `rev`'s tree, as a copy named "<impl>@<rev>"."""
    root = work / "tree"
    if not root.exists():
        archive = subprocess.run(["git", "archive", rev, "services", "contract"], cwd=settings.ROOT,
                                 capture_output=True, check=True, timeout=120).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root)  # our own revision's tree
    out = work / impl.name.replace("/", "-")
    out.mkdir(parents=True)
    done = subprocess.run(impl.expand(impl.build_command, root=root, out=out), cwd=root, capture_output=True,
                          text=True, timeout=1200)
    if done.returncode != 0:
        raise SystemExit(f"building {impl.name} at {rev} failed:\n{done.stderr[-2000:]}")
    return dataclasses.replace(impl, name=f"{impl.name}@{rev}", build_command=(),
                               command=tuple(impl.expand(impl.command, root=root, out=out)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.ab", description=__doc__.splitlines()[0])
    p.add_argument("--impl", nargs="+", required=True)
    p.add_argument("--before", required=True, help="the git revision of the 'before' variant")
    p.add_argument("--operation", type=profilable, default="fetch-100")
    p.add_argument("--cycles", type=int, default=200)
    p.add_argument("--block", type=int, default=5, help="timed calls per visit")
    p.add_argument("--warmup", type=int, default=200, help="untimed calls per subject first")
    args = p.parse_args(argv)
    settings.measuring()
    op = workload.get(args.operation)
    impls = select(args.impl or None)
    with tempfile.TemporaryDirectory(prefix="protolab-ab-") as work:
        befores = [build_at(i, args.before, Path(work)) for i in impls]
        with running_lab(implementations=[*impls, *befores]) as lab:
            store = lab.store()
            try:
                workload.prepare(store.games, op)
            finally:
                store.close()
            subjects = [i.name for i in impls] + [b.name for b in befores] + ["direct"]
            clients = {s: lab.client(s) for s in subjects}
            calls = {s: op.call(c) for s, c in clients.items()}
            for call in calls.values():
                op.check(call())
                for _ in range(args.warmup):
                    call()
            clocks = {s: CpuClock({"service": lab.pids[s]}) for s in subjects if s in lab.pids}
            times: dict[str, list[float]] = {s: [] for s in subjects}
            cpu: dict[str, list[float]] = {s: [] for s in clocks}  # µs per call, one value per cycle
            rng = random.Random(int(time.time()))
            started = time.monotonic()
            for _ in range(args.cycles):
                order = subjects[:]
                rng.shuffle(order)
                for s in order:
                    calls[s]()  # discarded
                    before = clocks[s].read() if s in clocks else None
                    for _ in range(args.block):
                        t0 = time.perf_counter_ns()
                        calls[s]()
                        times[s].append((time.perf_counter_ns() - t0) / 1e3)
                    if before is not None:
                        after = clocks[s].read(closing=True)
                        cpu[s].append((after["service"] - before["service"]) / args.block / 1e3)
            seconds = time.monotonic() - started
            for c in clients.values():
                c.close()
    latency = rank(times, args.block, "direct", confidence=CONFIDENCE)
    cpu_boot = PairedBootstrap({s: [[v] for v in values] for s, values in cpu.items()}, CONFIDENCE)
    rows = []
    for impl, before in zip(impls, befores, strict=True):
        cpu_ratio, cpu_ci = cpu_boot.ratio(impl.name, before.name)
        for name in (before.name, impl.name):
            fifths = [statistics.median(cpu[name][i::5]) for i in range(5)]
            rows.append({"subject": name, "cpu_us_per_call": round(statistics.median(cpu[name]), 1),
                         "cpu_fifths_range": [round(min(fifths), 1), round(max(fifths), 1)],
                         "median_us": round(statistics.median(times[name]), 1),
                         "to_direct": latency["to_baseline"].get(name)})
        rows.append({"subject": f"{impl.name}: after ÷ before, service CPU", "ratio": round(cpu_ratio, 3),
                     "ci": [round(cpu_ci[0], 3), round(cpu_ci[1], 3)]})
    for r in rows:
        if "ratio" in r:
            print(f"{r['subject']}: {r['ratio']:.2f} (99 % CI {r['ci'][0]:.2f}–{r['ci'][1]:.2f})")
        else:
            td = r["to_direct"] or {}
            print(f"{r['subject']:34} service CPU {r['cpu_us_per_call']:8,.0f} µs/call (fifths "
                  f"{r['cpu_fifths_range'][0]:,.0f}–{r['cpu_fifths_range'][1]:,.0f})  median {r['median_us']:8,.0f} µs"
                  f"  × direct {td.get('ratio', float('nan')):.2f} (99 % CI {td.get('ci', [0, 0])[0]:.2f}–"
                  f"{td.get('ci', [0, 0])[1]:.2f})")
    print(f"direct median {statistics.median(times['direct']):,.0f} µs; {args.cycles} cycles × {args.block} calls, "
          f"{seconds:.0f} s; latency chain: {latency['chain']}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "ab-latest.json").write_text(json.dumps({
        "schema": {"name": "protolab.profile-ab", "version": 1}, "before": args.before,
        "operation": args.operation, "cycles": args.cycles, "block": args.block, "seconds": round(seconds, 1),
        "rows": rows, "latency": latency}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
