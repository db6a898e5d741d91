"""The noise guard: how fast and how busy the machine was around a run.

    before = snapshot()
    ... the run ...
    guard = verdict(before, snapshot())   # {"flagged": bool, "reasons": [...], ...}

A snapshot holds the pure-Python calibration (lab.interpreter's probe, run in
this interpreter: the machine's speed for Python at that moment), the load
average and the CPU counters of /proc/stat (steal: time the hypervisor gave
this machine's virtual CPUs to someone else). A run is flagged when the
calibration moved by more than THRESHOLD between before and after: the
machine's speed changed under the run, so its absolute figures describe a
mixture. THRESHOLD was chosen by measurement (README, "Noise guard"):
back-to-back probes on a quiet-ish machine move by a few %, under a
neighbour's compile by up to ~2x.

The calibration is the best of seven short loops: it sees the machine's peak
speed for a small pure-Python loop, and missed a machine whose CPU per
operation rose 20 % between runs (it moved -4.6 %). And one probe lasts
~0.2 s, while this machine's vCPUs flip between two speeds in spells of
seconds (~95 and ~168 µs, README "Noise guard"): one probe before and one
after a run was a coin toss. So a snapshot takes SAMPLES probes SPACING s
apart and keeps the fastest (the machine's fast state: 92.8-94.2 µs in
three back-to-back snapshots whose medians of nine read 102-126 µs), every
sample, and the share of them more than SLOW × slower than the fastest
(recorded, not flagged: nine samples cannot measure a share). A machine
slow through a whole snapshot still moves its fastest. The guard also reads
the run's own workload: the baseline's (direct's) median over the last fifth
of each operation's cycles against the first fifth (`drift`), flagged beyond
DRIFT_THRESHOLD.

Those two say the machine's speed moved under the run: its absolute times
(µs) describe a mixture. A ratio paired by cycle is another matter: a change
that slows every subject alike cancels in it. `paired_drift` is the same
first-fifth/last-fifth comparison on a ratio's own per-cycle values, with
its interval: what a claim about a ratio is judged by (studies/claims.py). In
the first full reference run (2026-12-03, 99 min) direct moved -11.8 / -8.6 /
+40.4 % (insert / fetch-one / fetch-100) while the 58 subjects' paired ratios
to it moved a median -0.1 / -0.4 / -0.8 % (the widest -7.2 / -7.4 / +8.5 %).
A fifth of 800 cycles is 160, and a per-cycle ratio varies by ~30 % (its
coefficient of variation there): the 99 % interval of a ratio's drift is
about ±8 % wide (grpcio ÷ Flask, insert: +5.8 % [-2.3, +13.7]), so a bare
threshold on the point would flag ratios by chance. A ratio counts as moved
when it moved beyond the threshold and its interval excludes no movement.
"""

from __future__ import annotations

import os
import time
from typing import Any

from lab import interpreter
from lab.stats.statistics import CONFIDENCE, RESAMPLES, block_draws, cycles_of, paired_ratios, rounds_per_cycle

THRESHOLD = float(os.environ.get("LAB_NOISE_THRESHOLD", "0.10"))
DRIFT_THRESHOLD = float(os.environ.get("LAB_DRIFT_THRESHOLD", "0.05"))
DRIFT_SHARE = 0.2
SAMPLES = int(os.environ.get("LAB_NOISE_SAMPLES", "9"))
SPACING = 0.5  # seconds between two probes: ~6 s a snapshot, spanning a spell or two
SLOW = 1.3     # a probe this much slower than the snapshot's fastest fell in a slow spell
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_counters() -> dict[str, int]:
    """The machine-wide CPU line of /proc/stat, in clock ticks."""
    try:
        with open("/proc/stat") as f:
            values = f.readline().split()[1:]
    except OSError:
        return {}
    return {name: int(v) for name, v in zip(_FIELDS, values, strict=False)}


def snapshot(samples: int = SAMPLES, spacing: float = SPACING) -> dict[str, Any]:
    """The machine now: the fastest of `samples` calibration probes `spacing` s
    apart (each sample kept, and the share in slow spells), the load average
    and the CPU counters."""
    taken = []
    for i in range(max(samples, 1)):
        if i:
            time.sleep(spacing)
        value = interpreter.probe().get("calibration_us")
        if value:
            taken.append(value)
    fastest = min(taken, default=None)
    slow = sum(t > SLOW * fastest for t in taken) / len(taken) if taken else None
    return {"time": time.time(), "calibration_us": fastest, "calibration_samples": taken, "slow_share": slow,
            "loadavg": list(os.getloadavg()), "cpu_ticks": cpu_counters()}


