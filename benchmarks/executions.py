"""Does a subject's ratio to `direct` depend on which process execution of its
service was measured? The experiment behind benchmarks/README.md, "Or the service's
own process?", reproducible:

    .venv/bin/python -m benchmarks.executions [--executions 4] [--operation insert]
                                              [--twins | --two-databases] [SUBJECT ...]

Each execution starts the subject's service and a database afresh
(lab.stack.running_lab) and measures it against `direct` exactly as the
latency suite does (benchmarks/suite.py: the same design, warm-up counts,
settling cycles and clean-up; LAB_BENCH_* settings apply), the subjects'
executions in a fresh random order per repetition. The subjects named, or by
default one per language (default_subjects: the runtimes side by side on
equal terms, from the manifests' fields): the first protocol, in registry
order, implemented in every language that serves the CRUD operations, and
its first implementation in each language. Printed per subject: the
ratio of medians in every execution and in each half of its cycles, the
spread between executions, and how far the halves of one execution moved
(a runtime still settling moves one way; noise both). Results:
results/executions-<date>.json.

With --twins each execution runs a second process of the subject beside the
first (lab.stack.second_process: the same build, database and design, the
two measured interleaved as any two subjects are), and prints the ratio of
the first to the second with its 99 % interval, paired by cycle: whatever the
machine does lands on both, so a ratio away from 1 beyond its interval is the
process, not the moment. Executions that differ while their twins agree
differ in what both processes share: the moment, the database, the client.

With --two-databases (fetch-one, fetch-100) the second process runs on a
second database of its own, seeded alike, and `direct` is measured on both
("direct#2" on the second), all interleaved: the second database's `direct`
÷ the first's says whether two database processes at the same moment differ,
and the twin's ratio is taken to its own database's `direct`. Executions that
move while the two databases agree move with the moment, not the database.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from benchmarks.study import save
from benchmarks.suite import Suite, design_from_env
from lab import dataset, settings, workload
from lab.database import database
from lab.registry import CRUD_CALLS, Implementation, first_of_each, select
from lab.running import Sites
from lab.stack import Lab, running_lab, second_process
from lab.stats import runs


def default_subjects(implementations: Sequence[Implementation] | None = None) -> list[str]:
    """One implementation per language, all of one protocol: the first protocol (registry order)
    that every language's CRUD-serving implementations cover, and its first implementation in each
    language (registry order); `implementations`: the registry's (select())."""
    serving = [i for i in (select() if implementations is None else implementations) if i.serves(*CRUD_CALLS)]
    languages = {i.language for i in serving}
    first = first_of_each(serving, lambda i: (i.protocol, i.language))
    for protocol in dict.fromkeys(p for p, _ in first):  # registry order
        names = [name for (p, _), name in first.items() if p == protocol]
        if len(names) == len(languages):
            return names
    return []


