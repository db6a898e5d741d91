"""When the latency suite may stop measuring an operation: a group-sequential
rule over a few fixed looks, with the intervals corrected for them.

    rule = Rule.from_env(cap=800)        # LAB_BENCH_TARGET=0.02, LAB_BENCH_FIRST_LOOK=100
    rule.looks                           # (100, 200, 400, 800)
    rule.levels                          # (0.99875, 0.99875, 0.9975, 0.995)
    decision = rule.decide(look, {subject: {"ratio": r, "ci": [low, high]}, ...})
    decision["stop"], decision["reason"]

The suite measures every ratio to `direct` with a percentile bootstrap
(statistics.PairedBootstrap). Looking at the intervals after 100 cycles,
stopping if they are narrow and going on otherwise, and then quoting the
interval of the look where it stopped as a 99 % interval would flatter it: a
run gets several chances to stop on a look whose interval happened to miss.
So the looks are fixed in advance (LAB_BENCH_FIRST_LOOK, doubling, then the
cap LAB_BENCH_CYCLES) and each look's intervals are computed at a level such
that the chance that *any* look's interval misses the true ratio is at most
1 − CONFIDENCE (Bonferroni's inequality: P(any miss) ≤ Σ α_k = α), whatever
rule decides where to stop. The α is split over the looks in proportion to the
cycles each look adds (a linear α-spending function in information time,
Lan & DeMets 1983, spent by Bonferroni's inequality rather than by the joint
normal law of the looks, which a bootstrap interval does not give): with looks
at 100, 200, 400 and 800 cycles, α = 1 %: 1/8, 1/8, 2/8 and 4/8 of it, i.e.
99.875, 99.875, 99.75 and 99.5 % intervals. The last look, the one a noisy
hour reaches, keeps most of the α: its intervals are ~9 % wider than a plain
99 % interval (z 2.81 against 2.58), where an even split would make them
~17 % wider (99.75 %, z 3.02).

The decision to stop uses the intervals' widths only, never where they lie,
and is taken per operation as a whole (every subject is measured until the
operation stops: methodology.md, "Stopping when the intervals are narrow"
says why no subject leaves early). tests/test_sequential.py checks the
coverage on simulated runs with known ratios.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from lab.stats.statistics import CONFIDENCE, RESAMPLES, PairedBootstrap

FIRST_LOOK = 100
TAIL_DRAWS = 10  # resamples in each tail of a percentile interval at least (more resamples at a higher level)


def look_points(cap: int, first: int = FIRST_LOOK) -> tuple[int, ...]:
    """first, 2·first, 4·first ... below the cap, then the cap: the cycles after which
    the intervals are looked at. One look (the cap) when first ≥ cap or first ≤ 0."""
    if cap < 1:
        raise ValueError("the cap must be at least one cycle")
    points = []
    n = first
    while 0 < n < cap:
        points.append(n)
        n *= 2
    return (*points, cap)


def spend(looks: tuple[int, ...], confidence: float = CONFIDENCE) -> tuple[float, ...]:
    """Each look's interval level: α split in proportion to the cycles each look adds
    (linear spending); the levels' misses add up to at most 1 − confidence."""
    alpha = 1 - confidence
    out, before = [], 0
    for n in looks:
        out.append(1 - alpha * (n - before) / looks[-1])
        before = n
    return tuple(out)


def resamples_for(level: float) -> int:
    """Bootstrap resamples for a percentile interval at `level`: at least RESAMPLES, and at
    least TAIL_DRAWS in each tail (a 99.875 % interval from 2,000 resamples would rest
    on its 1.25th most extreme draw)."""
    tail = (1 - level) / 2
    return max(RESAMPLES, math.ceil(round(TAIL_DRAWS / tail, 6))) if tail > 0 else RESAMPLES


