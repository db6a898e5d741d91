"""Repeated benchmark runs, modes alternating (native, docker, native, ...),
so that run-to-run noise is measured rather than guessed, and a slow spell of
the machine cannot land on one mode only.

    python -m lab.stats.runs [--runs 3] [--modes native,docker] [-- extra pytest args]
    make bench-runs RUNS=3
    python -m lab.stats.runs --check A.json B.json C.json [--tolerance 0.03] [--spread 200]

--check compares saved runs without running anything: each implementation's
ratio to direct per run, side by side, and its largest deviation from the
middle run's ratio (the median of the runs); exit status 1 when one exceeds
the tolerance. The ratio is the lab's paired one (lab/stats/statistics.py: the
median over cycles of the per-cycle ratio), recomputed from each run's rounds;
`--statistic medians` checks the ratio of the two overall medians instead, and
either way one line says how the other statistic fared. `--spread N` also
scores N cycles of each operation taken consecutively (at its start, middle
and end) and spread evenly over it: whether the agreement comes from the
number of calls or from the time they span. `--windows N` says how each run's
ratios followed the machine's speed: windows of N cycles, each ratio against
direct's median in the window (log on log). `--strata K` compares the runs at
equal machine speed (speed_strata: K strata of direct's level, the ratio per
stratum, every stratum weighing alike in every run). Under each
operation, direct's own median per run,
and the runs in which it moved more than 10 % from the middle run's (a machine
that changed speed: their ratios are not comparable). The files are
pytest-benchmark's own JSON (--benchmark-json=F) or the lab's
results/benchmarks/<mode>-<date>.json.

Each run is a whole `pytest --benchmark-only` (its own lab, its own result
file). The summary gives, per operation and implementation, the median of the
runs' medians and their range, the median of the runs' ratios to direct and
their range (the ratio is what the interleaved design makes reproducible: its
spread is the figure to watch), and, with two modes, the ratio of the second
mode's median to the first's within each pair of adjacent runs. It is printed
and written to results/runs-<date>.md.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab import results as lab_results
from lab import settings
from lab.context import host_context
from lab.stats.compare import BENCHMARKS, load, read_run
from lab.stats.statistics import cycles_of, paired_ratios, rounds_per_cycle
from lab.workload import LATENCY


def run_once(mode: str, extra: list[str]) -> Path:
    """One benchmark run in `mode`; returns the result file it wrote."""
    before = set(BENCHMARKS.glob(f"{mode}-2*.json")) if BENCHMARKS.exists() else set()
    done = subprocess.run([sys.executable, "-m", "pytest", "--benchmark-only", "-q", "benchmarks",
                           "--lab-mode", mode, *extra], cwd=settings.ROOT, env=os.environ.copy())
    if done.returncode != 0:
        raise SystemExit(f"the {mode} run failed (pytest exit {done.returncode})")
    new = set(BENCHMARKS.glob(f"{mode}-2*.json")) - before
    if len(new) != 1:
        raise SystemExit(f"the {mode} run wrote {len(new)} result files, expected 1")
    return new.pop()


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{operation: {subject: {mode: {median, low, high, medians}, ratio: {...}}}} from
    {mode: [result, ...]} (results as benchmarks/conftest.py writes them, in run order)."""
    modes = list(runs)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for op in LATENCY:
        subjects = [s for s in runs[modes[0]][0]["results"].get(op, {})]
        for subject in subjects:
            cell: dict[str, Any] = {}
            for mode in modes:
                medians = [r["results"][op][subject]["median"] for r in runs[mode]
                           if subject in r["results"].get(op, {})]
                if medians:
                    cell[mode] = {"median": statistics.median(medians), "low": min(medians),
                                  "high": max(medians), "medians": medians}
                    ratios = [_ratio(r["results"][op], subject) for r in runs[mode]
                              if subject in r["results"].get(op, {}) and "direct" in r["results"][op]]
                    if ratios and subject != "direct":
                        cell[mode]["to_direct"] = spread(ratios)
            if len(modes) == 2 and all(m in cell for m in modes):
                ratios = [b / a for a, b in zip(cell[modes[0]]["medians"], cell[modes[1]]["medians"],
                                                strict=False)]
                cell["ratio"] = {"median": statistics.median(ratios), "low": min(ratios),
                                 "high": max(ratios), "values": ratios}
            out.setdefault(op, {})[subject] = cell
    return out