def execution(times: dict[str, list[float]], design: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per subject of one execution: its ratio of medians to `direct`, and that
    of the first and of the second half of its cycles (design:
    Design.describe(); an unfinished last cycle is left out of the halves)."""
    first = runs.cycles_taken({"first_half": times}, design, lambda c, n: c < n // 2)
    second = runs.cycles_taken({"second_half": times}, design, lambda c, n: c >= n // 2)
    found = runs.ratios({"ratio": times, **first, **second}, design, "medians")
    return {subject: {key: by_subject[subject] for key, by_subject in found.items()} for subject in found["ratio"]}


def twin_ratio(ranking: dict[str, Any], subject: str, twin: str) -> dict[str, Any]:
    """subject ÷ twin, paired by cycle, with its interval, from the suite's ranking (lab.stats.statistics.rank)."""
    pair = next(p for p in ranking["pairs"] if {p["a"], p["b"]} == {subject, twin})
    low, high = pair["ci"]
    if pair["a"] == subject:
        return {"ratio": pair["ratio"], "ci": [low, high]}
    return {"ratio": 1 / pair["ratio"], "ci": [1 / high, 1 / low]}


def summary(executions: list[dict[str, Any]]) -> dict[str, float]:
    """Across one subject's executions: the spread (max − min) / median of their
    ratios, and the mean move from one execution's first half to its second
    (signed, and absolute), in parts of its ratio. With twins: the spread of
    the first process ÷ the second across executions, and in how many of them
    that ratio's interval excluded 1; with two databases, the same of the second
    database's `direct` ÷ the first's (db_between, db_apart)."""
    between = runs.spread([e["ratio"] for e in executions])
    moves = [(e["second_half"] - e["first_half"]) / e["ratio"] for e in executions]
    out = {"between": (between["high"] - between["low"]) / between["median"],
           "half_move_mean": statistics.fmean(moves), "half_move_abs_mean": statistics.fmean(abs(m) for m in moves)}
    for key, prefix in (("twin", "twin"), ("databases", "db")):  # first ÷ second process; second ÷ first database
        pairs = [e[key] for e in executions if key in e]
        if pairs:
            apart = runs.spread([t["ratio"] for t in pairs])
            out[f"{prefix}_between"] = (apart["high"] - apart["low"]) / apart["median"]
            out[f"{prefix}_apart"] = sum(1 for t in pairs if t["ci"][0] > 1 or t["ci"][1] < 1)
    return out


@contextmanager
def beside(lab: Lab, subject: str, operation: str, how: str) -> Iterator[tuple[list[str], Callable[[str], Any]]]:
    """What is measured beside `subject` and `direct` in one execution (how: "alone",
    "twins" or "two-databases"), and the client of each subject's name."""
    if how == "alone":
        yield [], lab.client
        return
    if how == "twins":
        with second_process(lab, subject) as twin:
            yield [twin], lab.client
        return
    op = workload.get(operation)
    if op.creates:  # the suite clears the first database only
        raise SystemExit("--two-databases: fetch-one or fetch-100")
    with database() as db, second_process(lab, subject, db) as twin:
        other = Lab(mode=lab.mode, database=db, implementations=[])
        store = other.store()
        try:
            dataset.reset(store.games, op.seed, indexes=op.indexes)  # as Suite.run seeds the first
        finally:
            store.close()
        yield [twin, "direct#2"], lambda name: other.client("direct") if name == "direct#2" else lab.client(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.executions", description=__doc__.splitlines()[0])
    parser.add_argument("subjects", nargs="*", help="implementations (default: one per language, of one protocol)")
    parser.add_argument("--executions", type=int, default=4, help="process executions per subject")
    parser.add_argument("--operation", default="insert", choices=sorted(workload.LATENCY))
    parser.add_argument("--seed", type=int, default=1, help="of the executions' order")
    parser.add_argument("--twins", action="store_true", help="a second process of the subject beside the first")
    parser.add_argument("--two-databases", action="store_true",
                        help="the second process on a second database, with direct on both")
    args = parser.parse_args(argv)
    args.subjects = args.subjects or default_subjects()
    if not args.subjects:
        parser.error("no protocol has a CRUD implementation in every language: name the subjects")
    how = "two-databases" if args.two_databases else "twins" if args.twins else "alone"
    if how == "two-databases" and workload.get(args.operation).creates:
        parser.error("--two-databases measures fetch-one or fetch-100 (the suite clears the first database only)")
    settings.measuring()
    design = design_from_env()
    out: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "operation": args.operation, "design": design.describe(),
                           "load_before": os.getloadavg(), "executions": {s: [] for s in args.subjects}}
    rng = random.Random(args.seed)
    for rep in range(args.executions):
        order = list(args.subjects)
        rng.shuffle(order)
        for subject in order:
            with running_lab(names=[subject]) as lab, beside(lab, subject, args.operation, how) as (extra, client_of):
                subjects = [subject, *extra, design.baseline]
                suite = Suite(Sites.of(lab), client_of, {args.operation: subjects}, True, design)
                result = suite.run(args.operation)
                if result.errors:
                    raise SystemExit(f"{subject}: {result.errors}")
                per = execution(result.times, design.describe())
                run = {**per[subject], "service_cpu_us": result.cpu_us[subject].get("service"),
                       "seconds": round(result.seconds, 1)}
                if extra:
                    twin = extra[0]  # its ratio to its own database's direct
                    own = per["direct#2"]["ratio"] if "direct#2" in per else 1.0
                    run["twin"] = {**twin_ratio(result.ranking, subject, twin), "to_direct": per[twin]["ratio"] / own,
                                   "service_cpu_us": result.cpu_us[twin].get("service")}
                if "direct#2" in extra:
                    run["databases"] = twin_ratio(result.ranking, "direct#2", design.baseline)
            out["executions"][subject].append(run)
            print(f"execution {rep + 1} {subject:<24} ratio {run['ratio']:.3f} (halves {run['first_half']:.3f}"
                  f" → {run['second_half']:.3f}), service CPU {run['service_cpu_us'] or 0:,.0f} µs/op"
                  + (f"; its twin {run['twin']['to_direct']:.3f}, first ÷ second {run['twin']['ratio']:.3f}"
                     f" ({run['twin']['ci'][0]:.3f}–{run['twin']['ci'][1]:.3f})" if extra else "")
                  + (f"; second database's direct ÷ first's {run['databases']['ratio']:.3f}"
                     f" ({run['databases']['ci'][0]:.3f}–{run['databases']['ci'][1]:.3f})"
                     if "databases" in run else ""), flush=True)
    out["load_after"] = os.getloadavg()
    print(f"\n{args.operation}: ratio of medians to {design.baseline} per process execution; between = spread "
          "(max − min) / median; half move = second half − first half of one execution, ÷ its ratio")
    for subject, done in out["executions"].items():
        s = out.setdefault("summary", {})[subject] = summary(done)
        print(f"  {subject:<24}" + "".join(f"{r['ratio']:>7.3f}" for r in done)
              + f"   between {s['between']:6.1%}   half move {s['half_move_mean']:+6.1%}"
                f" (|move| {s['half_move_abs_mean']:5.1%})"
              + (f"   twins: first ÷ second spread {s['twin_between']:5.1%}, {s['twin_apart']} of {len(done)}"
                 " beyond their interval" if "twin_between" in s else "")
              + (f"; databases: second ÷ first spread {s['db_between']:5.1%}, {s['db_apart']} beyond"
                 if "db_between" in s else ""))
    save("executions", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
