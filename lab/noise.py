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
"""

from __future__ import annotations

import os
import time
from typing import Any

from lab import interpreter

THRESHOLD = float(os.environ.get("LAB_NOISE_THRESHOLD", "0.10"))
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_counters() -> dict[str, int]:
    """The machine-wide CPU line of /proc/stat, in clock ticks."""
    try:
        with open("/proc/stat") as f:
            values = f.readline().split()[1:]
    except OSError:
        return {}
    return {name: int(v) for name, v in zip(_FIELDS, values, strict=False)}


def snapshot() -> dict[str, Any]:
    probe = interpreter.probe()
    return {"time": time.time(), "calibration_us": probe.get("calibration_us"),
            "loadavg": list(os.getloadavg()), "cpu_ticks": cpu_counters()}


def verdict(before: dict[str, Any], after: dict[str, Any], threshold: float = THRESHOLD) -> dict[str, Any]:
    """The run's noise record: calibration change, steal and busy share of the
    machine between the two snapshots, load averages, and whether to flag it."""
    out: dict[str, Any] = {"threshold": threshold, "before": before, "after": after, "reasons": []}
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


def describe(guard: dict[str, Any]) -> str:
    """One line for the terminal and the report."""
    b, a = guard.get("before", {}), guard.get("after", {})
    parts = []
    if "calibration_change" in guard:
        parts.append(f"calibration {b.get('calibration_us')} → {a.get('calibration_us')} µs "
                     f"({guard['calibration_change']:+.1%})")
    if b.get("loadavg") and a.get("loadavg"):
        parts.append(f"load average {b['loadavg'][0]:.1f} → {a['loadavg'][0]:.1f}")
    if "steal_share" in guard:
        parts.append(f"steal {guard['steal_share']:.1%}, machine busy {guard['busy_share']:.0%} during the run")
    head = "NOISY RUN: " + "; ".join(guard["reasons"]) + ". " if guard.get("flagged") else "noise guard: ok; "
    return head + "; ".join(parts)