def _ratio(rows: dict[str, dict[str, Any]], subject: str) -> float:
    """The run's own ratio to direct (paired by cycle) where it has one, else
    the ratio of the medians (results from before the paired ratio)."""
    stored = rows[subject].get("ratio_to_direct") or {}
    return stored.get("ratio") or rows[subject]["median"] / rows["direct"]["median"]


def spread(values: list[float]) -> dict[str, Any]:
    """Median, range, and the largest deviation from the median in parts of it."""
    middle = statistics.median(values)
    return {"median": middle, "low": min(values), "high": max(values), "values": values,
            "max_deviation": max(abs(v / middle - 1) for v in values) if middle else float("nan")}


def tables(summary: dict[str, dict[str, dict[str, Any]]], modes: list[str]) -> dict[str, list[str]]:
    """{operation: Markdown table lines}: median of the runs' medians [range], and the ratio."""
    out = {}
    for op, rows in summary.items():
        head = (["implementation", *modes] + [f"{m} ÷ direct" for m in modes]
                + ([f"{modes[1]} / {modes[0]}"] if len(modes) == 2 else []))
        lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        for subject, cell in rows.items():
            cells = [f"{cell[m]['median']:.0f} [{cell[m]['low']:.0f}–{cell[m]['high']:.0f}]" if m in cell
                     else "-" for m in modes]
            for m in modes:
                r = cell.get(m, {}).get("to_direct")
                cells.append(f"{r['median']:.2f} [{r['low']:.2f}–{r['high']:.2f}] ±{r['max_deviation']:.1%}"
                             if r else "-")
            if len(modes) == 2:
                r = cell.get("ratio")
                cells.append(f"{r['median']:.2f} [{r['low']:.2f}–{r['high']:.2f}]" if r else "-")
            lines.append(f"| {subject} | " + " | ".join(cells) + " |")
        out[op] = lines
    return out


def explanation(modes: list[str], n: int) -> str:
    return (f"{n} runs per mode, modes alternating ({', '.join(modes)}): the median of the runs' medians "
            "in µs, [lowest–highest run]; ÷ direct: the median of the runs' ratios of the median to "
            "direct's, [range], ±largest deviation from that median"
            + (f"; {modes[1]} / {modes[0]}: the ratio of medians within each pair of adjacent runs, "
               "median [range]." if len(modes) == 2 else "."))


def markdown(summary: dict[str, dict[str, dict[str, Any]]], modes: list[str], n: int) -> str:
    lines = [f"# {n} runs per mode, modes alternating ({', '.join(modes)})", "", explanation(modes, n), ""]
    for op, table in tables(summary, modes).items():
        lines += [f"## {op}", "", *table, ""]
    return "\n".join(lines)


# `direct` (the store called in the test process) is the yardstick of every
# ratio; a run whose direct median moved more than this from the middle run's
# ran on a machine that changed speed (benchmarks/README.md: "How many cycles a ±3 % ratio
# needs"). Ratios follow direct with an elasticity of about -0.1 to -0.5 here
# (follows_direct; benchmarks/README.md: "Ratios follow direct's speed"): a 10 % move is up
# to 3-5 %, the tolerance --check scores. Needed, not enough: ratios also moved
# a shared 2.2 % between runs with direct within 0.6 % (2026-11-26).
MACHINE_CHANGED = 0.10


STATISTICS = {"paired": "median over cycles of the per-cycle ratio to direct",
              "medians": "median ÷ direct median"}


