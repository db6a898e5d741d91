"""Runs of Locust against the lab's implementations: one run, a closed-model
sweep over client counts, an open-model knee search, and the invalid-run rule.

A run's figures come from each Locust process's steady window (load/locustfile.py:
it opens `warmup_s` after the process's first answer, for messaging protocols
not before all its users are connected, and lasts `steady_s`), merged over the
processes: HDR histograms added, counts summed, throughput the sum of each
process's answers over its own window. CPU and memory of the service's process
tree, the database's and every Locust process are sampled every half second
(lab.resources.Sampler) over the whole run; a process's CPU % is the mean of
its readings inside the window; CPU µs per request divides the service's and
the database's CPU seconds over the whole run by every request answered in it,
the generator's its in-window CPU by the window's answers.

Invalid runs (never reported as the service's figure): the generator's own
CPU passed GENERATOR_CPU_LIMIT of the cores it runs on; in the open model it
woke late for its scheduled sends (it could not hold the rate: WAKE_LAG_LIMIT);
nothing was answered, or (closed model) fewer requests than clients in the
window; a Locust process failed or a worker sent no window.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

from clients import check_health
from clients.protocols import get as protocol
from lab.environment import client_options
from lab.host.pinning import Pinning, pin_tree
from lab.registry import Implementation
from lab.resources import Sampler
from lab.settings import host, threads
from lab.stack import Lab
from load import histograms
from load.engine import LocustRun, Plan

GENERATOR_CPU_LIMIT = 0.60   # of the generator's cores
P99_LIMIT_MS = 50.0          # the open model's knee: the highest rate held at p99 ≤ this
HELD_FRACTION = 0.95         # ... answering at least this share of the offered rate, no errors
# Open model: a p99 of the generator's own lateness (a send due, its user woken late) above
# this, a fifth of the knee's p99 limit, is the generator's share of the tail, not the
# service's: it could not hold the rate. On this 2-core machine the loop's p99 lateness
# was 1.2-4 ms at 200-600 requests/s and 11 % / 31 % CPU (2026-12-02, 20 users).
WAKE_LAG_LIMIT_MS = 10.0
CLOSED_CLIENTS = (10, 50, 100, 500, 1000)
# Warm-up + window of one run, at most: long enough for a round of 1,000
# clients on the slowest service (~150 requests/s at 1,000 clients in the sweep of
# 2026-12-02: 6.7 s a round) and for the 1,000 answers a p99 needs.
MAX_RUN_S = 16.0
SLACK_S = 0.5                # after the window, before the stop
TAIL_ANSWERS = histograms.NEEDED["p99"]


@dataclass
class Settings:
    operation: str = "fetch-one"
    warmup_s: float = 1.0
    steady_s: float = 2.0
    p99_limit_ms: float = P99_LIMIT_MS
    pinning: Pinning | None = None
    target_host: str | None = None       # dial this host instead of the one the service binds
    workers: int = 0                      # Locust worker processes under one master (0: one local process)
    ws_connect_s_per_client: float = 1 / 250  # messaging: run time added per client to connect them all
    # Worker namespaces (load.netns): (namespace, the address it dials the services at).
    netns: list[tuple[str, str]] = field(default_factory=list)
    # The users of a Locust process on one connection, a stream each, where the subject's client
    # multiplexes (its variant speaks HTTP/2: lab/axes.py, axis http); the others a connection per user.
    share_connection: bool = False


# The client options (lab/axes.py, axis http) under which a client multiplexes calls on one connection.
MULTIPLEXED = ("h2", "h2c")


def shares_connection(impl: Implementation, s: Settings) -> bool:
    """Do this run's users share one connection per Locust process?"""
    return s.share_connection and impl.client_options().get("http") in MULTIPLEXED


def max_connections(impl: Implementation) -> int | None:
    """What the manifest says the implementation can hold at once (None: no limit stated)."""
    value = impl.max_connections
    if value == "threads":
        return threads()
    return int(value) if value is not None else None


def endpoint(lab: Lab, impl: Implementation, s: Settings) -> str:
    """The service's endpoint as a client dials it: the bind address (LAB_HOST)
    replaced by --target-host when given."""
    url = lab.endpoints[impl.name]
    return url.replace(host(), s.target_host, 1) if s.target_host else url


def open_users(rate: float, p99_limit_ms: float) -> int:
    """Users (connections) for an open-model run: enough that every scheduled
    send finds one free while replies take up to twice the p99 limit, so a
    send waits for a connection only when the service is far past its knee."""
    return int(min(1000, max(20, math.ceil(rate * 2 * p99_limit_ms / 1000))))


