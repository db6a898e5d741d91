"""The load section of the page (make load, python -m load --scenario kcheck
/ feathers): per implementation, closed-model percentiles and throughput vs
clients, the open-model knee, CPU µs per request and peak RSS of the service
and the database, the generator's CPU; k6 at concurrency 1 beside the Python
client; the Feathers comparison beside the study's figures (Pathan's push
scenario is in report/push.py).

Reads only results/load/*-latest.json (and, for the cross-check, the latency
suite's results/benchmarks/native-latest.json and capture's wire.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from report.figures import _svg
from report.page import Bullets, Figure, Heading, Page, Para, Table

SHOWN_CLIENTS = (10, 100, 1000)
# The Feathers comparison's published figures (HTTP vs Websockets: A performance
# comparison, Feathers blog): 100 connections; requests/s at 500–2,000 calls
# per connection; bytes of one call and its reply on an open connection.
FEATHERS = {"peak_rps": {"HTTP": 950, "WebSocket": 3900}, "bytes_per_call": {"HTTP": 282, "WebSocket": 54},
            "one_call": "WebSocket about 50 % slower (connection setup)",
            "fifty_calls": "WebSocket about 50 % faster"}


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def ms(us: float | None) -> str:
    return "–" if us is None else f"{us / 1000:,.1f}" if us < 100_000 else f"{us / 1000:,.0f}"


def section(page: Page, results_dir: Path) -> list[str]:
    load_dir = results_dir / "load"
    page.add(Heading(2, "Under load", "load"))
    sweep = _read(load_dir / "sweep-latest.json")
    if not sweep:
        page.add(Para("Not measured: run `make load` (the default sweep) to fill this section."))
        return []
    ctx = sweep["context"]["load"] if "load" in sweep["context"] else {}
    pins = ctx.get("pinning", {})
    page.add(Para(
        f"k6 {ctx.get('engine_version', '')} ({ctx.get('operation')}), closed model at "
        f"{', '.join(map(str, ctx.get('closed_clients', [])))} virtual users and an open model (constant arrival "
        f"rate) stepped to each implementation's knee: the highest rate held with p99 ≤ {ctx.get('p99_limit_ms')} ms, "
        f"no error, ≥ {100 * ctx.get('held_fraction', 0.95):.0f} % of the rate answered. Warm-up "
        f"{ctx.get('warmup_s')} s, window ≥ {ctx.get('steady_s')} s (stretched to two rounds of every client, "
        f"at most 12 s a run). Pinning: " + (f"services and database on CPU {pins.get('services_and_database_cpus')}, "
                                            f"k6 on CPU {pins.get('generator_cpus')}" if pins.get("enabled")
                                            else "off") +
        f". The sweep took {ctx.get('sweep_seconds', 0):.0f} s. A run is invalid (shown as such, never as the "
        f"service's figure) when k6 dropped iterations, its own CPU passed "
        f"{100 * ctx.get('generator_cpu_limit', 0.6):.0f} % of its cores, or fewer requests were answered in the "
        f"window than there were clients."))
    results = sweep["results"]
    head = ["implementation", "concurrency"]
    for n in SHOWN_CLIENTS:
        head += [f"{n}: p50 ms", f"{n}: p99 ms", f"{n}: req/s"]
    head += ["knee req/s", "service CPU µs/req", "database CPU µs/req", "service peak RSS MB",
             "database peak RSS MB", "generator CPU %"]
    rows = []
    for name, entry in results.items():
        closed = {r["clients"]: r for r in entry.get("closed", [])}
        conc = entry.get("concurrency", "")
        conc = conc.get("model", "") if isinstance(conc, dict) else conc.split(":")[0]
        row = [name, conc]
        for n in SHOWN_CLIENTS:
            r = closed.get(n)
            if r is None or "skipped" in r:
                row += ["–", "–", "skipped" if r else "–"]
            elif not r["valid"]:
                row += [f"({ms(r['latency_us']['p50'])})", f"({ms(r['latency_us']['p99'])})", "invalid"]
            else:
                row += [ms(r["latency_us"]["p50"]), ms(r["latency_us"]["p99"]), f"{r['throughput_rps']:,.0f}"]
        valid = [r for r in entry.get("closed", []) + entry.get("open", []) if r.get("valid")]
        at = closed.get(100) if closed.get(100, {}).get("valid") else (valid[0] if valid else None)
        res = (at or {}).get("resources", {})
        everything = [r for r in entry.get("closed", []) + entry.get("open", []) if "resources" in r]
        gen = [r["generator_cpu_percent"] for r in everything]
        row += [f"{entry['knee_rps']:,}" if entry.get("knee_rps") else "not found",
                _f(res.get(name, {}).get("cpu_us_per_request")), _f(res.get("database", {}).get("cpu_us_per_request")),
                _mb(max((r["resources"].get(name, {}).get("rss_peak_bytes", 0) for r in everything), default=0)),
                _mb(max((r["resources"].get("database", {}).get("rss_peak_bytes", 0) for r in everything), default=0)),
                f"{min(gen):.0f}–{max(gen):.0f}" if gen else "–"]
        rows.append(row)
    page.add(Table(head, rows, "Closed model at 10, 100 and 1,000 clients (invalid runs in parentheses), the "
                               "open-model knee, CPU per request at 100 clients, peak RSS over the sweep, and the "
                               "generator's CPU across its runs (% of one core).", "load-table"))
    page.add(Figure("load-latency", latency_figure(results), "p50 (solid) and p99 (dashed) vs closed-model "
                    "clients, log–log; hollow markers: invalid runs."),
             Figure("load-throughput", metric_figure(results, "throughput"), "Answered requests/s vs clients."),
             Figure("load-resources", metric_figure(results, "resources"),
                    "Service CPU (% of one core, solid) and peak RSS (MB, dashed) vs clients."))
    seconds = {n: e.get("seconds") for n, e in results.items()}
    page.add(Para("Time per implementation in the sweep: " +
                  ", ".join(f"{n} {s:.0f} s" for n, s in seconds.items() if s) + "."))
    kcheck_section(page, load_dir, results_dir)
    feathers_section(page, load_dir, results_dir)
    return []


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


def _mb(b: float) -> str:
    return f"{b / 2 ** 20:,.0f}" if b else "–"


def latency_figure(results: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for i, (name, entry) in enumerate(results.items()):
        colour = f"C{i % 10}"
        rows = [r for r in entry.get("closed", []) if "latency_us" in r and r["latency_us"]["p50"]]
        for key, style in (("p50", "-"), ("p99", "--")):
            xs = [r["clients"] for r in rows]
            ys = [r["latency_us"][key] / 1000 for r in rows]
            ax.plot(xs, ys, style, color=colour, label=name if key == "p50" else None)
            for r, y in zip(rows, ys, strict=True):
                ax.plot(r["clients"], y, "o", color=colour, markerfacecolor=colour if r["valid"] else "white",
                        markersize=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clients (closed model)")
    ax.set_ylabel("latency, ms (log)")
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return _svg(fig, "load-latency")


def metric_figure(results: dict[str, Any], what: str) -> str:
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    ax2 = ax.twinx() if what == "resources" else None
    for i, (name, entry) in enumerate(results.items()):
        colour = f"C{i % 10}"
        rows = [r for r in entry.get("closed", []) if "resources" in r]
        xs = [r["clients"] for r in rows]
        if what == "throughput":
            ax.plot(xs, [r["throughput_rps"] or 0 for r in rows], "-o", color=colour, markersize=3, label=name)
        else:
            ax.plot(xs, [r["resources"].get(name, {}).get("cpu_percent", 0) for r in rows], "-o", color=colour,
                    markersize=3, label=name)
            ax2.plot(xs, [r["resources"].get(name, {}).get("rss_peak_bytes", 0) / 2 ** 20 for r in rows], "--",
                     color=colour)
    ax.set_xscale("log")
    ax.set_xlabel("clients (closed model)")
    ax.set_ylabel("requests/s" if what == "throughput" else "service CPU, % of one core")
    if ax2 is not None:
        ax2.set_ylabel("service peak RSS, MB")
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return _svg(fig, f"load-{what}")


def kcheck_section(page: Page, load_dir: Path, results_dir: Path) -> None:
    page.add(Heading(3, "k6 at concurrency 1 beside the Python client", "kcheck"))
    k = _read(load_dir / "kcheck-latest.json")
    if not k:
        page.add(Para("Not measured: `python -m load --scenario kcheck`."))
        return
    bench = _read(results_dir / "benchmarks" / "native-latest.json") or {"results": {}}
    rows = []
    for op, per in k["results"].items():
        for name, cell in per.items():
            py = bench["results"].get(op, {}).get(name, {}).get("median")
            med = cell["median_us"]
            rows.append([op, name, _f(med), _f(cell.get("mean_us_from_throughput")), _f(py),
                         f"{py / med:.2f}" if py and med else "–", cell["clock"]])
    page.add(Table(["operation", "implementation", "k6 median µs", "k6 mean µs (1/throughput)",
                    "Python client median µs", "Python ÷ k6", "k6 clock"], rows,
                   "The same operations, database state and game as the latency suite, one k6 virtual user. "
                   "Where the Python client's median is well above k6's, that much of the protocol's figure in "
                   "the latency tables is the Python client library. k6 gives WebSocket scripts only a "
                   "millisecond clock: use the mean column there.", "kcheck-table"))


def feathers_section(page: Page, load_dir: Path, results_dir: Path) -> None:
    page.add(Heading(3, "Feathers: HTTP vs one WebSocket per client", "feathers"))
    f = _read(load_dir / "feathers-latest.json")
    if not f:
        page.add(Para("Not measured: `python -m load --scenario feathers`."))
        return
    results = f["results"]
    calls = sorted({r["calls_per_connection"] for rows in results.values() for r in rows})
    head = ["implementation", *[f"{c} calls: req/s" for c in calls], "k6 bytes/call (sent+received)"]
    rows = []
    for name, cells in results.items():
        by = {r["calls_per_connection"]: r for r in cells}
        last = cells[-1].get("k6_bytes_per_call") or {}
        rows.append([name, *[f"{by[c]['requests_per_s']:,.0f}" if c in by else "–" for c in calls],
                     f"{last.get('sent', 0) + last.get('received', 0):,.0f}" if last else "–"])
    rows.append(["the study: HTTP (autocannon)", *["–"] * (len(calls) - 1),
                 f"~{FEATHERS['peak_rps']['HTTP']} at 500–2,000", str(FEATHERS["bytes_per_call"]["HTTP"])])
    rows.append(["the study: WebSocket (websocket-bench)", *["–"] * (len(calls) - 1),
                 f"~{FEATHERS['peak_rps']['WebSocket']} at 500–2,000", str(FEATHERS["bytes_per_call"]["WebSocket"])])
    page.add(Table(head, rows, "100 connections, each making N calls of the tiny `health` call one after another, "
                               "connection setup included; requests/s = all calls ÷ (first start to last reply). "
                               "k6 bytes: what k6 counted as sent and received per call (application bytes, "
                               "headers included, TCP/IP not).", "feathers-table"))
    notes = []
    rest = next((v for k, v in results.items() if k.startswith("rest/")), None)
    ws = next((v for k, v in results.items() if k.startswith("ws/")), None)
    if rest and ws:
        r1 = {r["calls_per_connection"]: r["requests_per_s"] for r in rest}
        w1 = {r["calls_per_connection"]: r["requests_per_s"] for r in ws}
        common = sorted(set(r1) & set(w1))
        for c in common:
            ratio = w1[c] / r1[c] if r1[c] else 0
            notes.append(f"{c} calls per connection: WebSocket ÷ HTTP = {ratio:.2f}.")
        if common and w1[common[-1]] / max(r1[common[-1]], 1) < 2:
            notes.append("Where the study found WebSocket about 4× HTTP's peak (3,900 vs 950 requests/s), the lab's "
                         "ratio is smaller: both of its Python services spend most of a call's CPU in the framework "
                         "and the database call, not in HTTP's headers, and k6 keeps HTTP connections alive as "
                         "autocannon did.")
    page.add(Bullets(notes) if notes else Para(""))
