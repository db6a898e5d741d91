"""The latency suite's operations, measured interleaved once per operation,
and handed to pytest-benchmark one subject at a time.

Design (see README, "How it measures", and `python -m benchmarks.study`):
every cycle visits every selected subject of the operation once in a fresh
random order; a visit is DISCARD untimed calls then BLOCK timed calls. With
CYCLES cycles every subject gets CYCLES × BLOCK rounds. The default, one
discarded and one timed call per visit ("warm pairs"), had the steadiest
ratios of the designs measured (README). Around each block the
CPU time of the client process, the subject's service tree and the database
is read (lab.resources.CpuClock), so every figure of a subject comes from the
same rounds. The baseline, the denominator of every ratio, is visited
LAB_BENCH_BASELINE_VISITS times a cycle. Before the first cycle every subject
is called untimed LAB_BENCH_WARMUP times, or as often as its manifest's
`[bench] warmup_calls` says (the Node.js services: 6,000), at most
LAB_BENCH_WARMUP_MAX_S seconds each; then LAB_BENCH_SETTLE_CYCLES untimed
cycles. Counts, not seconds: every run gives every subject the same history
(benchmarks/interleave.py). The operation stops at the first of a few fixed looks
(100, 200, 400, 800 cycles) where every ratio to the baseline is within
±LAB_BENCH_TARGET (0.02), its interval corrected for the looks
(lab/stats/sequential.py); 0: the fixed design. Settings: LAB_BENCH_CYCLES (800, at most),
LAB_BENCH_TARGET (0.02), LAB_BENCH_FIRST_LOOK (100),
LAB_BENCH_BLOCK (1), LAB_BENCH_DISCARD (1), LAB_BENCH_WARMUP (30),
LAB_BENCH_WARMUP_MAX_S (45), LAB_BENCH_WARMUP_LANES (4), LAB_BENCH_SETTLE_CYCLES (100),
LAB_BENCH_BASELINE_VISITS (4).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks.interleave import Design, measure
from lab import dataset, workload
from lab.axes import DEFAULT_MODE, LOOPBACK, Site, parse_subject, references, value_axis
from lab.resources import CpuClock
from lab.running import Sites
from lab.stats import noise
from lab.stats.sequential import Rule, resamples_for, to_baseline
from lab.stats.statistics import CONFIDENCE, PairedBootstrap, compare, cycles_of, rank


def operations() -> list[str]:
    """The operations measured: LAB_BENCH_OPERATIONS (a comma list of the workload table's
    names), by default the table's latency rows (insert, fetch-one, fetch-100)."""
    names = [n.strip() for n in os.environ.get("LAB_BENCH_OPERATIONS", "").split(",") if n.strip()]
    for name in names:
        workload.get(name)  # an unknown name stops the run here, saying which
    return names or list(workload.LATENCY)


def design_from_env() -> Design:
    def get(name: str, default: int) -> int:
        return int(os.environ.get(f"LAB_BENCH_{name}", default))
    return Design(block=get("BLOCK", 1), discard=get("DISCARD", 1), blocks=get("CYCLES", 800),
                  warmup=get("WARMUP", 30), warmup_max_s=workload.warmup_max_s(),
                  warmup_lanes=get("WARMUP_LANES", 4),
                  settle_cycles=get("SETTLE_CYCLES", 100),
                  baseline_visits=get("BASELINE_VISITS", 4))


def max_seconds(operation: str) -> float | None:
    """LAB_BENCH_MAX_S: the measured cycles' time budget, one number for every operation or
    per operation ("fetch-1=40,fetch-100=120"); the cycles stop after the one that ends past it
    (LAB_BENCH_CYCLES stays the most). make sweep sets it from its time plan."""
    text = os.environ.get("LAB_BENCH_MAX_S", "").strip()
    if not text:
        return None
    if "=" not in text:
        return float(text)
    budgets = dict(part.split("=", 1) for part in text.split(",") if part.strip())
    return float(budgets[operation]) if operation in budgets else None


def cleanup(op: workload.Operation, collection: Callable[[str], Any]) -> dict[str, Callable[..., None]]:
    """measure()'s hooks for an operation that creates documents: each untimed
    call's document deleted, the collection (the subject's site's) emptied after
    every block, both outside the timed windows, so every block starts from the same state."""
    if not op.creates:
        return {}
    return {"after_untimed": lambda subject, out: collection(subject).delete_one({"_id": out["id"]}),
            "between": lambda subject, outs: collection(subject).delete_many({})}