def run(lab: Lab, impl: Implementation, s: Settings, *, model: str, clients: int,
        rate: float | None = None, calls: int | None = None, round_s: float = 0.0,
        expected_rps: float = 0.0) -> dict[str, Any]:
    """One Locust run; the result row (figures, resources, validity). `round_s`:
    the expected time for every client to be answered once (closed model, from
    the previous level's throughput); `expected_rps`: the throughput expected
    (the previous level's): warm-up and window stretch to hold a round and
    two, and the answers a p99 needs, within MAX_RUN_S."""
    limit = max_connections(impl)
    if limit is not None and clients > limit:
        return {"implementation": impl.name, "model": model, "clients": clients, "rate": rate,
                "skipped": f"its manifest says it holds at most {limit} connections at once "
                           f"({impl.concurrency})"}
    messaging = protocol(impl.protocol).messaging
    connect_allowance = clients * s.ws_connect_s_per_client if messaging else 0.0
    warmup = max(s.warmup_s, 1.2 * round_s)
    expected = rate if model == "open" and rate else expected_rps
    steady = max(s.steady_s, 2.0 * round_s, 1.1 * TAIL_ANSWERS / expected if expected else 0.0)
    if warmup + steady > MAX_RUN_S:
        warmup, steady = min(warmup, MAX_RUN_S / 3), MAX_RUN_S - min(warmup, MAX_RUN_S / 3)
    duration = (calls is None) * (warmup + steady + connect_allowance + SLACK_S)
    plan = Plan(impl.name, impl.protocol, endpoint(lab, impl, s), operation=s.operation, model=model,
                users=clients, rate=rate or 0.0, warmup_s=warmup, steady_s=steady,
                duration_s=duration or 0.0, calls=calls or 0, connect_s=max(1.0, connect_allowance),
                client_options=client_options(impl), share_connection=shares_connection(impl, s))
    pinning = s.pinning
    pids = {impl.name: lab.pids[impl.name]}
    if lab.database.pid:
        pids["database"] = lab.database.pid
    if pinning and pinning.enabled:
        for pid in pids.values():
            pin_tree(pid, pinning.services)
    settled_s = settle(lab, impl)
    job = LocustRun(plan, workers=s.workers, cpus=set(pinning.generator) if pinning and pinning.enabled else None,
                    netns=s.netns)
    offset = time.time() - time.monotonic()
    job.start()
    pids.update(job.pids)
    try:
        with Sampler(pids, interval=0.5) as sampler:
            job.wait(timeout=(duration or 600) + 90)
        result = job.result()
    finally:
        job.stop()
        failures = job.failures()
        job.cleanup()
    row = _row(impl, s, plan, result, sampler, offset, pinning, failures, job)
    row["settled_before_s"] = settled_s
    return row


def settle(lab: Lab, impl: Implementation, prompt_s: float = 0.25, timeout: float = 90.0) -> float:
    """Wait until the service has worked off what an earlier run left queued
    (requests of clients that have gone): until a health call is answered
    within `prompt_s`, at most `timeout` s. Returns the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        t = time.monotonic()
        try:
            check_health(impl.protocol, lab.endpoints[impl.name], **client_options(impl))
        except Exception:  # still busy (timed out): ask again
            pass
        else:
            if time.monotonic() - t < prompt_s:
                break
        time.sleep(0.2)
    return round(time.monotonic() - began, 2)


def merge(result: dict[str, Any]) -> dict[str, Any]:
    """The workers' figures as one: histograms added, counts summed,
    throughput summed over each worker's own window."""
    workers = result["workers"]
    errors: dict[str, int] = {}
    errors_total: dict[str, int] = {}
    for w in workers:
        for k, v in w["errors"].items():
            errors[k] = errors.get(k, 0) + v
        for k, v in w["errors_total"].items():
            errors_total[k] = errors_total.get(k, 0) + v
    windows = [(w["window_ns"][1] - w["window_ns"][0]) / 1e9 for w in workers if w.get("window_ns")]
    throughput = sum(w["ops"] / ((w["window_ns"][1] - w["window_ns"][0]) / 1e9)
                     for w in workers if w.get("window_ns"))
    spans = [w["call_span_ns"] for w in workers if w.get("call_span_ns")]
    return {
        "latency": histograms.merged([w["latency"] for w in workers]),
        "service": histograms.merged([w["service"] for w in workers]),
        "connect": histograms.merged([w["connect"] for w in workers]),
        "wake_lag": histograms.merged([w["wake_lag"] for w in workers]),
        "ops": sum(w["ops"] for w in workers), "ops_total": sum(w["ops_total"] for w in workers),
        "errors": errors, "errors_total": errors_total,
        "window_s": round(sum(windows) / len(windows), 3) if windows else 0.0,
        "windows_missing": sum(1 for w in workers if not w.get("window_ns")),
        "throughput_rps": round(throughput, 1) if windows else None,
        "call_span_s": ((max(s[1] for s in spans) - min(s[0] for s in spans)) / 1e9) if spans else None,
        "users_connected": sum(w["users_connected"] for w in workers),
        "bytes_sent": sum(w.get("bytes_sent", 0) for w in workers),
        "bytes_received": sum(w.get("bytes_received", 0) for w in workers),
    }


