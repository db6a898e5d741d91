"""The statistics of a benchmark's rounds, as the tables and reports print them."""

from __future__ import annotations

import random
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
# every subject was taken in the same few hundred milliseconds. The bootstrap
# resamples whole cycles, the same cycles for every subject: it keeps the
# pairing (a slow spell of the machine slows everyone in that cycle) and the
# correlation of rounds within a block, which resampling single rounds would
# pretend away.

CONFIDENCE = 0.99
RESAMPLES = 2000


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


def bootstrap_medians(groups: dict[str, list[list[float]]], resamples: int = RESAMPLES,
                      seed: int = 1) -> dict[str, list[float]]:
    """{subject: [median of one resample, ...]}: each resample draws cycle indices
    with replacement, the same draw for every subject (paired)."""
    n = min(len(g) for g in groups.values())
    if n == 0:
        return {name: [] for name in groups}
    rng = random.Random(seed)
    out: dict[str, list[float]] = {name: [] for name in groups}
    for _ in range(resamples):
        draw = [rng.randrange(n) for _ in range(n)]
        for name, g in groups.items():
            out[name].append(_median([x for c in draw for x in g[c]]))
    return out


def ratio_interval(numerator: list[float], denominator: list[float],
                   confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of the ratio over paired bootstrap medians."""
    ratios = sorted(a / b for a, b in zip(numerator, denominator, strict=True))
    tail = (1 - confidence) / 2
    return percentile(ratios, tail), percentile(ratios, 1 - tail)


def compare(a: str, b: str, point: float, interval: tuple[float, float], confidence: float = CONFIDENCE) -> dict:
    """The statement the data supports about median(a) / median(b)."""
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
    """Ratios to the baseline and every pairwise comparison, each with its
    bootstrap interval, and the ranking the intervals support.

    data: {subject: per-round times in the order taken, cycle-major (block rounds per cycle;
    a {subject: rounds per cycle} where subjects differ, as the oversampled baseline does)}.
    Returns {"confidence", "to_baseline": {subject: {ratio, ci}}, "pairs": [compare(...)],
    "order": [subjects by median], "chain": "a < b ~ c"}. In the chain, each
    neighbour in median order is joined by "<" when the interval of their ratio
    excludes 1 and by "~" when it does not."""
    groups = {name: cycles_of(values, block if isinstance(block, int) else block[name])
              for name, values in data.items()}
    groups = {name: g for name, g in groups.items() if g}
    point = {name: _median([x for c in g for x in c]) for name, g in groups.items()}
    boot = bootstrap_medians(groups, resamples, seed)
    order = sorted(groups, key=lambda name: point[name])
    out: dict = {"confidence": confidence, "resamples": resamples, "cycles": min(map(len, groups.values()), default=0),
                 "to_baseline": {}, "pairs": [], "order": order}
    if baseline in groups:
        for name in order:
            if name != baseline:
                low, high = ratio_interval(boot[name], boot[baseline], confidence)
                out["to_baseline"][name] = {"ratio": point[name] / point[baseline], "ci": [low, high]}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            out["pairs"].append(compare(a, b, point[a] / point[b], ratio_interval(boot[a], boot[b], confidence),
                                        confidence))
    by_pair = {(p["a"], p["b"]): p for p in out["pairs"]}
    chain = order[:1]
    for prev, name in zip(order, order[1:], strict=False):
        chain += ["~" if by_pair[(prev, name)]["relation"] == "~" else "<", name]
    out["chain"] = " ".join(chain)
    return out
