"""Which CPU placement keeps the ratios to `direct` steady? The experiment
that tried one CPU for everything (README, "One CPU for everything"):

    .venv/bin/python -m benchmarks.cpus [--reps 5] [--cycles 250] [--drop 1]

One lab; `direct` and an implementation of each protocol and language
(SUBJECTS), fetch-one and insert measured as the suite does (warm pairs,
`direct` four visits a cycle), `--reps` repetitions, each running the three
conditions in a fresh random order:

  one    the client, the services and the database on the first CPU
  all    every process on every CPU (the scheduler's choice)
  split  the client on the last CPU, the services and the database on the
         others (as `make load` places k6 and the services)

Printed: each repetition's ratios, then per condition and operation each
ratio's largest deviation from the middle (median) of the repetitions after
the first `--drop` (Node.js's warm-up), the median and worst of those.
Results: results/cpus-<date>.json.

What it found, and why the suite does not pin (README, "One CPU for
everything"): inside one lab, one CPU gave the steadiest ratios; across three
whole runs, each a new lab, it gave the least steady, so it measures only
part of what moves a ratio between runs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
from typing import Any

from benchmarks.interleave import Design, measure
from benchmarks.suite import OPERATION
from lab import dataset, settings
from lab.stack import running_lab
from load.pinning import pin_tree

SUBJECTS = ["direct", "rest/python_flask", "rest/go_nethttp", "grpc/python_grpcio", "grpc/node_grpcjs",
            "graphql/node_yoga", "ws/go_coder", "socketio/node_socketio"]
CONDITIONS = ("one", "all", "split")


def place(lab: Any, condition: str) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    every = frozenset(cpus)
    services, client = {"one": (cpus[:1], cpus[:1]), "all": (cpus, cpus),
                        "split": (cpus[:-1] or cpus, cpus[-1:])}[condition]
    for pid in [lab.database.pid, *(lab.pids[s] for s in SUBJECTS if s in lab.pids)]:
        if pid:
            pin_tree(pid, frozenset(services))
    for tid in os.listdir("/proc/self/task"):  # this process's threads only, not its children
        os.sched_setaffinity(int(tid), frozenset(client) if condition != "all" else every)


def spreads(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each subject's largest deviation of its ratio to direct from the runs' middle."""
    out = {}
    for s in runs[0]:
        if s == "direct":
            continue
        ratios = [r[s] / r["direct"] for r in runs]
        mid = statistics.median(ratios)
        out[s] = max(abs(x / mid - 1) for x in ratios)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cpus", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=250)
    parser.add_argument("--drop", type=int, default=1)
    args = parser.parse_args(argv)
    settings.measuring()
    medians: dict[str, dict[str, list[dict[str, float]]]] = {}
    with running_lab(mode="native", change_streams=False) as lab:
        subjects = [s for s in SUBJECTS if s == "direct" or s in lab.pids]
        clients = {s: lab.client(s) for s in subjects}
        store = lab.store()
        games = store.games
        try:
            for rep in range(args.reps):
                order = list(CONDITIONS)
                random.shuffle(order)
                for condition in order:
                    place(lab, condition)
                    for name in ("fetch-one", "insert"):
                        op = OPERATION[name]
                        dataset.reset(games, op.seed, indexes=op.indexes)
                        hooks: dict[str, Any] = {}
                        if op.creates:
                            hooks = {"after_untimed": lambda s, out: games.delete_one({"_id": out["id"]}),
                                     "between": lambda s, outs: games.delete_many({})}
                        m = measure({s: op.call(clients[s]) for s in subjects},
                                    Design(blocks=args.cycles, warmup=30, baseline_visits=4), seed=rep, **hooks)
                        med = {s: statistics.median(t) for s, t in m.times.items()}
                        medians.setdefault(condition, {}).setdefault(name, []).append(med)
                        print(f"rep {rep} {condition:5} {name:9} direct {med['direct'] * 1e6:4.0f} µs  "
                              + " ".join(f"{s.split('/')[1]} {med[s] / med['direct']:.3f}" for s in subjects[1:]),
                              flush=True)
        finally:
            place(lab, "all")
            store.close()
            for client in clients.values():
                client.close()
    summary = {}
    for condition, ops in medians.items():
        for name, runs in ops.items():
            kept = runs[args.drop:] if len(runs) > args.drop + 1 else runs
            dev = spreads(kept)
            worst = max(dev, key=dev.get)
            summary.setdefault(condition, {})[name] = {"median_dev": statistics.median(dev.values()),
                                                      "worst_dev": dev[worst], "worst": worst, "devs": dev}
            print(f"{condition:5} {name:9} largest deviation from the middle of {len(kept)} reps: "
                  f"median {statistics.median(dev.values()):.1%}, worst {dev[worst]:.1%} ({worst})")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    path = settings.RESULTS / f"cpus-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"args": vars(args), "medians": medians, "summary": summary}, indent=1))
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