def _row(impl: Implementation, s: Settings, plan: Plan, result: dict[str, Any], sampler: Sampler,
         offset: float, pinning: Pinning | None, failures: str, job: LocustRun) -> dict[str, Any]:
    m = merge(result)
    windows = [w["window_ns"] for w in result["workers"] if w.get("window_ns")]
    window = ((min(w[0] for w in windows) / 1e9, max(w[1] for w in windows) / 1e9) if windows
              else (0.0, 0.0))
    exited = {name: p for name, p in zip(job.pids, job.processes, strict=True)}
    resources: dict[str, Any] = {}
    for name, stats in sampler.summary().items():
        process = exited.get(name)
        if process is not None and process.cpu_s is not None:
            # An exited Locust process: the kernel's account, not the sampler's
            stats = {**stats, "cpu_s": process.cpu_s, "rss_max": process.rss_peak_bytes,
                     "cpu_percent_mean": 100 * process.cpu_s / sampler.elapsed if sampler.elapsed else 0.0}
        in_window = [p for t, p, rss in sampler.samples[name]
                     if rss and window[0] <= t + offset <= window[1] + 0.25]
        cpu_percent = (sum(in_window) / len(in_window)) if in_window else stats["cpu_percent_mean"]
        per_request = (1e6 * stats["cpu_s"] / m["ops_total"]) if m["ops_total"] else None
        if process is not None:  # a Locust process: its CPU inside the window, per answer there
            per_request = 1e6 * (cpu_percent / 100) * m["window_s"] / m["ops"] if m["ops"] else None
        resources[name] = {
            "cpu_s": round(stats["cpu_s"], 4), "cpu_percent": round(cpu_percent, 1),
            "cpu_percent_whole_run": round(stats["cpu_percent_mean"], 1),
            "cpu_us_per_request": round(per_request, 1) if per_request is not None else None,
            "rss_peak_bytes": stats["rss_max"], "rss_mean_bytes": round(stats["rss_mean"]),
            "samples": stats["samples"]}
    generators = [n for n in resources if n.startswith("generator")]
    generator_cores = len(pinning.generator) if pinning and pinning.enabled else len(os.sched_getaffinity(0))
    generator_cpu = sum(resources[g]["cpu_percent"] for g in generators)  # all Locust processes together
    lag = m["wake_lag"]
    wake = ({"count": lag.get_total_count(), "p50": lag.get_value_at_percentile(50),
             "p99": lag.get_value_at_percentile(99), "max": lag.get_max_value()}
            if lag.get_total_count() else None)
    reasons = judge(plan.model, plan.users, m["ops"], generator_cpu, generator_cores, failures,
                    wake_lag_p99_us=wake["p99"] if wake else None,
                    windows_missing=m["windows_missing"], calls=plan.calls)
    if protocol(impl.protocol).messaging and not plan.calls and m["users_connected"] < plan.users:
        reasons.append(f"{m['users_connected']} of {plan.users} users held a connection in the window")
    latency = histograms.latency_summary(m["latency"])
    return {
        "implementation": impl.name, "protocol": impl.protocol, "operation": s.operation,
        "model": plan.model, "clients": plan.users, "rate": plan.rate or None,
        "connections": "one per Locust process, a stream per user" if plan.share_connection else "one per user",
        "calls_per_client": plan.calls or None, "window_s": m["window_s"],
        "latency_us": latency, "latency_clock": "time.perf_counter_ns() in each Locust user (1 ns)",
        "latency_from": "the scheduled start" if plan.model == "open" else "the call's start",
        "service_time_us": histograms.latency_summary(m["service"]) if plan.model == "open" else None,
        "throughput_rps": m["throughput_rps"], "ops_window": m["ops"], "ops_total": m["ops_total"],
        "errors": m["errors"], "errors_total": m["errors_total"],
        "connect_us": histograms.latency_summary(m["connect"]) if m["connect"].get_total_count() else None,
        "wake_lag_us": wake, "call_span_s": m["call_span_s"], "users_connected": m["users_connected"],
        "bytes_per_op": ({"sent": round(m["bytes_sent"] / m["ops_total"], 1),
                          "received": round(m["bytes_received"] / m["ops_total"], 1)} if m["ops_total"] else None),
        "resources": resources, "generator_cpu_percent": round(generator_cpu, 1),
        "generator_cpu_us_per_request": (round(1e4 * generator_cpu * m["window_s"] / m["ops"], 1)
                                         if m["ops"] else None),
        "generator_cores": generator_cores,
        "generator": {"engine": "locust", "workers": s.workers, "processes": len(job.processes),
                      "netns": [n for n, _ in s.netns],
                      "per_worker": [{"worker_index": w["worker_index"], "users": w["users"], "ops": w["ops"],
                                      "ops_total": w["ops_total"], "window_ns": w["window_ns"],
                                      "stopped_ns": w.get("stopped_ns")}
                                     for w in result["workers"]],
                      "locust_requests_reported": result.get("locust_requests")},
        "valid": not reasons, "invalid_reasons": reasons,
        "histogram": histograms.encode(m["latency"]),
    }


