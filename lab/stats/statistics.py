"""The statistics of a benchmark's rounds, as the tables and reports print them."""

from __future__ import annotations

import functools
from typing import Any


def percentile(sorted_data: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_data:
        return float("nan")
    position = (len(sorted_data) - 1) * q
    low = int(position)
    high = min(low + 1, len(sorted_data) - 1)
    return sorted_data[low] + (sorted_data[high] - sorted_data[low]) * (position - low)


def median_ci95(sorted_data: list[float]) -> tuple[float, float]:
    """A distribution-free 95 % confidence interval of the median: the order
    statistics at n/2 ± 1.96·√n/2 (normal approximation to the binomial)."""
    n = len(sorted_data)
    half = 1.96 * n ** 0.5 / 2
    low = max(int(n / 2 - half), 0)
    high = min(int(n / 2 + half + 0.999), n - 1)
    return sorted_data[low], sorted_data[high]


def summarize(data: list[float]) -> dict[str, Any]:
    """Statistics in µs of per-round times given in seconds."""
    ordered = sorted(data)
    n = len(ordered)
    mean = sum(ordered) / n
    var = sum((x - mean) ** 2 for x in ordered) / (n - 1) if n > 1 else 0.0
    us = 1e6
    low, high = median_ci95(ordered)
    return {"rounds": n, "mean": mean * us, "min": ordered[0] * us, "max": ordered[-1] * us,
            "stddev": var ** 0.5 * us, "median": percentile(ordered, 0.5) * us,
            "median_ci95": [low * us, high * us],
            "p95": percentile(ordered, 0.95) * us, "p99": percentile(ordered, 0.99) * us}


# -- Ratios and rankings from interleaved trials -----------------------------
#
# The latency suite measures the subjects of one operation in cycles: every
# cycle visits every subject once (benchmarks/interleave.py), so a subject's
# rounds are `cycles` consecutive groups of `block` rounds, and group c of
# every subject was taken in the same few hundred milliseconds.
#
# A ratio is *paired by cycle*: per cycle, a's median over its rounds in that
# cycle ÷ b's, and the ratio reported is the median of those per-cycle ratios.
# The machine's speed in that cycle is in both and cancels; a ratio of the two
# overall medians keeps whatever the machine did between the cycles that
# happen to sit at each median. On the same three whole runs (README,
# "Ratios paired by cycle") the ratio of medians held ±3 % across runs for 27 of 54
# ratios, the paired ratio for 42. The interval is a percentile bootstrap that
# resamples whole cycles (the pairing and the correlation of rounds within a
# block are kept; resampling single rounds would pretend them away), and
# resamples them in runs of consecutive cycles (a circular block bootstrap,
# Politis & Romano 1992): the machine's spells last longer than a cycle, so
# neighbouring cycles' ratios are alike, and drawing cycles one by one
# pretends that away too. Measured on three whole back-to-back runs
# (2026-11-26, 54 ratios, benchmarks/README.md, "Intervals in runs of cycles"): with cycles
# drawn one by one, 27 % of the runs' ratios fell outside what the other two
# runs and the intervals allowed at 99 %; in runs of 50 cycles, 9.9 %.

CONFIDENCE = 0.99
RESAMPLES = 2000
RUNS_PER_RESAMPLE = 16   # a resample is this many runs of consecutive cycles (800 cycles: runs of 50)


def run_length_for(cycles: int) -> int:
    """The default length of a run of consecutive cycles in a resample."""
    return max(1, round(cycles / RUNS_PER_RESAMPLE))


def resampled_in_runs(ranking: dict[str, Any]) -> str:
    """' in runs of N cycles' for a rank() result resampled in runs, else ''."""
    length = ranking.get("run_length", 1)
    return f" in runs of {length} cycles" if length > 1 else ""


@functools.lru_cache(maxsize=4)
def _draws(n: int, resamples: int, seed: int, length: int) -> Any:
    import numpy as np
    runs = -(-n // length)
    starts = np.random.default_rng(seed).integers(0, n, size=(resamples, runs))
    out = ((starts[:, :, None] + np.arange(length)) % n).reshape(resamples, -1)[:, :n].astype(np.int32)
    out.flags.writeable = False  # shared by every caller with these arguments
    return out


def block_draws(cycles: int, resamples: int, seed: int, length: int | None = None) -> Any:
    """Circular block bootstrap indices, shape (resamples, cycles): each row is
    runs of `length` consecutive cycle indices (wrapping past the last cycle to
    the first, so every cycle is drawn equally often), starting anywhere, cut
    to `cycles`. length defaults to cycles / RUNS_PER_RESAMPLE (at least 1);
    length 1 is the ordinary bootstrap."""
    n = max(cycles, 1)
    length = min(max(run_length_for(cycles) if length is None else length, 1), n)
    return _draws(n, resamples, seed, length)  # the same draws again: the sequential rule's looks, its tests


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def cycles_of(data: list[float], block: int) -> list[list[float]]:
    """Rounds in order → their cycles (groups of `block`); a last partial group is dropped."""
    if block < 1:
        raise ValueError("block must be >= 1")
    return [data[i:i + block] for i in range(0, len(data) - block + 1, block)]


def rounds_per_cycle(design: dict[str, Any], subject: str) -> int:
    """A subject's rounds in one cycle (the suite's Design.describe()): every site's baseline ("direct",
    "direct@docker") is visited baseline_visits times a cycle, every other subject once."""
    from lab.axes import parse_subject  # the suite's own reading of a subject (benchmarks/interleave.py visits)

    baseline = design.get("baseline", "direct")
    visits = int(design.get("baseline_visits", 1)) if parse_subject(subject)[0] == baseline else 1
    return int(design.get("block", 1)) * visits


def paired_ratios(a: list[list[float]], b: list[list[float]]) -> list[float]:
    """Per cycle (a and b's rounds grouped by cycle): a's median ÷ b's, for
    the cycles both have."""
    return [_median(x) / _median(y) for x, y in zip(a, b, strict=False)]


class PairedBootstrap:
    """Median over cycles of per-cycle ratios, with percentile bootstrap
    intervals: `resamples` draws of the cycles with replacement, in runs of
    `run_length` consecutive cycles (block_draws), the same draws for every
    pair (one set of indices, so ranking 19 subjects takes seconds, not minutes)."""

    def __init__(self, groups: dict[str, list[list[float]]], confidence: float = CONFIDENCE,
                 resamples: int = RESAMPLES, seed: int = 1, run_length: int | None = None):
        import numpy as np  # matplotlib's dependency; the lab's only use of it
        self.np = np
        self.confidence = confidence
        self.cycles = min(map(len, groups.values()), default=0)
        self.per_cycle = {name: np.array([_median(c) for c in g[:self.cycles]]) for name, g in groups.items()}
        self.run_length = run_length_for(self.cycles) if run_length is None else run_length
        self.draws = block_draws(self.cycles, resamples, seed, self.run_length)

    def ratio(self, a: str, b: str) -> tuple[float, tuple[float, float]]:
        """median over cycles of a ÷ b, and its interval."""
        np = self.np
        ratios = self.per_cycle[a] / self.per_cycle[b]
        if ratios.size == 0:
            return float("nan"), (float("nan"), float("nan"))
        medians = np.median(ratios[self.draws], axis=1)
        tail = (1 - self.confidence) / 2
        low, high = np.quantile(medians, [tail, 1 - tail])
        return float(np.median(ratios)), (float(low), float(high))


def compare(a: str, b: str, point: float, interval: tuple[float, float], confidence: float = CONFIDENCE) -> dict:
    """The statement the data supports about a ÷ b."""
    low, high = interval
    pct = f"{confidence * 100:g} %"
    if high < 1:
        relation, text = "<", f"{a} < {b}: ratio {point:.2f}, {pct} CI {low:.2f}–{high:.2f}"
    elif low > 1:
        relation, text = ">", f"{a} > {b}: ratio {point:.2f}, {pct} CI {low:.2f}–{high:.2f}"
    else:
        relation, text = "~", (f"{a} ~ {b}: no significant difference (ratio {point:.2f}, "
                               f"{pct} CI {low:.2f}–{high:.2f})")
    return {"a": a, "b": b, "ratio": point, "ci": [low, high], "relation": relation, "text": text}


def rank(data: dict[str, list[float]], block: int | dict[str, int], baseline: str | None = "direct",
         confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = 1) -> dict:
    """Ratios to the baseline and every pairwise comparison, each paired by
    cycle with its bootstrap interval, and the ranking the intervals support.

    data: {subject: per-round times in the order taken, cycle-major (block rounds per cycle;
    a {subject: rounds per cycle} where subjects differ, as the oversampled baseline does)}.
    Returns {"confidence", "statistic", "to_baseline": {subject: {ratio, ci}}, "pairs": [compare(...)],
    "order": [subjects by median], "tiers": [[...], ...], "chain": "a < b = c"}. The
    chain reads as one order: subjects by their paired ratio to the baseline, in
    groups the intervals cannot tell apart ("=" within a group, "<" between
    groups; see tiers())."""
    groups = {name: cycles_of(values, block if isinstance(block, int) else block[name])
              for name, values in data.items()}
    groups = {name: g for name, g in groups.items() if g}
    point = {name: _median([x for c in g for x in c]) for name, g in groups.items()}
    order = sorted(groups, key=lambda name: point[name])
    out: dict = {"confidence": confidence, "resamples": resamples, "cycles": min(map(len, groups.values()), default=0),
                 "statistic": "median over cycles of the per-cycle ratio (each subject's median in the cycle)",
                 "to_baseline": {}, "pairs": [], "order": order}
    boot = PairedBootstrap(groups, confidence, resamples, seed)
    out["run_length"] = boot.run_length
    if baseline in groups:
        for name in order:
            if name != baseline:
                ratio, (low, high) = boot.ratio(name, baseline)
                out["to_baseline"][name] = {"ratio": ratio, "ci": [low, high]}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            ratio, interval = boot.ratio(a, b)
            out["pairs"].append(compare(a, b, ratio, interval, confidence))
    by_pair = {(p["a"], p["b"]): p for p in out["pairs"]}
    out["tiers"] = tiers(out["ranked"] if "ranked" in out else _ranked(order, out), by_pair)
    out["chain"] = tiers_text(out["tiers"])
    return out


def _ranked(order: list[str], out: dict) -> list[str]:
    """One order: by the paired ratio to the baseline where there is one (so the
    order and the ratios read alike), else by median."""
    to_base = out["to_baseline"]
    if not to_base:
        return order
    return sorted(order, key=lambda n: (0.0, 0) if n not in to_base else (to_base[n]["ratio"], 1))


def _relation(by_pair: dict, a: str, b: str) -> str:
    """a's relation to b ("<", ">" or "~"), whichever way round the pair was compared."""
    if (a, b) in by_pair:
        return by_pair[(a, b)]["relation"]
    return {"<": ">", ">": "<", "~": "~"}[by_pair[(b, a)]["relation"]]


def tiers(ranked: list[str], by_pair: dict) -> list[list[str]]:
    """The ranking as one order of groups: walking the order, a subject joins the
    current group when the data tell it from none of the group's members (every
    pair's interval includes 1), else it begins the next group. Within a group
    no two are distinguishable; each group's first is told apart from a member of
    the group before."""
    out: list[list[str]] = []
    for name in ranked:
        if out and all(_relation(by_pair, member, name) == "~" for member in out[-1]):
            out[-1].append(name)
        else:
            out.append([name])
    return out


def tiers_text(groups: list[list[str]]) -> str:
    """"a < b = c < d": '<' between groups the intervals separate, '=' within
    a group the intervals cannot tell apart."""
    return " < ".join(" = ".join(group) for group in groups)
