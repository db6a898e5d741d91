"""One run of the broadcast test on Locust (load/locustfile.py,
--lab-broadcasts): `receivers` connections and one sender; the sender
broadcasts BROADCASTS messages, INTERVAL_MS apart, once the server reports
every receiver connected; each receiver records receive time − send time
(time.time_ns() at both ends: one machine's clock, whichever Locust process
the receiver runs in).

A broadcast counts only if the server delivered it to every receiver (its
reply's `delivered`); the run's latency is over every receipt of those, and
receipts missing from them are reported as lost.
"""

from __future__ import annotations

import time
from typing import Any

from lab.host.pinning import pin_tree
from lab.resources import cpu_seconds
from lab.stack import Lab
from load import histograms, runner
from load.engine import LocustRun, Plan

BROADCASTS = 3         # measured broadcasts per run
INTERVAL_MS = 1000     # between them (the study: one every 3 s)


def run(lab: Lab, impl: Any, receivers: int, s: runner.Settings) -> dict[str, Any]:
    pins = s.pinning
    connect_allowance = 10 + receivers / 50  # s: every receiver connected, on a loaded machine
    seconds = connect_allowance + (BROADCASTS + 2) * INTERVAL_MS / 1000
    plan = Plan(impl.name, impl.protocol, runner.endpoint(lab, impl, s), operation="broadcast",
                users=receivers + 1, duration_s=seconds, client_options=impl.client_options())
    if pins and pins.enabled:
        for pid in (lab.pids[impl.name], lab.database.pid):
            if pid:
                pin_tree(pid, pins.services)
    runner.settle(lab, impl)
    job = LocustRun(plan, workers=s.workers, cpus=set(pins.generator) if pins and pins.enabled else None,
                    netns=s.netns, extra=["--lab-broadcasts", str(BROADCASTS), "--lab-interval-ms", str(INTERVAL_MS)])
    server = lab.pids[impl.name]
    cpu_before = cpu_seconds(server)
    t0 = time.monotonic()
    job.start()
    try:
        job.wait(timeout=seconds + 90)
        result = job.result()
    finally:
        job.stop()
        failures = job.failures()
        job.cleanup()
    wall = time.monotonic() - t0
    row = fold(result, receivers, BROADCASTS)
    row.update(receivers=receivers, senders=1, interval_ms=INTERVAL_MS, wall_s=round(wall, 2),
               server_cpu_s=round(cpu_seconds(server) - cpu_before, 3),
               generator_cpu_s=round(sum(p.cpu_s or 0 for p in job.processes), 3))
    if failures:
        row["valid"] = False
        row["invalid_reasons"].append(f"Locust exited with an error: {failures[-300:]}")
    return row


def fold(result: dict[str, Any], receivers: int, broadcasts: int) -> dict[str, Any]:
    """The run's figures from the workers' results: latency (ms) over receipts
    of fully delivered broadcasts, connection time (ms), errors by kind."""
    delivered: dict[int, int] = {}
    receipts: dict[int, Any] = {}
    errors: dict[str, int] = {}
    for w in result["workers"]:
        for n, count in w["delivered"].items():
            delivered[int(n)] = count
        for n, text in w["receipts"].items():
            receipts.setdefault(int(n), histograms.new_histogram()).add(histograms.decode(text))
        for kind, count in w["errors_total"].items():
            errors[kind] = errors.get(kind, 0) + count
    full = [n for n, count in sorted(delivered.items()) if count >= receivers]
    latency = histograms.new_histogram()
    for n in full:
        if n in receipts:
            latency.add(receipts[n])
    received = latency.get_total_count()
    lost = len(full) * receivers - received
    reasons = []
    if len(full) < broadcasts:
        reasons.append(f"{len(full)} of {broadcasts} broadcasts reached every receiver "
                       f"(delivered: {dict(sorted(delivered.items()))})")
    if lost:
        reasons.append(f"{lost} receipts of delivered broadcasts missing")
    connect = histograms.merged([w["connect"] for w in result["workers"]])
    return {"broadcasts": len(full), "latency_ms": describe(latency), "connect_ms": describe(connect),
            "lost": lost, "errors": errors, "valid": not reasons, "invalid_reasons": reasons}


def describe(histogram: Any) -> dict[str, Any]:
    """mean, median, σ, min, max, count, in ms: the study's Table 2 statistics
    (from the µs histogram: within its 3 significant digits)."""
    count = histogram.get_total_count()
    if not count:
        return {"count": 0, "mean": None, "median": None, "stddev": None, "min": None, "max": None}
    return {"count": count, "mean": round(histogram.get_mean_value() / 1000, 3),
            "median": round(histogram.get_value_at_percentile(50) / 1000, 3),
            "stddev": round(histogram.get_stddev() / 1000, 3),
            "min": round(histogram.get_min_value() / 1000, 3), "max": round(histogram.get_max_value() / 1000, 3)}
