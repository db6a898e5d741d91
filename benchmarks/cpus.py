"""Which CPU placement keeps the ratios to `direct` steady? The experiment
that tried one CPU for everything (benchmarks/README.md, "One CPU for everything"):

    .venv/bin/python -m benchmarks.cpus [--reps 5] [--cycles 250] [--drop 1] [--impl NAME ...]

One lab; `direct` and an implementation of each protocol and language
(default_subjects: per protocol and language of the manifests, the first
implementation in registry order that serves the CRUD operations; --impl
names others), fetch-one and insert measured as the suite does (warm pairs,
`direct` four visits a cycle), `--reps` repetitions, each running the three
conditions in a fresh random order:

  one    the client, the services and the database on the first CPU
  all    every process on every CPU (the scheduler's choice)
  split  the client on the last CPU, the services and the database on the
         others (as `make load` places Locust and the services)

Printed: each repetition's medians ÷ direct's, then per condition and operation each
ratio's largest deviation from the middle (median) of the repetitions after
the first `--drop` (Node.js's warm-up), the median and worst of those.
Results: results/cpus-<date>.json.

What it found, and why the suite does not pin (benchmarks/README.md, "One CPU for
everything"): inside one lab, one CPU gave the steadiest ratios; across three
whole runs, each a new lab, it gave the least steady, so it measures only
part of what moves a ratio between runs.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.interleave import Design, measure
from benchmarks.study import ratios
from benchmarks.suite import cleanup
from lab import dataset, settings, workload
from lab import results as lab_results
from lab.context import host_context
from lab.host.pinning import pin_tree
from lab.registry import CRUD_CALLS, Implementation, first_of_each, select
from lab.stack import running_lab
from lab.stats.runs import spread

CONDITIONS = ("one", "all", "split")


def default_subjects(implementations: Sequence[Implementation] | None = None) -> list[str]:
    """`direct` and, per protocol and language (the manifests' fields), the first implementation
    (registry order) that serves the CRUD operations; `implementations`: the registry's (select())."""
    serving = [i for i in (select() if implementations is None else implementations) if i.serves(*CRUD_CALLS)]
    return ["direct", *first_of_each(serving, lambda i: (i.protocol, i.language)).values()]


def chosen(names: Sequence[str] | None) -> list[str]:
    """`direct` and the implementations named (--impl), checked against the registry (an unknown
    name or a missing toolchain stops the run), or default_subjects()."""
    return ["direct", *(i.name for i in select(names))] if names else default_subjects()


def place(lab: Any, condition: str, subjects: Sequence[str]) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    every = frozenset(cpus)
    services, client = {"one": (cpus[:1], cpus[:1]), "all": (cpus, cpus),
                        "split": (cpus[:-1] or cpus, cpus[-1:])}[condition]
    for pid in [lab.database.pid, *(lab.pids[s] for s in subjects if s in lab.pids)]:
        if pid:
            pin_tree(pid, frozenset(services))
    for tid in os.listdir("/proc/self/task"):  # this process's threads only, not its children
        os.sched_setaffinity(int(tid), frozenset(client) if condition != "all" else every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cpus", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=250)
    parser.add_argument("--drop", type=int, default=1)
    parser.add_argument("--impl", nargs="+", metavar="NAME",
                        help="the implementations measured beside direct (default: one per protocol and language)")
    args = parser.parse_args(argv)
    wanted = chosen(args.impl)
    settings.measuring()
    per_rep: dict[str, dict[str, list[dict[str, float]]]] = {}  # condition -> operation -> ratios
    with running_lab(mode="native", change_streams=False) as lab:
        subjects = [s for s in wanted if s == "direct" or s in lab.pids]
        clients = {s: lab.client(s) for s in subjects}
        store = lab.store()
        games = store.games
        try:
            for rep in range(args.reps):
                order = list(CONDITIONS)
                random.shuffle(order)
                for condition in order:
                    place(lab, condition, subjects)
                    for name in ("fetch-one", "insert"):
                        op = workload.get(name)
                        dataset.reset(games, op.seed, indexes=op.indexes)
                        m = measure({s: op.call(clients[s]) for s in subjects},
                                    Design(blocks=args.cycles, warmup=30, baseline_visits=4), seed=rep,
                                    **cleanup(op, lambda subject: games))
                        to_direct = ratios(m.times)
                        per_rep.setdefault(condition, {}).setdefault(name, []).append(to_direct)
                        direct_us = statistics.median(m.times["direct"]) * 1e6
                        print(f"rep {rep} {condition:5} {name:9} direct {direct_us:4.0f} µs  "
                              + " ".join(f"{s.split('/')[1]} {r:.3f}" for s, r in to_direct.items()), flush=True)
        finally:
            place(lab, "all", subjects)
            store.close()
            for client in clients.values():
                client.close()
    summary = {}
    for condition, ops in per_rep.items():
        for name, runs in ops.items():
            kept = runs[args.drop:] if len(runs) > args.drop + 1 else runs
            dev = {s: spread([r[s] for r in kept])["max_deviation"] for s in kept[0]}
            worst = max(dev, key=dev.get)
            summary.setdefault(condition, {})[name] = {"median_dev": statistics.median(dev.values()),
                                                      "worst_dev": dev[worst], "worst": worst, "devs": dev}
            print(f"{condition:5} {name:9} largest deviation from the middle of {len(kept)} reps: "
                  f"median {statistics.median(dev.values()):.1%}, worst {dev[worst]:.1%} ({worst})")
    path = lab_results.write("cpus", "cpus", host_context(),
                             {"args": vars(args), "ratios_to_direct": per_rep, "summary": summary}, latest=False)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