def to_baseline(groups: dict[str, list[list[float]]], baseline: str, level: float,
                run_length: int | None = None) -> dict[str, dict[str, Any]]:
    """Every subject's ratio to `baseline`, paired by cycle ({subject: its rounds grouped by
    cycle}), with its percentile-bootstrap interval at `level`: what statistics.rank() gives
    as to_baseline, without the pairs between subjects (a look's cost)."""
    groups = {s: g for s, g in groups.items() if g}
    if baseline not in groups:
        return {}
    boot = PairedBootstrap(groups, level, resamples_for(level), run_length=run_length)
    out = {}
    for s in groups:
        if s != baseline:
            ratio, (low, high) = boot.ratio(s, baseline)
            out[s] = {"ratio": ratio, "ci": [low, high]}
    return out


def half_width(row: dict[str, Any]) -> float:
    """An interval's half-width relative to its ratio, the wider side: ±2 % means both
    ends within 2 % of the ratio."""
    ratio, (low, high) = row["ratio"], row["ci"]
    if not ratio or any(map(math.isnan, (ratio, low, high))):
        return math.inf
    return max(high - ratio, ratio - low) / ratio


def widths_summary(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The median and the worst half-width of a set of ratios, and which is worst."""
    widths = {s: half_width(r) for s, r in rows.items()}
    if not widths:
        return {"ratios": 0, "median_half_width": None, "worst_half_width": None, "widest": None}
    ordered = sorted(widths.values())
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    widest = max(widths, key=lambda s: widths[s])
    return {"ratios": len(widths), "median_half_width": median, "worst_half_width": widths[widest],
            "widest": widest}


@dataclass(frozen=True)
class Rule:
    """Stop an operation at the first look where every ratio's interval, at that look's
    level, is within ±target of its ratio; at the cap in any case. target None: no early
    stop, one look at the cap at the plain CONFIDENCE (the fixed design)."""
    cap: int
    target: float | None = None
    first: int = FIRST_LOOK
    confidence: float = CONFIDENCE
    corrected: bool = True  # False: every look at the plain confidence (what the correction is for; tests only)

    @classmethod
    def from_env(cls, cap: int) -> Rule:
        target = float(os.environ.get("LAB_BENCH_TARGET", "0.02") or 0)
        first = int(os.environ.get("LAB_BENCH_FIRST_LOOK", FIRST_LOOK))
        return cls(cap=cap, target=target if target > 0 else None, first=first)

    @property
    def looks(self) -> tuple[int, ...]:
        return look_points(self.cap, self.first) if self.target else (self.cap,)

    @property
    def levels(self) -> tuple[float, ...]:
        if not self.corrected:
            return (self.confidence,) * len(self.looks)
        return spend(self.looks, self.confidence)

    def level_at(self, cycles: int) -> float:
        """The level of the look at `cycles` (a run stopped short of every look, e.g. by an
        error, is quoted at the last look's level, the lowest of them: no look
        was taken there, so no choice was made on it)."""
        return dict(zip(self.looks, self.levels, strict=True)).get(cycles, self.levels[-1])

    def decide(self, cycles: int, to_baseline: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The look at `cycles`, given every ratio's interval at level_at(cycles): stop or go on."""
        summary = widths_summary(to_baseline)
        last = cycles >= self.looks[-1]
        narrow = self.target is not None and summary["ratios"] > 0 and \
            summary["worst_half_width"] <= self.target
        if narrow:
            reason = f"every ratio within ±{self.target:.1%} after {cycles} cycles"
        elif last:
            reason = f"the cap, {cycles} cycles" + (
                "" if self.target is None or summary["worst_half_width"] is None else
                f" (widest: {summary['widest']} ±{summary['worst_half_width']:.1%}, "
                f"target ±{self.target:.1%})")
        else:
            reason = ""
        return {"cycles": cycles, "level": self.level_at(cycles), **summary,
                "stop": narrow or last, "reason": reason}

    def describe(self) -> dict[str, Any]:
        return {"rule": "fixed looks, alpha spent in proportion to cycles (Bonferroni over looks)"
                        if self.target else "fixed number of cycles",
                "target_half_width": self.target, "looks": list(self.looks),
                "levels": [round(v, 6) for v in self.levels], "confidence_over_looks": self.confidence}