def drift(times: list[float], share: float = DRIFT_SHARE) -> float | None:
    """median(last `share` of the rounds) / median(first `share`) - 1, rounds in
    the order taken: how much the subject slowed (+) or sped up (-) in the run."""
    n = int(len(times) * share)
    if n < 5:
        return None
    first, last = sorted(times[:n]), sorted(times[-n:])
    return last[n // 2] / first[n // 2] - 1


def drift_interval(values: list[float], share: float = DRIFT_SHARE, confidence: float = CONFIDENCE,
                   resamples: int = RESAMPLES, seed: int = 1) -> tuple[float, float] | None:
    """drift()'s percentile bootstrap interval: the first and the last `share` of `values` each resampled
    (apart: two periods of the run) in runs of consecutive cycles, as the ratios' own intervals are
    (lab/stats/statistics.py, block_draws). None below 5 values a part."""
    import numpy as np  # the bootstrap's, as in lab/stats/statistics.py
    n = int(len(values) * share)
    if n < 5:
        return None
    first, last = np.asarray(values[:n]), np.asarray(values[-n:])
    moved = (np.median(last[block_draws(n, resamples, seed + 1)], axis=1)
             / np.median(first[block_draws(n, resamples, seed)], axis=1) - 1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(moved, [tail, 1 - tail])
    return float(low), float(high)


def paired_drift(result: dict[str, Any], operation: str, a: str,
                 b: str) -> tuple[float, tuple[float, float]] | None:
    """drift() of a ÷ b per cycle in a latency result's `operation`, and its interval (the rows' data_s,
    paired by cycle as the result's design visited them): how much a's standing against b moved in the
    run; None without both subjects' rounds."""
    rows = (result.get("results") or {}).get(operation) or {}
    if not (rows.get(a, {}).get("data_s") and rows.get(b, {}).get("data_s")):
        return None
    design = result.get("context", {}).get("settings", {}).get("benchmark", {}).get("design") or {}
    ratios = paired_ratios(cycles_of(rows[a]["data_s"], rounds_per_cycle(design, a)),
                           cycles_of(rows[b]["data_s"], rounds_per_cycle(design, b)))
    moved, interval = drift(ratios), drift_interval(ratios)
    return None if moved is None or interval is None else (moved, interval)


def ratio_moved(found: tuple[float, tuple[float, float]], threshold: float = DRIFT_THRESHOLD) -> bool:
    """Whether a ratio's drift counts: beyond ±threshold, and its interval excludes 0."""
    moved, (low, high) = found
    return abs(moved) > threshold and not low <= 0 <= high


def verdict(before: dict[str, Any], after: dict[str, Any], threshold: float = THRESHOLD,
            baseline: dict[str, list[float]] | None = None,
            drift_threshold: float = DRIFT_THRESHOLD) -> dict[str, Any]:
    """The run's noise record: calibration change, steal and busy share of the
    machine between the two snapshots, load averages, the baseline's drift in
    each operation ({operation: its rounds in order}), and whether to flag it."""
    out: dict[str, Any] = {"threshold": threshold, "before": before, "after": after, "reasons": [],
                           "drift_threshold": drift_threshold, "baseline_drift": {}}
    for operation, times in (baseline or {}).items():
        moved = drift(times)
        if moved is None:
            continue
        out["baseline_drift"][operation] = moved
        if abs(moved) > drift_threshold:
            out["reasons"].append(f"direct's {operation} median moved {moved:+.1%} from the first fifth of "
                                  f"the run to the last (threshold ±{drift_threshold:.0%})")
    cb, ca = before.get("calibration_us"), after.get("calibration_us")
    if cb and ca:
        out["calibration_change"] = ca / cb - 1
        if abs(ca / cb - 1) > threshold:
            out["reasons"].append(f"the pure-Python calibration moved {ca / cb - 1:+.0%} "
                                  f"({cb:.0f} → {ca:.0f} µs; threshold ±{threshold:.0%})")
    else:
        out["reasons"].append("the calibration could not be measured")
    tb, ta = before.get("cpu_ticks") or {}, after.get("cpu_ticks") or {}
    if tb and ta:
        delta = {k: ta.get(k, 0) - tb.get(k, 0) for k in _FIELDS}
        total = sum(delta.values()) or 1
        out["steal_share"] = delta["steal"] / total
        out["busy_share"] = 1 - (delta["idle"] + delta["iowait"]) / total
    out["flagged"] = bool(out["reasons"])
    return out


def _spread(snap: dict[str, Any]) -> str:
    """' (fastest of 9 probes, 44 % of them in slow spells)'."""
    taken = snap.get("calibration_samples") or []
    if len(taken) < 2:
        return ""
    return f" (fastest of {len(taken)} probes, {snap.get('slow_share', 0) * 100:.0f} % of them in slow spells)"


def describe(guard: dict[str, Any]) -> str:
    """One line for the terminal and the report."""
    b, a = guard.get("before", {}), guard.get("after", {})
    parts = []
    if "calibration_change" in guard:
        parts.append(f"calibration {b.get('calibration_us')}{_spread(b)} → {a.get('calibration_us')}{_spread(a)} µs "
                     f"({guard['calibration_change']:+.1%})")
    if b.get("loadavg") and a.get("loadavg"):
        parts.append(f"load average {b['loadavg'][0]:.1f} → {a['loadavg'][0]:.1f}")
    if guard.get("baseline_drift"):
        parts.append("direct's drift " + ", ".join(f"{op} {d:+.1%}" for op, d in guard["baseline_drift"].items()))
    if "steal_share" in guard:
        parts.append(f"steal {guard['steal_share']:.1%}, machine busy {guard['busy_share']:.0%} during the run")
    head = "NOISY RUN: " + "; ".join(guard["reasons"]) + ". " if guard.get("flagged") else "noise guard: ok; "
    return head + "; ".join(parts)
