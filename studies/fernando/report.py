"""The report's section on Fernando & Engel's WebSocket library comparison
(python -m studies fernando): their Table 2 (1,000 clients) beside
the lab's, then the lab's echo and broadcast figures at every client count,
each the mean of its runs with the runs' spread, and what differs in the setup.

Reads only results/load/fernando-latest.json."""

from __future__ import annotations

import statistics
from typing import Any

from lab.page import Bullets, Heading, Page, Para, Table
from studies.common import read_json
from studies.fernando import STUDY

PUBLISHED = STUDY.published()
TABLE_2 = PUBLISHED["tables"]["2"]
STUDY_SETUP = PUBLISHED["setup"]


def study_library(fields: dict[str, Any]) -> str | None:
    """The study's library an implementation is, by its manifest fields
    (language and library, as the results' context records them)."""
    for library, match in PUBLISHED["libraries"].items():
        if all(fields.get(k) == v for k, v in match.items()):
            return library
    return None


def table_2(library: str, metric: str) -> tuple[float, float, float]:
    cell = TABLE_2["rows"][library][metric]
    return cell["mean"], cell["median"], cell["σ"]


METRICS = (("connect_ms", "connection time, ms"), ("rtt_ms", "RTT, ms"), ("messages_per_s", "throughput, msg/s"),
           ("broadcast_ms", "broadcast latency, ms"))


def run_stats(test: str, row: dict[str, Any]) -> dict[str, tuple[float | None, float | None, float | None]]:
    """One run's (mean, median, σ) per metric; throughput is one figure a run."""
    def triple(d: dict[str, Any] | None, median: str) -> tuple[float | None, float | None, float | None]:
        d = d or {}
        return d.get("mean"), d.get(median), d.get("stddev")
    if test == "echo":
        return {"connect_ms": triple(row.get("connect_ms"), "p50"), "rtt_ms": triple(row.get("rtt_ms"), "p50"),
                "messages_per_s": (row.get("messages_per_s"), None, None)}
    return {"broadcast_ms": triple(row.get("latency_ms"), "median")}


