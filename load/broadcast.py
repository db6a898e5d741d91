"""One run of Fernando & Engel's broadcast test with k6 (load/scripts/broadcast.js):
`receivers` connections and one sender; the sender broadcasts BROADCASTS
messages, INTERVAL_MS apart, once the server reports every receiver
connected; each receiver records receive time − send time (the same k6
process's millisecond clock at both ends).

A broadcast counts only if the server delivered it to every receiver
(its reply's `delivered`); the run's latency is over every receipt of
those, and receipts missing from them are reported as lost.
"""

from __future__ import annotations

import csv
import math
import statistics
import time
from pathlib import Path
from typing import Any

from lab.resources import cpu_seconds
from lab.stack import Lab
from load import k6, runner
from load.pinning import Pinning, pin_tree

BROADCASTS = 3         # measured broadcasts per run
INTERVAL_MS = 1000     # between them (the study: one every 3 s)
PROBE_MS = 250         # the sender asks again whether every receiver is connected
PAD = 80               # payload {"n", "sent_ms", "pad"}: ~120 bytes of JSON, as the echo test's


def plan(lab: Lab, impl: Any, receivers: int) -> dict[str, Any]:
    connect_allowance = 10 + receivers / 50  # s: every receiver connected, on a loaded machine
    seconds = connect_allowance + (BROADCASTS + 2) * INTERVAL_MS / 1000
    return {"target": lab.endpoints[impl.name], "framing": impl.protocol, "receivers": receivers,
            "broadcasts": BROADCASTS, "interval_ms": INTERVAL_MS, "probe_ms": PROBE_MS, "pad": PAD,
            "duration_s": seconds, "request": {},
            "executor": {"executor": "per-vu-iterations", "vus": receivers + 1, "iterations": 1,
                         "maxDuration": f"{math.ceil(seconds) + 30}s", "gracefulStop": "5s"}}


def run(lab: Lab, impl: Any, receivers: int, pins: Pinning) -> dict[str, Any]:
    p = plan(lab, impl, receivers)
    if pins.enabled:
        for pid in (lab.pids[impl.name], lab.database.pid):
            if pid:
                pin_tree(pid, pins.services)
    runner.settle(lab, impl)
    job = k6.K6Run(impl.protocol, p, cpus=set(pins.generator) if pins.enabled else None, script="broadcast.js")
    server = lab.pids[impl.name]
    cpu_before = cpu_seconds(server)
    t0 = time.monotonic()
    job.start()
    try:
        code = job.wait(timeout=p["duration_s"] + 90)
    finally:
        job.stop()
    wall = time.monotonic() - t0
    server_cpu = cpu_seconds(server) - cpu_before
    try:
        row = fold(job.check_output(), receivers, BROADCASTS)
    finally:
        log = job.log_tail() if code else ""
        job.cleanup()
    row.update(receivers=receivers, senders=1, interval_ms=INTERVAL_MS, wall_s=round(wall, 2),
               server_cpu_s=round(server_cpu, 3), generator_cpu_s=job.cpu_s, k6_exit=code)
    if code:
        row["valid"] = False
        row["invalid_reasons"].append(f"k6 exited with {code}: {log[-300:]}")
    return row


def _tag(extra: str, name: str) -> str | None:
    for part in extra.split("&"):
        key, _, value = part.partition("=")
        if key == name:
            return value
    return None


def fold(path: Path, receivers: int, broadcasts: int) -> dict[str, Any]:
    """The run's figures from k6's CSV: latency (ms) over receipts of fully
    delivered broadcasts, connection time (ms), errors by kind."""
    latency: dict[str, list[float]] = {}
    delivered: dict[str, int] = {}
    connect: list[float] = []
    errors: dict[str, int] = {}
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None) or []
        col = {name: i for i, name in enumerate(header)}
        for row in reader:
            name, value, extra = row[0], row[2], row[col["extra_tags"]] if "extra_tags" in col else ""
            if name == "lab_latency":
                latency.setdefault(_tag(extra, "n") or "?", []).append(float(value))
            elif name == "lab_delivered":
                delivered[_tag(extra, "n") or "?"] = round(float(value))
            elif name == "lab_connect":
                connect.append(float(value))
            elif name == "lab_errors":
                kind = _tag(extra, "kind") or "unknown"
                errors[kind] = errors.get(kind, 0) + round(float(value))
    full = [n for n, count in sorted(delivered.items()) if count >= receivers]
    samples = [x for n in full for x in latency.get(n, [])]
    lost = len(full) * receivers - len(samples)
    reasons = []
    if len(full) < broadcasts:
        reasons.append(f"{len(full)} of {broadcasts} broadcasts reached every receiver "
                       f"(delivered: {dict(sorted(delivered.items()))})")
    if lost:
        reasons.append(f"{lost} receipts of delivered broadcasts missing")
    return {"broadcasts": len(full), "latency_ms": describe(samples), "connect_ms": describe(connect),
            "lost": lost, "errors": errors, "valid": not reasons, "invalid_reasons": reasons}


def describe(values: list[float]) -> dict[str, Any]:
    """mean, median, σ (sample), min, max, count: the study's Table 2 statistics."""
    if not values:
        return {"count": 0, "mean": None, "median": None, "stddev": None, "min": None, "max": None}
    return {"count": len(values), "mean": round(statistics.fmean(values), 3),
            "median": round(statistics.median(values), 3),
            "stddev": round(statistics.stdev(values), 3) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}