@dataclass
class Result:
    operation: str
    design: Design
    times: dict[str, list[float]] = field(default_factory=dict)
    rankings: dict[str, Any] = field(default_factory=dict)    # site suffix ("" native on loopback) -> its ranking
    comparisons: list[dict[str, Any]] = field(default_factory=list)  # one axis changed: a ÷ b, paired
    cpu_us: dict[str, dict[str, float]] = field(default_factory=dict)   # subject -> process -> µs per op
    wall_us: dict[str, float] = field(default_factory=dict)             # subject -> µs per op, timed windows
    errors: dict[str, BaseException] = field(default_factory=dict)
    settle: dict[str, Any] = field(default_factory=dict)                # Measurement.settle
    gc: dict[str, Any] = field(default_factory=dict)                    # Measurement.gc
    ranking: dict[str, Any] = field(default_factory=dict)             # the first site's, to_baseline of all
    seconds: float = 0.0
    stopping: dict[str, Any] = field(default_factory=dict)  # how its cycles ended, and why (Measurement.stopped)
    confidence: float = CONFIDENCE                          # the level of the intervals quoted (the stop's look)


class Suite:
    """One per benchmark session: measures an operation on first request."""

    def __init__(self, sites: Sites, client_of: Callable[[str], Any], selected: dict[str, list[str]],
                 enabled: bool, design: Design | None = None, rule: Rule | None = None):
        self.sites = sites
        self.client_of = client_of
        self.selected = selected
        self.enabled = enabled
        self.design = design or design_from_env()
        self.rule = rule or Rule.from_env(cap=self.design.blocks)
        self.results: dict[str, Result] = {}
        self.noise_before: dict[str, Any] | None = None
        self.on_measured: Callable[[Result], None] | None = None  # called as each operation is measured
        self.on_progress: Callable[[str], None] | None = None  # how far an operation's measurement is

    def warmup_calls(self, subjects: list[str]) -> dict[str, int]:
        """The subjects whose manifest asks for their own number of warm-up calls."""
        found = {}
        for subject in subjects:
            impl = self.sites.implementation_of(subject)
            if impl is not None and impl.warmup_calls is not None:
                found[subject] = impl.warmup_calls
        return found

    def clocks(self, subjects: list[str]) -> dict[str, CpuClock]:
        out = {}
        for s in subjects:
            db_pid = getattr(self.sites.lab_of(s).database, "pid", None)
            pid = self.sites.pid(s)
            out[s] = CpuClock({**({"database": db_pid} if db_pid else {}), **({"service": pid} if pid else {})})
        return out

    def run(self, name: str) -> Result:
        if name in self.results:
            return self.results[name]
        if self.enabled and self.noise_before is None:
            self.noise_before = noise.snapshot()
        op = workload.get(name)
        result = self.results[name] = Result(name, self.design)
        stores = {site: lab.store() for site, lab in self.sites.labs.items()}
        collections = {site: store.games for site, store in stores.items()}

        def collection(subject: str) -> Any:
            return collections[parse_subject(subject)[1]]
        try:
            for games in collections.values():
                dataset.reset(games, op.seed, indexes=op.indexes)
            calls = {}
            for subject in self.selected.get(name, []):
                try:
                    call = op.call(self.client_of(subject))
                    out = call()
                    op.check(out)
                    if op.creates:
                        collection(subject).delete_many({})
                    calls[subject] = call
                except Exception as exc:  # this subject's test fails with it; the others are measured
                    result.errors[subject] = exc
            if not self.enabled or not calls:
                return result

            started = time.monotonic()
            looks: list[dict[str, Any]] = []
            rule = self.rule

            def look(times: dict[str, list[float]], cycles: int) -> bool:
                """The sequential rule's look after `cycles` cycles (lab.stats.sequential)."""
                began = time.monotonic()
                decision = rule.decide(cycles, ratios_to_baseline(times, self.design, rule.level_at(cycles)))
                decision["seconds"] = round(time.monotonic() - started, 1)  # since this operation's warm-up began
                decision["bootstrap_s"] = round(time.monotonic() - began, 2)
                looks.append(decision)
                if self.on_progress is not None:
                    self.on_progress(f"({name}: look at {cycles} cycles, {decision['seconds']:.0f} s in: "
                                     f"{look_text(decision)}" + (f"; stop: {decision['reason']})"
                                                                 if decision["stop"] else "; going on)"))
                return decision["stop"]
            design = replace(self.design, max_seconds=max_seconds(name))
            measured = measure(calls, design, seed=int(time.time()), clocks=self.clocks(list(calls)),
                               warmup=self.warmup_calls(list(calls)), **cleanup(op, collection),
                               progress=None if self.on_progress is None else
                               lambda text: self.on_progress(f"({name}: {text})"),
                               looks=rule.looks, look=look if rule.target else None)
            result.seconds = time.monotonic() - started
            result.design = replace(design, blocks=measured.cycles)
            result.confidence = rule.level_at(measured.cycles)
            last = looks[-1] if looks and looks[-1]["cycles"] == measured.cycles else {}
            # how the operation's cycles ended, in one record: measure()'s (where, the cap, the seconds,
            # what stopped them) with the sequential rule's looks, level and reason
            result.stopping = {**rule.describe(), **measured.stopped, "level": result.confidence,
                               "reason": last.get("reason") or
                               f"{measured.stopped.get('stopped_by', 'cycles')}: {measured.cycles} cycles",
                               "looks_taken": looks}
            result.times = measured.times
            result.settle = measured.settle
            result.gc = measured.gc
            for subject, per_process in measured.cpu_ns.items():
                n = len(measured.times[subject])
                result.cpu_us[subject] = {p: ns / n / 1e3 for p, ns in per_process.items()}
                result.wall_us[subject] = measured.wall_ns[subject] / n / 1e3
            rank_sites(result, result.confidence)
            if self.on_measured is not None:
                self.on_measured(result)
        finally:
            for games in collections.values():
                if op.creates:
                    dataset.reset(games, [], indexes=False)
            for store in stores.values():
                store.close()
        return result


