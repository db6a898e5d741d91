"""Runs of k6 against the lab's implementations: one run, a closed-model
sweep over client counts, an open-model knee search, and the invalid-run rule.

A run's figures (load.k6.Samples → HDR percentiles, throughput, errors by
kind) come from its steady window: it starts `warmup_s` after the first
answered request (for WebSocket, not before the last connection is open) and
lasts `steady_s`. CPU and memory of the service's process tree, the
database's and k6's own are sampled at 1 Hz (lab.resources.Sampler) over the
whole k6 run; CPU µs per request divides each one's CPU seconds by every
request answered in that run.

Invalid runs (never reported as the service's figure): k6 dropped
iterations (it could not start them on time), or the generator's own CPU
passed GENERATOR_CPU_LIMIT of the cores it runs on, or nothing was answered.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from clients import check_health
from lab.registry import Implementation
from lab.resources import Sampler
from lab.settings import threads
from lab.stack import Lab
from load import k6, operations
from load.pinning import Pinning, pin_tree

GENERATOR_CPU_LIMIT = 0.60   # of the generator's cores
P99_LIMIT_MS = 50.0          # the open model's knee: the highest rate held at p99 ≤ this
HELD_FRACTION = 0.95         # ... answering at least this share of the offered rate, no errors
CLOSED_CLIENTS = (10, 50, 100, 500, 1000)
# Warm-up + window of one run, at most: long enough for a round of 1,000
# clients on the slowest service (GraphQL on graphene, ~150 requests/s at 1,000
# clients here: 6.7 s a round), which at 8 s was cut to a 5.3 s window and
# judged "not a steady state"; the fast services' runs stay ~2 s.
MAX_RUN_S = 16.0
GRACEFUL_STOP = "2s"


@dataclass
class Settings:
    operation: str = "fetch-one"
    warmup_s: float = 1.0
    steady_s: float = 2.0
    p99_limit_ms: float = P99_LIMIT_MS
    pinning: Pinning | None = None
    target_host: str | None = None       # dial this host instead of the one the service binds
    segments: int = 1                     # k6 processes, by execution segments
    ws_connect_s_per_client: float = 1 / 250  # WebSocket: run time added per client to connect them all
    # Generator namespaces (load.netns): (namespace, the address it dials the services at).
    netns: list[tuple[str, str]] = field(default_factory=list)


def max_connections(impl: Implementation) -> int | None:
    """What the manifest says the implementation can hold at once (None: no limit stated)."""
    value = impl.manifest.get("load", {}).get("max_connections")
    if value == "threads":
        return threads()
    return int(value) if value is not None else None


def endpoint(lab: Lab, impl: Implementation, s: Settings, dial: str | None = None) -> str:
    """The service's endpoint as a client dials it: the bind address (LAB_HOST)
    replaced by `dial` or --target-host when given."""
    url = lab.endpoints[impl.name]
    target = dial or s.target_host
    if target:
        from lab.settings import host
        url = url.replace(host(), target, 1)
    return url


def executor(protocol: str, model: str, clients: int, rate: float | None, seconds: float) -> dict[str, Any]:
    if protocol in operations.MESSAGING:  # one connection per VU for the whole run (load/scripts/ws.js)
        return {"executor": "per-vu-iterations", "vus": clients, "iterations": 1,
                "maxDuration": f"{math.ceil(seconds) + 60}s", "gracefulStop": "10s"}
    # gracefulStop: requests still in flight when the duration ends are past
    # the window (never counted); 2 s to finish, then k6 drops them.
    if model == "closed":
        return {"executor": "constant-vus", "vus": clients, "duration": f"{seconds:.3f}s",
                "gracefulStop": GRACEFUL_STOP}
    return {"executor": "constant-arrival-rate", "rate": round(rate or 1), "timeUnit": "1s",
            "duration": f"{seconds:.3f}s", "preAllocatedVUs": clients, "maxVUs": clients,
            "gracefulStop": GRACEFUL_STOP}


def open_vus(protocol: str, rate: float) -> int:
    """VUs (connections) for an open-model run: enough to hold `rate` with
    every reply taking up to a second, so a drop means the service is far past
    its knee; WebSocket: fixed connections, each paced."""
    if protocol in operations.MESSAGING:
        return 50
    return int(min(1000, max(20, math.ceil(rate * 1.0))))


def run(lab: Lab, impl: Implementation, s: Settings, *, model: str, clients: int,
        rate: float | None = None, calls: int | None = None, round_s: float = 0.0) -> dict[str, Any]:
    """One k6 run; the result row (figures, resources, validity). `round_s`:
    the expected time for every client to be answered once (closed model,
    from the previous level's throughput): warm-up and window stretch to
    hold a round and two, within MAX_RUN_S."""
    protocol = impl.protocol
    limit = max_connections(impl)
    if limit is not None and clients > limit:
        return {"implementation": impl.name, "model": model, "clients": clients, "rate": rate,
                "skipped": f"its manifest says it holds at most {limit} connections at once "
                           f"({impl.manifest.get('concurrency', '')})"}
    ws_connect_allowance = clients * s.ws_connect_s_per_client if protocol in operations.MESSAGING else 0.0
    warmup = max(s.warmup_s, 1.2 * round_s)
    steady = max(s.steady_s, 2.0 * round_s)
    if warmup + steady > MAX_RUN_S:
        warmup, steady = MAX_RUN_S / 3, 2 * MAX_RUN_S / 3
    seconds = warmup + steady + ws_connect_allowance
    plan: dict[str, Any] = {
        "target": endpoint(lab, impl, s), "request": operations.request(protocol, endpoint(lab, impl, s),
                                                                         s.operation),
        "executor": executor(protocol, model, clients, rate, seconds), "timeout": "10s"}
    if protocol in operations.MESSAGING:
        plan["duration_s"] = seconds if calls is None else None
        if model == "open":
            plan.update(rate=rate, vus=clients)
    if calls is not None:
        plan["calls"] = calls
    if protocol in ("rest", "graphql"):
        plan["request"].setdefault("headers", {})
    pinning = s.pinning
    n = max(1, s.segments)
    sequence = ",".join(_frac(i, n) for i in range(n + 1))
    runs = []
    for i in range(n):
        part = plan
        namespace = None
        if s.netns:  # this segment's k6 runs in its namespace and dials its link's host address
            namespace, dial = s.netns[i % len(s.netns)]
            url = endpoint(lab, impl, s, dial)
            part = {**plan, "target": url, "request": operations.request(protocol, url, s.operation)}
            if protocol in ("rest", "graphql"):
                part["request"].setdefault("headers", {})
        runs.append(k6.K6Run(protocol, part, cpus=set(pinning.generator) if pinning and pinning.enabled else None,
                             segment=(f"{_frac(i, n)}:{_frac(i + 1, n)}" if n > 1 else None),
                             segments=sequence if n > 1 else None, netns=namespace))
    pids = {impl.name: lab.pids[impl.name]}
    if lab.database.pid:
        pids["database"] = lab.database.pid
    if pinning and pinning.enabled:
        for pid in pids.values():
            pin_tree(pid, pinning.services)
    settled_s = settle(lab, impl)
    offset = time.time() - time.monotonic()
    for r in runs:
        r.start()
    for i, r in enumerate(runs):
        pids[f"generator{i}" if n > 1 else "generator"] = r.pid
    try:
        with Sampler(pids) as sampler:
            for r in runs:
                r.wait(timeout=seconds + 120)
    finally:
        for r in runs:
            r.stop()
    # The window: `warmup` after the first request started (and not before the
    # last WebSocket opened), `steady` long; the same for every k6 process.
    starts = [k6.run_start(r.check_output(), protocol) for r in runs]
    firsts = [f for f, _ in starts if f is not None]
    connected = [c for _, c in starts if c is not None]
    begin = min(firsts) + int(warmup * 1e6) if firsts else 0
    if connected:
        begin = max(begin, max(connected))
    window_us = (begin, begin + int(steady * 1e6))
    samples = k6.Samples()
    for r in runs:
        samples.merge(k6.read_samples(r.csv, protocol, window_us))
    failures = [r.log_tail() for r in runs if r.popen and r.popen.returncode not in (0, None)]
    for r in runs:
        r.cleanup()
    window = (window_us[0] / 1e6, min(window_us[1], (samples.last_us or 0) + 1) / 1e6)
    row = _row(impl, s, model, clients, rate, calls, samples, window, sampler, offset, pinning, n,
               failures,
               {f"generator{i}" if n > 1 else "generator": r for i, r in enumerate(runs)})
    row["settled_before_s"] = settled_s
    return row


def _frac(i: int, n: int) -> str:
    return "0" if i == 0 else "1" if i == n else f"{i}/{n}"


def settle(lab: Lab, impl: Implementation, prompt_s: float = 0.25, timeout: float = 90.0) -> float:
    """Wait until the service has worked off what an earlier run left queued
    (requests of clients that have gone): until a health call is answered
    within `prompt_s`, at most `timeout` s. Returns the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        t = time.monotonic()
        try:
            check_health(impl.protocol, lab.endpoints[impl.name])
        except Exception:  # still busy (timed out): ask again
            pass
        else:
            if time.monotonic() - t < prompt_s:
                break
        time.sleep(0.2)
    return round(time.monotonic() - began, 2)


def _row(impl: Implementation, s: Settings, model: str, clients: int, rate: float | None,
         calls: int | None, samples: k6.Samples, window: tuple[float, float], sampler: Sampler,
         offset: float, pinning: Pinning | None, segments: int, k6_failures: list[str],
         exited: dict[str, k6.K6Run]) -> dict[str, Any]:
    length = window[1] - window[0]
    ops_window = samples.ops
    summary = sampler.summary()
    resources: dict[str, Any] = {}
    for name, stats in summary.items():
        run = exited.get(name)
        if run is not None and run.cpu_s is not None:
            # k6 has exited: the kernel's account, not the sampler's (whose 1 Hz
            # readings of a 3 s k6 once all read its RSS as 0, in make test)
            stats = {**stats, "cpu_s": run.cpu_s, "rss_max": run.rss_peak_bytes,
                     "cpu_percent_mean": 100 * run.cpu_s / sampler.elapsed if sampler.elapsed else 0.0}
        # Samples of a process still alive (a k6 that has exited reads as 0 B).
        in_window = [p for t, p, rss in sampler.samples[name]
                     if rss and window[0] <= t + offset <= window[1] + 0.5]
        resources[name] = {
            "cpu_s": round(stats["cpu_s"], 4),
            "cpu_percent": round(sum(in_window) / len(in_window), 1) if in_window
            else round(stats["cpu_percent_mean"], 1),
            "cpu_percent_whole_run": round(stats["cpu_percent_mean"], 1),
            "cpu_us_per_request": round(1e6 * stats["cpu_s"] / samples.ops_total, 1) if samples.ops_total else None,
            "rss_peak_bytes": stats["rss_max"], "rss_mean_bytes": round(stats["rss_mean"]),
            "samples": stats["samples"]}
    generators = [n for n in resources if n.startswith("generator")]
    generator_cores = len(pinning.generator) if pinning and pinning.enabled else _cores()
    generator_cpu = sum(resources[g]["cpu_percent"] for g in generators)  # all k6 processes together
    reasons = judge(model, clients, ops_window, samples.dropped_iterations, generator_cpu, generator_cores,
                    k6_failures)
    return {
        "implementation": impl.name, "protocol": impl.protocol, "operation": s.operation,
        "model": model, "clients": clients, "rate": rate, "calls_per_client": calls,
        "window_s": round(length, 3), "latency_us": k6.latency_summary(samples.histogram),
        "latency_clock": k6.CLOCK[impl.protocol],
        "throughput_rps": round(ops_window / length, 1) if length > 0 else None,
        "ops_window": ops_window, "ops_total": samples.ops_total,
        "errors": dict(samples.errors), "dropped_iterations": samples.dropped_iterations,
        "connect_us": k6.latency_summary(samples.connect) if samples.connect.get_total_count() else None,
        "bytes_per_op": ({"sent": round(samples.bytes_sent / ops_window, 1),
                          "received": round(samples.bytes_received / ops_window, 1)}
                         if ops_window and samples.bytes_sent else None),
        "resources": resources, "generator_cpu_percent": round(generator_cpu, 1),
        "generator_cores": generator_cores, "generator_processes": segments,
        "valid": not reasons, "invalid_reasons": reasons,
        "histogram": k6.encode(samples.histogram),
    }


def judge(model: str, clients: int, ops_window: int, dropped: int, generator_cpu: float,
          generator_cores: int, k6_failures: list[str] | None = None) -> list[str]:
    """The invalid-run rule: why a run's figures are not the service's ([] = valid)."""
    reasons = []
    if dropped:
        reasons.append(f"k6 dropped {dropped} iterations (it could not start them on time)")
    if generator_cpu > 100 * GENERATOR_CPU_LIMIT * generator_cores:
        reasons.append(f"the generator used {generator_cpu:.0f} % CPU, over {GENERATOR_CPU_LIMIT:.0%} of its "
                       f"{generator_cores} core(s)")
    if ops_window == 0:
        reasons.append("no request answered in the steady window")
    elif model == "closed" and ops_window < clients:
        reasons.append(f"{ops_window} requests answered in the window for {clients} clients: "
                       f"not a steady state (the window is capped at {MAX_RUN_S:.0f} s a run)")
    if k6_failures:
        reasons.append("k6 exited with an error: " + k6_failures[0][-300:])
    return reasons


def _cores() -> int:
    import os
    return len(os.sched_getaffinity(0))


def closed_sweep(lab: Lab, impl: Implementation, s: Settings, clients: tuple[int, ...],
                 report: Any = print, previous: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Closed-model runs at each client count; `previous`: the runs already
    made (their last throughput sizes the next window)."""
    rows: list[dict[str, Any]] = []
    throughput = next((r["throughput_rps"] for r in reversed(previous or []) if r.get("throughput_rps")), 0.0)
    limit = max_connections(impl)
    if limit is not None and clients and min(clients) > limit and not any("skipped" not in r for r in previous or []):
        clients = (limit, *clients)  # as many as it holds, then the levels it cannot (recorded as skipped)
    for n in clients:
        row = run(lab, impl, s, model="closed", clients=n, round_s=n / throughput if throughput else 0.0)
        report(line(row))
        rows.append(row)
        throughput = row.get("throughput_rps") or throughput
    return rows


def knee_search(lab: Lab, impl: Implementation, s: Settings, start_rate: float, max_steps: int = 4,
                report: Any = print) -> tuple[list[dict[str, Any]], float | None]:
    """Constant arrival rates stepped from `start_rate` (×1.3 while held,
    ×0.6 if the first is not): the knee is the highest rate held."""
    rows: list[dict[str, Any]] = []
    rate, knee = max(5.0, start_rate), None
    for _ in range(max_steps):
        vus = open_vus(impl.protocol, rate)
        limit = max_connections(impl)
        if limit is not None:
            vus = min(vus, limit)
        row = run(lab, impl, s, model="open", clients=vus, rate=round(rate))
        row["held"] = held(row, s)
        report(line(row))
        rows.append(row)
        if row["held"]:
            knee = max(knee or 0, round(rate))
            rate *= 1.3
        elif knee is None:
            rate *= 0.6
        else:
            break
    return rows, knee


def held(row: dict[str, Any], s: Settings) -> bool:
    if not row.get("valid") or row.get("errors"):
        return False
    p99 = row["latency_us"]["p99"]
    return (p99 is not None and p99 <= 1000 * s.p99_limit_ms
            and (row["throughput_rps"] or 0) >= HELD_FRACTION * (row["rate"] or 0))


def line(row: dict[str, Any]) -> str:
    what = f"{row['implementation']:<34}{row['model']:<7}"
    what += f"{row['clients']:>5} VUs" + (f" @{row['rate']:>6}/s" if row.get("rate") else " " * 9)
    if "skipped" in row:
        return f"{what}  skipped: {row['skipped']}"
    lat = row["latency_us"]

    def fmt(v: float | None) -> str:
        return f"{v / 1000:8.2f}" if v is not None else "       -"
    errors = sum(row["errors"].values())
    resources = row["resources"]
    service = resources.get(row["implementation"], {})
    return (f"{what} p50 {fmt(lat['p50'])} p99 {fmt(lat['p99'])} ms  {row['throughput_rps'] or 0:8.0f}/s"
            f"  err {errors:<5} svc {service.get('cpu_percent', 0):5.0f}%"
            f" {(service.get('cpu_us_per_request') or 0):7.0f}µs/req"
            f"  gen {row['generator_cpu_percent']:4.0f}%"
            + ("" if row["valid"] else "  INVALID: " + "; ".join(row["invalid_reasons"])))