def combine(results: dict[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """implementation -> clients -> metric -> {mean, median, stddev, low, high, runs, invalid}:
    the mean over runs of each run's mean, median and σ (throughput: σ across runs),
    and the lowest and highest run mean."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for test in ("echo", "broadcast"):
        for name, rows in results.get(test, {}).items():
            for clients in sorted({r["clients"] for r in rows}):
                runs = [r for r in rows if r["clients"] == clients]
                cell = out.setdefault(name, {}).setdefault(clients, {})
                per = [run_stats(test, r) for r in runs]
                for metric in per[0] if per else ():
                    means = [p[metric][0] for p in per if p[metric][0] is not None]
                    if not means:
                        continue
                    medians = [p[metric][1] for p in per if p[metric][1] is not None]
                    sigmas = [p[metric][2] for p in per if p[metric][2] is not None]
                    cell[metric] = {
                        "mean": statistics.fmean(means),
                        "median": statistics.fmean(medians) if medians else None,
                        "stddev": statistics.fmean(sigmas) if sigmas else
                        (statistics.stdev(means) if len(means) > 1 else None),
                        "low": min(means), "high": max(means), "runs": len(means),
                        "invalid": sum(1 for r in runs if not r.get("valid"))}
    return out


def num(x: float | None, metric: str = "") -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if metric == "messages_per_s" or abs(x) >= 1000 else f"{x:,.1f}"


def spread(cell: dict[str, Any] | None, metric: str) -> str:
    if not cell:
        return "–"
    text = f"{num(cell['mean'], metric)} ({num(cell['low'], metric)}–{num(cell['high'], metric)}, n {cell['runs']})"
    return text + (f" [{cell['invalid']} of {cell['runs']} invalid]" if cell.get("invalid") else "")


def section(page: Page, inputs: Any) -> list[str]:
    results_dir = inputs.results_dir
    page.add(Heading(2, "Fernando & Engel: WebSocket libraries, echo and broadcast", "fernando"))
    data = read_json(results_dir / "load" / "fernando-latest.json", "fernando", page)
    if not data:
        page.add(Para("Not measured: `python -m studies fernando` (about 15 minutes here; "
                      "`--clients 100 200 400 600 800 1000` for all of the study's load levels)."))
        return []
    ctx = data["context"].get("load", {})
    ctx_impls = data["context"].get("implementations", {})
    combined = combine(data["results"])
    top = max((c for cells in combined.values() for c in cells), default=None)
    rows = []
    for name, cells in combined.items():
        library = study_library(ctx_impls.get(name, {}))
        for metric, label in METRICS:
            lab = cells.get(top, {}).get(metric) if top else None
            study = table_2(library, metric) if library else None
            rows.append([name if metric == "connect_ms" else "", label,
                         *(num(v, metric) for v in (study or (None, None, None))),
                         *(num(lab[k], metric) if lab else "–" for k in ("mean", "median", "stddev")),
                         f"{num(lab['low'], metric)}–{num(lab['high'], metric)}" if lab else "–"])
    page.add(Table(["implementation", "metric", "study mean", "study median", "study σ",
                    "lab mean", "lab median", "lab σ", "lab run means (low–high)"], rows,
                   f"Table 2 of the study (1,000 clients) beside the lab at {top:,} clients: the lab's mean, "
                   "median and σ are each the mean over its runs (how many: the next table) of that run's statistic "
                   "(throughput: one figure a run, σ across runs). The Python implementation has no column in "
                   "the study.", "fernando-table2"))
    levels = sorted({c for cells in combined.values() for c in cells})
    head = ["implementation", "metric", *[f"{n:,} clients" for n in levels]]
    body = []
    for name, cells in combined.items():
        for metric, label in METRICS:
            body.append([name if metric == "connect_ms" else "", label,
                         *(spread(cells.get(n, {}).get(metric), metric) for n in levels)])
    page.add(Table(head, body, "Each cell: the mean of the runs' means (lowest–highest run mean) over n runs; "
                               "runs the load instrument judged invalid are counted in brackets and included.",
                   "fernando-levels"))
    runs_table(page, data["results"])
    echo = ctx.get("echo", {})
    cast = ctx.get("broadcast", {})
    cpu = data["context"].get("cpu", {})
    loads = [ctx[k] for k in ("loadavg_start", "loadavg_end") if ctx.get(k)]
    load_text = " → ".join(f"{x[0]:.1f}" for x in loads) + (" (1 min), the machine shared with other work"
                                                             if loads else "not recorded")
    go = ctx.get("client") == "go"
    driver = (f"the lab's Go load client ({ctx.get('client_how', '')})" if go else
              f"Locust {ctx.get('engine_version', '')} driving each protocol's own client (the lab's "
              "WebSocket and socket.io clients under gevent)")
    page.add(Bullets([
        f"The study: {STUDY_SETUP}.",
        f"The lab: {driver} on this machine "
        f"({cpu.get('model', '?')}, {cpu.get('count', '?')} CPUs; load average {load_text}), "
        f"client and servers on loopback, pinning {('on' if ctx.get('pinning', {}).get('enabled') else 'off')}; "
        f"{ctx.get('runs', '?')} runs at {', '.join(map(str, ctx.get('clients', [])))} clients, interleaved "
        f"(run r of every implementation before run r + 1). The whole scenario took "
        f"{ctx.get('seconds', 0):.0f} s"
        + (f"; its {ctx.get('budget_s', 0):.0f} s budget left {len(ctx['not_run'])} runs out "
           f"({'; '.join(ctx['not_run'][:3])}{', …' if len(ctx['not_run']) > 3 else ''})." if ctx.get("not_run")
           else "."),
        f"Echo: a closed model (each client sends, waits for its echo, sends again) with a "
        f"{echo.get('payload_bytes', '?')}-byte JSON payload (the study gives no message size); "
        f"a {echo.get('window_s', '?')} s window that opens {echo.get('warmup_s', '?')} s after the first echo and "
        "not before the last client has connected (the study: 60 s per level). Connection time: from opening the "
        "WebSocket to ready (socket.io: the namespace's connect packet), every client connecting at once.",
        f"Broadcast: one sender and N receivers; {cast.get('broadcasts_per_run', '?')} broadcasts per run "
        f"{cast.get('interval_ms', '?')} ms apart (the study: every 3 s over 60 s), sent once the server "
        "reports every receiver connected; latency = receive − send time on the machine's clock "
        "(time.time_ns() at both ends). Only "
        "broadcasts the server delivered to every receiver count.",
        *cpu_note(data["results"]),
        *(["Every round trip is timed in its goroutine on Go's monotonic clock; statistics over every sample.",
            "socket.io is spoken by the Go client's own Engine.IO 4 / socket.io 5 framing on the WebSocket "
            "transport only, as the study's clients after their upgrade."] if go else
          ["Every round trip is timed in its Locust user with a nanosecond clock into an HDR histogram (3 "
           "significant digits).",
           "socket.io is driven through the lab's socket.io client (python-socketio) on its WebSocket "
           "transport only, as the study's clients after their upgrade."]),
    ]))
    return []


def runs_table(page: Page, results: dict[str, Any]) -> None:
    """Every run on the Go client: the clients' own CPU beside the limit that makes a run invalid,
    the service's and the whole machine's, and the run's verdict."""
    rows = []
    spans = sorted({r.get("client_cpu_over", "the send to the next send")   # the Go client's, by its version
                    for runs in results.get("broadcast", {}).values() for r in runs})
    for test in ("echo", "broadcast"):
        for name, runs in results.get(test, {}).items():
            for r in runs:
                if r.get("client_cpu_limit_percent") is None:
                    continue
                rows.append([test, name, f"{r['clients']:,}", str(r.get("run", "")),
                             f"{r['client_cpu_percent']:.0f} %", f"{r['client_cpu_limit_percent']:.0f} %",
                             f"{r['service_cpu_percent']:.0f} %", f"{r.get('machine_cpu_percent', 0):.0f} %",
                             "valid" if r.get("valid") else "invalid: " + "; ".join(r.get("invalid_reasons") or [])])
    if rows:
        page.add(Table(["test", "implementation", "clients", "run", "client CPU", "its limit", "service CPU",
                        "machine CPU", "run"], rows,
                       "Each run's echo clients or broadcast receivers (the lab's Go client, one process) beside "
                       "the limit at which the lab marks the run invalid (the client, not the library, set the "
                       "pace). Echo: CPU over the window; broadcast: the busiest broadcast's, the client's CPU from "
                       f"{' or '.join(spans) or 'the send to the last receipt'} over the span from the send to its "
                       "last receipt. Service: its process "
                       "tree, 100 % = one core; machine: every CPU's busy share (100 % = all of them).",
                       "fernando-runs"))


def cpu_note(results: dict[str, Any]) -> list[str]:
    """How busy the generator and the services were in the echo runs: where neither
    was near a core, the runs waited for a CPU, and the figures are the machine's."""
    rows = [r for rows in results.get("echo", {}).values() for r in rows]
    gen = [r["generator_cpu_percent"] for r in rows if r.get("generator_cpu_percent") is not None]
    svc = [r["service_cpu_percent"] for r in rows if r.get("service_cpu_percent") is not None]
    if not gen or not svc:
        return []
    note = (f"In the echo runs Locust used {min(gen):.0f}–{max(gen):.0f} % of its core and the service "
            f"{min(svc):.0f}–{max(svc):.0f} % of one core")
    if max(gen) >= 60:
        note += (f": Locust reached {max(gen):.0f} % of its one core, so the echo rates and round trips are bounded "
                 "by the generator (the lab's rule marks such runs invalid; the study's client had a 14-core "
                 "machine)")
    elif max(gen) < 50 and max(svc) < 50:
        note += (": neither was busy, so the clients and servers spent most of each run waiting for a CPU "
                 "(other work on the machine): the round trips and rates measure that, not the libraries")
    return [note + "."]