def by_site(times: dict[str, list[float]]) -> dict[Site, dict[str, list[float]]]:
    out: dict[Site, dict[str, list[float]]] = {}
    for subject, values in times.items():
        out.setdefault(parse_subject(subject)[1], {})[subject] = values
    return out


def ratios_to_baseline(times: dict[str, list[float]], design: Design, level: float) -> dict[str, dict[str, Any]]:
    """Every subject's ratio to its site's baseline, paired by cycle, with its interval at
    `level` (lab.stats.sequential.to_baseline, site by site)."""
    out: dict[str, dict[str, Any]] = {}
    per_cycle = design.per_cycle(list(times))
    for site, values in by_site(times).items():
        out.update(to_baseline({s: cycles_of(v, per_cycle[s]) for s, v in values.items()},
                               site.subject(design.baseline), level))
    return out


def look_text(decision: dict[str, Any]) -> str:
    """A look's widths, for the terminal and the table's last line."""
    if not decision.get("ratios"):
        return "no ratio yet"
    return (f"{decision['level']:.4%} intervals, half-widths median ±{decision['median_half_width']:.1%}, "
            f"widest ±{decision['worst_half_width']:.1%} ({decision['widest']})")


def rank_sites(result: Result, confidence: float = CONFIDENCE) -> None:
    """Each site's ranking against its own `direct`, and the comparisons along one axis,
    at `confidence` (the level of the look where the sequential rule stopped)."""
    to_baseline: dict[str, Any] = {}
    for site, times in by_site(result.times).items():
        ranking = rank(times, result.design.per_cycle(list(times)), baseline=site.subject(result.design.baseline),
                       confidence=confidence, resamples=resamples_for(confidence))
        result.rankings[site.suffix] = ranking
        to_baseline.update(ranking.get("to_baseline", {}))
    first = next(iter(result.rankings.values()), {})
    result.ranking = {**first, "to_baseline": to_baseline}
    result.comparisons = comparisons(result.times, result.design.per_cycle(list(result.times)), confidence)