def ratios(rounds: dict[str, dict[str, list[float]]], design: dict[str, Any],
           statistic: str = "paired") -> dict[str, dict[str, float]]:
    """{operation: {subject: ratio to direct}} of one run's rounds (seconds,
    cycle-major as the suite takes them; design: Design.describe())."""
    out: dict[str, dict[str, float]] = {}
    for op, rows in rounds.items():
        if "direct" not in rows:
            continue
        if statistic == "medians":
            base = statistics.median(rows["direct"])
            out[op] = {s: statistics.median(r) / base for s, r in rows.items() if s != "direct"}
        else:
            base_cycles = cycles_of(rows["direct"], rounds_per_cycle(design, "direct"))
            out[op] = {s: statistics.median(paired_ratios(cycles_of(r, rounds_per_cycle(design, s)), base_cycles))
                       for s, r in rows.items() if s != "direct"}
    return out


def _entries(path: Path, data: dict[str, Any]) -> tuple[list[tuple[str, str, dict[str, Any]]], dict[str, Any]]:
    """([(operation, subject, {"data": seconds per round, "cpu": CPU µs per
    operation by process}), ...], the design) of one saved run, in either
    format: pytest-benchmark's --benchmark-json or a protolab result."""
    if "benchmarks" in data:
        entries, design = [], {}
        for b in data["benchmarks"]:
            subject, extra = (b.get("params") or {}).get("subject"), b.get("extra_info") or {}
            if subject:
                entries.append((b["group"], subject, {"data": b["stats"].get("data"),
                                                      "cpu": extra.get("cpu_us_per_op")}))
                design = extra.get("design") or design
        return entries, design
    if "results" in data:
        return ([(op, s, {"data": r.get("data_s"), "cpu": r.get("cpu_us_per_op")})
                 for op, rows in data["results"].items() for s, r in rows.items()],
                data.get("context", {}).get("settings", {}).get("benchmark", {}).get("design") or {})
    raise SystemExit(f"{path}: neither pytest-benchmark JSON nor a protolab result")


def rounds_of(path: Path, data: dict[str, Any] | None = None
              ) -> tuple[dict[str, dict[str, list[float]]], dict[str, Any]]:
    """({operation: {subject: [seconds per round, ...]}}, the design) of one
    saved run, in either format (`data`: the file already read)."""
    entries, design = _entries(path, read_run(path) if data is None else data)
    rounds: dict[str, dict[str, list[float]]] = {}
    for op, subject, e in entries:
        if e["data"]:
            rounds.setdefault(op, {})[subject] = e["data"]
    return rounds, design