def judge(model: str, clients: int, ops_window: int, generator_cpu: float, generator_cores: int,
          failures: str = "", *, wake_lag_p99_us: float | None = None, windows_missing: int = 0,
          calls: int = 0) -> list[str]:
    """The invalid-run rule: why a run's figures are not the service's ([] = valid)."""
    reasons = []
    if generator_cpu > 100 * GENERATOR_CPU_LIMIT * generator_cores:
        reasons.append(f"the generator used {generator_cpu:.0f} % CPU, over {GENERATOR_CPU_LIMIT:.0%} of its "
                       f"{generator_cores} core(s)")
    if model == "open" and wake_lag_p99_us is not None and wake_lag_p99_us > 1000 * WAKE_LAG_LIMIT_MS:
        reasons.append(f"the generator woke {wake_lag_p99_us / 1000:.1f} ms late (p99) for its scheduled sends, "
                       f"over {WAKE_LAG_LIMIT_MS:g} ms: it could not hold the rate")
    if ops_window == 0:
        reasons.append("no request answered in the steady window")
    elif model == "closed" and not calls and ops_window < clients:
        reasons.append(f"{ops_window} requests answered in the window for {clients} clients: "
                       f"not a steady state (the window is capped at {MAX_RUN_S:.0f} s a run)")
    if windows_missing and not calls:
        reasons.append(f"{windows_missing} Locust process(es) never opened their window")
    if failures:
        reasons.append("Locust exited with an error: " + failures[-300:])
    return reasons


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
        row = run(lab, impl, s, model="closed", clients=n, round_s=n / throughput if throughput else 0.0,
                  expected_rps=throughput)
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
        users = open_users(rate, s.p99_limit_ms)
        limit = max_connections(impl)
        if limit is not None:
            users = min(users, limit)
        row = run(lab, impl, s, model="open", clients=users, rate=round(rate))
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
    lat = row["latency_us"]
    p99 = lat["p99"] if lat["p99"] is not None else lat["max"]  # too few answers for a p99: the max must hold
    return (p99 is not None and p99 <= 1000 * s.p99_limit_ms
            and (row["throughput_rps"] or 0) >= HELD_FRACTION * (row["rate"] or 0))


def line(row: dict[str, Any]) -> str:
    what = f"{row['implementation']:<34}{row['model']:<7}"
    what += f"{row['clients']:>5} users" + (f" @{row['rate']:>6g}/s" if row.get("rate") else " " * 9)
    if "skipped" in row:
        return f"{what}  skipped: {row['skipped']}"
    lat = row["latency_us"]

    def fmt(v: float | None) -> str:
        return f"{v / 1000:8.2f}" if v is not None else "       –"
    errors = sum(row["errors"].values())
    resources = row["resources"]
    service = resources.get(row["implementation"], {})
    return (f"{what} p50 {fmt(lat['p50'])} p99 {fmt(lat['p99'])} ms (n {lat['count']:,})"
            f"  {row['throughput_rps'] or 0:8.0f}/s  err {errors:<5} svc {service.get('cpu_percent', 0):5.0f}%"
            f" {(service.get('cpu_us_per_request') or 0):7.0f}µs/req"
            f"  gen {row['generator_cpu_percent']:4.0f}%"
            + ("" if row["valid"] else "  INVALID: " + "; ".join(row["invalid_reasons"])))