def counterparts(subjects: list[str]) -> list[tuple[str, str, str]]:
    """(a, b, axis): pairs of the run's subjects that differ along one axis only, b the
    reference: a variant and its base at one site, or the value its axis names as its
    reference (lab/axes.py, Value.reference_for: h2 ÷ h1tls) ("variant"), a subject in Docker
    and natively ("mode"), across a path and on loopback ("path")."""
    present = set(subjects)
    out = []
    for subject in subjects:
        name, site = parse_subject(subject)
        base, *values = name.split("+")
        if base != name and site.subject(base) in present:
            out.append((subject, site.subject(base), "variant"))
        for value in values:
            axis = value_axis(value)
            for reference in references(axis, value) if axis else ():
                other = site.subject("+".join([base, *(reference if v == value else v for v in values)]))
                if other in present:
                    out.append((subject, other, "variant"))
        if site.mode != DEFAULT_MODE and Site(DEFAULT_MODE, site.path).subject(name) in present:
            out.append((subject, Site(DEFAULT_MODE, site.path).subject(name), "mode"))
        if site.path.veth and Site(site.mode, LOOPBACK).subject(name) in present:
            out.append((subject, Site(site.mode, LOOPBACK).subject(name), "path"))
    return out


def comparisons(times: dict[str, list[float]], per_cycle: dict[str, int],
                confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """a ÷ b for every pair `counterparts` finds, paired by cycle, with its interval at `confidence`
    (99 %, or the sequential rule's level at the look where it stopped)."""
    pairs = counterparts(list(times))
    if not pairs:
        return []
    groups = {s: cycles_of(v, per_cycle[s]) for s, v in times.items()}
    boot = PairedBootstrap({s: g for s, g in groups.items() if g}, confidence, resamples_for(confidence))
    out = []
    for a, b, axis in pairs:
        if a in boot.per_cycle and b in boot.per_cycle:
            ratio, interval = boot.ratio(a, b)
            out.append({**compare(a, b, ratio, interval, confidence), "axis": axis, "confidence": confidence})
    return out


def selected_subjects(items: list[Any]) -> dict[str, list[str]]:
    """{operation: [subject, ...]} of the collected latency tests, in collection order."""
    found: dict[str, list[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or not {"operation", "subject"} <= set(callspec.params) \
                or item.get_closest_marker("skip") is not None:
            continue
        subjects = found.setdefault(callspec.params["operation"], [])
        if callspec.params["subject"] not in subjects:
            subjects.append(callspec.params["subject"])
    return found


def record(benchmark: Any, result: Result, subject: str) -> None:
    """Hand `subject`'s rounds of an interleaved measurement to pytest-benchmark.

    Through two private members of pytest-benchmark (pinned exactly in
    pyproject.toml), because its public API cannot carry these samples (issue 44):
    `benchmark(f)` and `benchmark.pedantic(f, setup=..., rounds=...)` record only
    durations they time themselves around a call of `f` (their runner wraps it in
    the --benchmark-timer, one config-wide clock), and the only way to add a
    duration to the stats behind the tables, --benchmark-json's "stats" and
    --benchmark-compare is `Metadata.update` on the object `_make_stats` creates
    (`benchmark.stats` is None until then). Timing inside pedantic, with the other
    subjects' calls in its untimed `setup`, would give each test its own cycles:
    the cycles that all subjects share, which the paired ratios and the ranking
    need, would be lost. `extra_info` (public) carries the rest."""
    if subject in result.errors:
        raise result.errors[subject]
    benchmark.group = result.operation
    if not callable(getattr(benchmark, "_make_stats", None)) or not hasattr(benchmark, "_mode"):
        raise RuntimeError("pytest-benchmark no longer has _make_stats/_mode (benchmarks/suite.py record): "
                           "keep the version pyproject.toml pins, or port record() to the new one")
    benchmark._mode = "interleaved (benchmarks/suite.py)"  # used: no "fixture not used" warning
    if benchmark.disabled:
        return  # make test: each subject's call was made and checked once
    stats = benchmark._make_stats(1)
    for seconds in result.times[subject]:
        stats.update(seconds)
    benchmark.extra_info.update({
        "design": result.design.describe(),
        "stopping": {k: v for k, v in result.stopping.items() if k != "looks_taken"},
        "settle": result.settle,
        "cpu_us_per_op": {p: round(v, 1) for p, v in result.cpu_us.get(subject, {}).items()},
        "wall_us_per_op": round(result.wall_us.get(subject, 0.0), 1),
        **({"ratio_to_direct": result.ranking["to_baseline"][subject]}
           if subject in result.ranking.get("to_baseline", {}) else {}),
    })