def cpu_of(path: Path, data: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """{operation: {subject: {process: CPU µs per operation}}} of one saved
    run, in either format; {} where it was not recorded."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for op, subject, e in _entries(path, data)[0]:
        if e["cpu"]:
            out.setdefault(op, {})[subject] = e["cpu"]
    return out


def _cpu_line(cpus: list[dict[str, float] | None], label: str = "    CPU µs/op per run") -> str | None:
    """Under a ratio out of tolerance: CPU µs per operation of each process,
    per run, so that a reader sees which moved: every process's work per call
    together (the machine running the same work faster or slower), one
    process's alone, or none (only the wall time: waiting, scheduling)."""
    if any(not c for c in cpus):
        return None
    parts = []
    for process in ("service", "client", "database"):
        values = [c.get(process) for c in cpus]  # type: ignore[union-attr]
        if all(v is not None for v in values):
            moved = max(values) / min(values) - 1 if min(values) > 0 else 0.0
            parts.append(f"{process} {' / '.join(f'{v:.0f}' for v in values)} ({moved:.0%} apart)")
    return f"{label}: " + "; ".join(parts) if parts else None


def _header(op: str, runs: int) -> str:
    """An operation's header over its runs' columns, the middle and the deviation."""
    return (f"{op:<{NAME_WIDTH}}" + "".join(f"{'run ' + str(i + 1):>9}" for i in range(runs))
            + f"{'middle':>9}{'dev':>8}")


def _row(name: str, values: list[float], tolerance: float) -> tuple[str, bool]:
    """One ratio per run, the middle and the largest deviation from it, marked
    '!' beyond tolerance; and whether it is beyond."""
    found = spread(values)
    bad = found["max_deviation"] > tolerance
    return (f"{name:<{NAME_WIDTH}}" + "".join(f"{v:>9.3f}" for v in values)
            + f"{found['median']:>9.3f}{found['max_deviation']:>7.1%}" + (" !" if bad else "")), bad


def check(paths: list[Path], tolerance: float, statistic: str = "paired") -> tuple[str, bool]:
    """The runs' ratios side by side; whether every one is within tolerance of the middle."""
    data = [read_run(p) for p in paths]  # each file read once
    loaded = [rounds_of(p, d) for p, d in zip(paths, data, strict=True)]
    cpus = [cpu_of(p, d) for p, d in zip(paths, data, strict=True)]
    medians = [{op: {s: statistics.median(r) * 1e6 for s, r in rows.items()} for op, rows in rounds.items()}
               for rounds, _ in loaded]
    runs = [ratios(rounds, design, statistic) for rounds, design in loaded]
    ok = True
    lines = [f"{STATISTICS[statistic]}, per run ({', '.join(p.name for p in paths)}); "
             f"dev: largest deviation from the middle (median) of the runs, tolerance ±{tolerance:.0%}"]
    ops = [op for op in LATENCY if any(op in r for r in runs)]
    ops += sorted({op for r in runs for op in r} - set(ops))
    for op in ops:
        lacking = [i + 1 for i, r in enumerate(runs) if not r.get(op)]
        if lacking:
            lines += ["", f"{op}: not compared (not measured in run {', '.join(map(str, lacking))})"]
            continue
        subjects = [s for s in (runs[0].get(op) or {}) if all(s in r.get(op, {}) for r in runs)]
        lines += ["", _header(op, len(runs))]
        missed = False  # a ratio of this operation out of tolerance
        for s in subjects:
            line, bad = _row(s, [r[op][s] for r in runs], tolerance)
            missed |= bad
            lines.append(line)
            cpu = _cpu_line([c.get(op, {}).get(s) for c in cpus]) if bad else None
            if cpu:
                lines.append(cpu)
        if len(subjects) > 1:
            shifts, left = shared_shift([[r[op][s] for r in runs] for s in subjects])
            lines.append(f"{'(shared by all: direct moved)':<{NAME_WIDTH}}" + "".join(f"{v:>+9.1%}" for v in shifts)
                         + f"{'left':>9}{left:>7.1%}")
        lines += _yardstick(op, [m.get(op, {}).get("direct") for m in medians])
        ok &= not missed
        cpu = _cpu_line([c.get(op, {}).get("direct") for c in cpus], "  direct's CPU µs/op per run") if missed else None
        if cpu:  # the denominator's own work: when it moved, every ratio moves with it
            lines.append(cpu)
    within, total = _within(runs, tolerance)
    lines += ["", f"{within} of {total} ratios within ±{tolerance:.0%}: "
              + ("all within tolerance" if ok else "NOT all within tolerance (marked !)")]
    for other in STATISTICS:
        if other != statistic:
            w, t = _within([ratios(rounds, design, other) for rounds, design in loaded], tolerance)
            lines.append(f"({STATISTICS[other]}: {w} of {t} within ±{tolerance:.0%}; --statistic {other})")
    return "\n".join(lines), ok


def cycles_taken(rounds: dict[str, dict[str, list[float]]], design: dict[str, Any],
                 keep: Callable[[int, int], bool]) -> dict[str, dict[str, list[float]]]:
    """The rounds of the cycles c (of n in the operation) for which keep(c, n) holds."""
    out: dict[str, dict[str, list[float]]] = {}
    for op, rows in rounds.items():
        per = {s: rounds_per_cycle(design, s) for s in rows}
        n = min(len(r) // per[s] for s, r in rows.items())
        out[op] = {s: [x for c, group in enumerate(cycles_of(r, per[s])[:n]) if keep(c, n) for x in group]
                   for s, r in rows.items()}
    return out


def spread_over_time(paths: list[Path], count: int, tolerance: float, statistic: str = "paired") -> str:
    """Each operation scored as check() does on `count` of its cycles taken
    four ways: consecutive at the start, the middle and the end of the
    operation, and spread evenly over it (every n/count-th). Tells whether
    reproducibility comes from the number of calls or from the time they span."""
    loaded = [rounds_of(p) for p in paths]
    ways: dict[str, Callable[[int, int], bool]] = {
        "first": lambda c, n: c < count,
        "middle": lambda c, n: (n - count) // 2 <= c < (n - count) // 2 + count,
        "last": lambda c, n: c >= n - count,
        "spread": lambda c, n: c % max(n // count, 1) == 0 and c // max(n // count, 1) < count,
        "all": lambda c, n: True}
    lines = [f"{count} cycles of each operation, four ways, and all of them: ratios within ±{tolerance:.0%} "
             f"of the middle run (median deviation); {STATISTICS[statistic]}"]
    scored: dict[str, dict[str, str]] = {}
    for way, keep in ways.items():
        runs = [ratios(cycles_taken(rounds, design, keep), design, statistic) for rounds, design in loaded]
        for op in runs[0]:
            if not all(r.get(op) for r in runs):
                continue
            devs = [spread([r[op][s] for r in runs])["max_deviation"]
                    for s in runs[0][op] if all(s in r[op] for r in runs)]
            scored.setdefault(op, {})[way] = (f"{sum(d <= tolerance for d in devs)}/{len(devs)} "
                                              f"({statistics.median(devs):.1%})")
    names = {"first": "first", "middle": "middle", "last": "last", "spread": "spread evenly", "all": "all cycles"}
    lines.append(f"{'':<12}" + "".join(f"{names[w]:>16}" for w in ways))
    for op in [o for o in LATENCY if o in scored] + sorted(set(scored) - set(LATENCY)):
        lines.append(f"{op:<12}" + "".join(f"{scored[op].get(w, '-'):>16}" for w in ways))
    return "\n".join(lines)


def follows_direct(rounds: dict[str, dict[str, list[float]]], design: dict[str, Any], window: int,
                   statistic: str = "paired") -> dict[str, float]:
    """{operation: how the ratios follow the machine's speed within one run}:
    the run cut into windows of `window` consecutive cycles, each subject's
    ratio per window regressed on direct's median per window, log on log (the
    elasticity: -0.2 means a window whose direct was 10 % slower had ratios
    about 2 % lower), the median over subjects. 0 would be a ratio that does
    not care how fast the machine is."""
    out: dict[str, float] = {}
    for op, rows in rounds.items():
        if "direct" not in rows or len(rows) < 2:
            continue
        n = min(len(r) // rounds_per_cycle(design, s) for s, r in rows.items())
        starts = range(0, n - window + 1, window)
        if len(starts) < 3:
            continue
        taken = [cycles_taken({op: rows}, design, lambda c, _n, a=a: a <= c < a + window)[op] for a in starts]
        x = [math.log(statistics.median(t["direct"])) for t in taken]
        per_window = [ratios({op: t}, design, statistic)[op] for t in taken]
        if len(set(x)) > 1:  # direct's speed moved: a slope to fit
            out[op] = statistics.median(statistics.linear_regression(x, [math.log(w[s]) for w in per_window]).slope
                                        for s in rows if s != "direct")
    return out


def following(paths: list[Path], window: int, statistic: str = "paired") -> str:
    """follows_direct() of each run, one row per operation."""
    found = [follows_direct(*rounds_of(p), window, statistic) for p in paths]
    lines = [f"how the ratios follow direct's speed within each run (windows of {window} cycles; "
             f"d ln ratio / d ln direct's median, median over subjects; {STATISTICS[statistic]}):",
             f"{'':<12}" + "".join(f"{'run ' + str(i + 1):>9}" for i in range(len(paths)))]
    for op in [o for o in LATENCY if any(o in f for f in found)]:
        lines.append(f"{op:<12}" + "".join(f"{f[op]:>+9.2f}" if op in f else f"{'-':>9}" for f in found))
    lines.append("(-0.2: where direct ran 10 % slower, the ratios read about 2 % lower)")
    return "\n".join(lines)


def speed_strata(paths: list[Path], strata: int, tolerance: float, window: int = 10,
                 least: int = 20) -> tuple[str, int, int]:
    """The runs compared at equal machine speed. Each cycle gets the machine's
    speed at that moment: direct's median over the cycles within `window` of it
    (a level, not the cycle's own direct, whose noise would sort the ratios by
    their own denominator). The cycles of every run together are cut into
    `strata` equal shares by that level; per run and stratum, each subject's
    median per-cycle ratio to direct; a run's ratio at equal speed is the
    geometric mean over the strata (each weighs the same in every run, whatever
    share of the run fell in it). Strata with fewer than `least` cycles in some
    run are left out for that operation. Returns the text and (within, total)."""
    loaded = [rounds_of(p) for p in paths]
    lines = [f"at equal machine speed ({strata} strata of direct's level, its median over ±{window} cycles, "
             f"cut over the runs' cycles together; each run's ratio = geometric mean over the strata of its "
             f"median per-cycle ratio there; dev from the middle run's, tolerance ±{tolerance:.0%}):"]
    within = total = 0
    for op in [o for o in LATENCY if all(o in r and "direct" in r[o] for r, _ in loaded)]:
        levels, per_cycle = [], []
        for rounds, design in loaded:
            rows = rounds[op]
            base = cycles_of(rows["direct"], rounds_per_cycle(design, "direct"))
            levels.append([statistics.median([x for c in base[max(0, i - window):i + window + 1] for x in c])
                           for i in range(len(base))])
            per_cycle.append({s: paired_ratios(cycles_of(r, rounds_per_cycle(design, s)), base)
                              for s, r in rows.items() if s != "direct"})
        pooled = sorted(x for level in levels for x in level)
        cuts = [len(pooled) * q // strata for q in range(1, strata)]
        edges = [(pooled[c - 1] + pooled[c]) / 2 for c in cuts]  # between two levels: ties fall alike
        where = [[sum(x > e for e in edges) for x in level] for level in levels]
        kept = [k for k in range(strata) if all(w.count(k) >= least for w in where)]
        lines += ["", _header(op, len(paths)),
                  f"{'(share of cycles, fastest stratum)':<{NAME_WIDTH}}"
                  + "".join(f"{w.count(0) / len(w):>9.0%}" for w in where)]
        if not kept:
            lines.append(f"  not compared: no stratum holds {least} cycles of every run")
            continue
        if len(kept) < strata:
            lines.append(f"  {strata - len(kept)} of {strata} strata left out (fewer than {least} cycles in a run)")
        subjects = [s for s in per_cycle[0] if all(s in p for p in per_cycle)]
        for s in subjects:
            values = []
            for w, p in zip(where, per_cycle, strict=True):
                medians = [statistics.median([r for r, k in zip(p[s], w, strict=False) if k == stratum])
                           for stratum in kept]
                values.append(math.exp(statistics.fmean(math.log(m) for m in medians)))
            line, bad = _row(s, values, tolerance)
            within, total = within + (not bad), total + 1
            lines.append(line)
    lines += ["", f"{within} of {total} ratios within ±{tolerance:.0%} at equal machine speed"]
    return "\n".join(lines), within, total


def shared_shift(values: list[list[float]]) -> tuple[list[float], float]:
    """values[s][i]: subject s's ratio in run i. Each run's shift that every
    subject shares (the median over subjects of ratio ÷ its middle − 1): the
    ratios' common denominator, direct, moving; and the largest deviation from
    the middle that is left when each run's shift is taken out."""
    middles = [statistics.median(v) for v in values]
    pairs = list(zip(values, middles, strict=True))
    shifts = [statistics.median(v[i] / m - 1 for v, m in pairs) for i in range(len(values[0]))]
    left = max(abs(v[i] / m - 1 - shifts[i]) for v, m in pairs for i in range(len(v)))
    return shifts, left


def _within(runs: list[dict[str, dict[str, float]]], tolerance: float) -> tuple[int, int]:
    """(ratios within tolerance of the middle run's, ratios) over every operation and subject."""
    spreads = [spread([r[op][s] for r in runs])["max_deviation"]
               for op in runs[0] for s in runs[0][op] if all(s in r.get(op, {}) for r in runs)]
    return sum(d <= tolerance for d in spreads), len(spreads)


NAME_WIDTH = 36  # the longest implementation name (ws/python_simple_websocket+gthread) and a space


def _yardstick(op: str, medians: list[float | None]) -> list[str]:
    """direct's own median per run (µs), and the runs in which it moved more
    than MACHINE_CHANGED from the middle: their ratios are another machine's."""
    if any(m is None for m in medians):
        return []
    values = [float(m) for m in medians]  # type: ignore[arg-type]
    middle = statistics.median(values)
    lines = [f"{'(direct median, µs)':<{NAME_WIDTH}}" + "".join(f"{v:>9.0f}" for v in values)
             + f"{middle:>9.0f}{spread(values)['max_deviation']:>7.1%}"]
    for i, v in enumerate(values):
        if abs(v / middle - 1) > MACHINE_CHANGED:
            lines.append(f"  run {i + 1}: direct's {op} median moved {v / middle - 1:+.0%} from the middle "
                         f"run's: the machine changed speed; its ratios are not comparable")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.stats.runs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", nargs="+", type=Path, metavar="JSON",
                        help="compare saved runs' ratios to direct; run nothing")
    parser.add_argument("--tolerance", type=float, default=0.03)
    parser.add_argument("--statistic", choices=sorted(STATISTICS), default="paired",
                        help="with --check: the ratio checked (default: paired, the lab's)")
    parser.add_argument("--spread", type=int, metavar="N",
                        help="with --check: also score N cycles of each operation, consecutive and spread "
                             "evenly over it")
    parser.add_argument("--windows", type=int, metavar="N",
                        help="with --check: also how each run's ratios followed direct's speed, in windows of "
                             "N cycles")
    parser.add_argument("--strata", type=int, metavar="K",
                        help="with --check: also the runs' ratios compared at equal machine speed, in K strata "
                             "of direct's level")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="native,docker")
    parser.add_argument("extra", nargs="*", help="after --: extra pytest arguments")
    args = parser.parse_args(argv)
    if args.check:
        text, ok = check(args.check, args.tolerance, args.statistic)
        print(text)
        if args.spread:
            print("\n" + spread_over_time(args.check, args.spread, args.tolerance, args.statistic))
        if args.windows:
            print("\n" + following(args.check, args.windows, args.statistic))
        if args.strata:
            print("\n" + speed_strata(args.check, args.strata, args.tolerance)[0])
        return 0 if ok else 1
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(settings.MODES)
    if unknown or not modes:
        parser.error(f"--modes: choose from {', '.join(settings.MODES)}")
    files: dict[str, list[Path]] = {m: [] for m in modes}
    for i in range(args.runs):
        for mode in modes:
            print(f"run {i + 1}/{args.runs}, {mode}", flush=True)
            files[mode].append(run_once(mode, args.extra))
    runs = {m: [load(p) for p in paths] for m, paths in files.items()}
    summary = summarize(runs)
    text = markdown(summary, modes, args.runs)
    text += "\nRuns: " + "; ".join(f"{m}: " + ", ".join(p.name for p in ps) for m, ps in files.items()) + "\n"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    out = settings.RESULTS / f"runs-{stamp}.md"
    out.write_text(text)
    # What make report reads: the summary and the runs it came from.
    lab_results.write("runs", "runs", host_context(), {
        "date": stamp, "modes": modes, "runs_per_mode": args.runs,
        "files": {m: [p.name for p in ps] for m, ps in files.items()},
        "contexts": {m: [r["context"] for r in rs] for m, rs in runs.items()},
        "summary": summary})
    print(text)
    print(f"written to {out} and {settings.RESULTS / 'runs-latest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
