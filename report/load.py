"""The load section of the page (make load, python -m load.crosscheck): per
implementation, closed-model percentiles and throughput vs clients, the
open-model knee, CPU µs per request and peak RSS of the service and the
database, the generator's CPU; a Go or Node.js client at concurrency 1 beside
the Python client; h2load's runs (python -m load.h2load: N streams on one
connection vs N HTTP/1.1 connections) beside Locust's of the same subjects and
clients. The studies' load scenarios have their sections in studies/.

Reads only results/load/*-latest.json (and, for the cross-check, the latency
suite's results/benchmarks/native-latest.json and capture's wire.json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from load import summary
from report.figures import _svg
from report.page import Figure, Heading, Page, Para, Table
from studies.common import read_json


def section(page: Page, results_dir: Path) -> list[str]:
    load_dir = results_dir / "load"
    page.add(Heading(2, "Under load", "load"))
    sweep = read_json(load_dir / "sweep-latest.json", "load", page)
    if not sweep:
        page.add(Para("Not measured: run `make load` (the default sweep) to fill this section."))
    else:
        sweep_section(page, sweep)
    # Each its own command: shown whether or not a sweep ran (the cross-check
    # was left out of the report when `make load` had not run).
    crosscheck_section(page, load_dir, results_dir)
    h2load_section(page, load_dir)
    return []


def sweep_section(page: Page, sweep: dict[str, Any]) -> None:
    ctx = sweep["context"]["load"] if "load" in sweep["context"] else {}
    pins = ctx.get("pinning", {})
    page.add(Para(
        f"Locust {ctx.get('engine_version', '')} ({ctx.get('operation')}; "
        f"{ctx.get('workers') or 'no'} worker processes), closed model at "
        f"{', '.join(map(str, ctx.get('closed_clients', [])))} users and an open model (constant arrival "
        f"rate) stepped to each implementation's knee: the highest rate held with p99 ≤ {ctx.get('p99_limit_ms')} ms, "
        f"no error, ≥ {100 * ctx.get('held_fraction', 0.95):.0f} % of the rate answered. Warm-up "
        f"{ctx.get('warmup_s')} s, window ≥ {ctx.get('steady_s')} s (stretched to two rounds of every client, "
        f"at most {ctx.get('max_run_s', 12):g} s a run). Pinning: "
        + (f"services and database on CPU {pins.get('services_and_database_cpus')}, "
           f"Locust on CPU {pins.get('generator_cpus')}" if pins.get("enabled") else "off") +
        f". The sweep took {ctx.get('sweep_seconds', 0):.0f} s. Latency is the lab's own, timed in each Locust "
        f"user with a ns clock into HDR histograms (the open model's from each request's scheduled start); a "
        f"p99 is shown only with 1,000 answers behind it, a p99.9 with 10,000. A run is invalid (shown as such, "
        f"never as the service's figure) when the generator woke more than {ctx.get('wake_lag_limit_ms', 5):g} ms "
        f"late (p99) for its scheduled sends, its own CPU passed "
        f"{100 * ctx.get('generator_cpu_limit', 0.6):.0f} % of its cores, or fewer requests were answered in the "
        f"window than there were clients."))
    results = sweep["results"]
    summaries = [summary.cells(name, entry) for name, entry in results.items()]
    head = [*summary.HEAD, "generator CPU % per run"]
    rows = [[*summary.row(c), c["generator_cpu"]] for c in summaries]
    page.add(Table(head, rows, "Closed model at 10, 100 and 1,000 clients (invalid runs in parentheses), the "
                               "open-model knee, CPU per request at 100 clients (else the first valid run), peak RSS "
                               "over the sweep, and the generator's CPU in each run (% of one core; cN: closed, N "
                               "clients; oR: open, R requests/s; *: invalid).", "load-table"))
    page.add(Figure("load-latency", latency_figure(results), "p50 (solid) and p99 (dashed) vs closed-model "
                    "clients, log–log; hollow markers: invalid runs."),
             Figure("load-throughput", metric_figure(results, "throughput"), "Answered requests/s vs clients."),
             Figure("load-resources", metric_figure(results, "resources"),
                    "Service CPU (% of one core, solid) and peak RSS (MB, dashed) vs clients."))
    seconds = {n: e.get("seconds") for n, e in results.items()}
    page.add(Para("Time per implementation in the sweep: " +
                  ", ".join(f"{n} {s:.0f} s" for n, s in seconds.items() if s) + "."))


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"



def latency_figure(results: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for i, (name, entry) in enumerate(results.items()):
        colour = f"C{i % 10}"
        rows = [r for r in entry.get("closed", []) if "latency_us" in r and r["latency_us"]["p50"]]
        for key, style in (("p50", "-"), ("p99", "--")):
            shown = [r for r in rows if r["latency_us"][key] is not None]  # a p99 needs 1,000 answers
            xs = [r["clients"] for r in shown]
            ys = [r["latency_us"][key] / 1000 for r in shown]
            ax.plot(xs, ys, style, color=colour, label=name if key == "p50" else None)
            for r, y in zip(shown, ys, strict=True):
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


def crosscheck_section(page: Page, load_dir: Path, results_dir: Path) -> None:
    page.add(Heading(3, "A Go or Node.js client beside the Python client, at concurrency 1", "crosscheck"))
    c = read_json(load_dir / "crosscheck-latest.json", "crosscheck", page)
    if not c:
        page.add(Para("Not measured: `python -m load.crosscheck`."))
        return
    bench = read_json(results_dir / "benchmarks" / "native-latest.json", "latency")
    python = (bench or {}).get("results", {})
    rows = []
    for op, per in c["results"].items():
        for name, cell in per.items():
            outside = cell["latency_us"]["p50"]
            same_cell = (cell.get("python_client_latency_us") or {}).get("p50")
            # the Python client timed in the same cell (around the outside client's run) where the
            # file has it; else the latency suite's median, from another hour of the machine
            py = same_cell or python.get(op, {}).get(name, {}).get("median")
            ratio = (f"{py / outside:.2f}" + ("" if same_cell else " (suite)")) if py and outside else "–"
            failed = sum(cell.get("errors", {}).values())
            answered = f"{cell['answered']:,}" + (f" ({failed} failed)" if failed else "")
            rows.append([op, name, cell["client"], _f(outside), _f(py), ratio, answered])
    ctx = c.get("context", {}).get("crosscheck", {})
    loads = [x for per in c["results"].values() for cell in per.values() for x in cell.get("load_average_1m", [])]
    machine = (f" The machine's 1-minute load average over the runs: {min(loads):.1f}–{max(loads):.1f} "
               "(two cores: its other work slows the figures, and not evenly)." if loads else "")
    page.add(Table(["operation", "implementation", "outside client", "its median µs", "Python client median µs",
                    "Python ÷ outside", "calls timed"], rows,
                   "The latency suite's operations, database state and game, one call at a time, from the "
                   "protocol's cross-check client (clients/<protocol>/crosscheck/: Go or Node.js, on the "
                   "protocol's most-used library) sending the lab's Python client's own request, timed by "
                   f"the client itself ({ctx.get('warmup', '?')} untimed calls first; a service whose manifest "
                   "asks for warm-up calls gets them first through the Python client, as in the latency suite). "
                   "The outside clients send the request already encoded (the Python client encodes it on "
                   "every call, and so do the outside libraries that frame their own messages). "
                   "Where the Python client's "
                   "median is well above the outside client's, that much of the protocol's figure in the "
                   "latency tables is the Python client library. The Python client is timed in the same cell, "
                   "half its calls before the outside client's run and half after, so both meet the machine "
                   "alike; \"(suite)\": a file without that, the latency suite's median instead (another hour "
                   "of the machine: not comparable on a shared one)." + machine
                   + ("" if bench or any(cell.get("python_client_latency_us") for per in c["results"].values()
                                         for cell in per.values())
                      else " The Python client's medians: not measured (`make bench`)."),
                   "crosscheck-table"))


# --- h2load beside Locust --------------------------------------------------------------------

H2LOAD_FILE = "h2load-latest.json"


def locust_runs(load_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """(file name, its results) of every Locust load result in results/load, the newest first."""
    found = []
    for path in sorted(load_dir.glob("*-latest.json")):
        if path.name == H2LOAD_FILE:
            continue
        data = read_json(path, "load")   # None: another kind's file (crosscheck, push, ...)
        if data and data["context"].get("load", {}).get("engine", "locust") == "locust":
            found.append((str(data["context"].get("date", "")), path.name, data["results"]))
    return [(name, results) for _, name, results in sorted(found, reverse=True)]


def _h2load_row(r: dict[str, Any], engine: str, source: str) -> list[str]:
    lat, res = r["latency_us"], r.get("resources", {})
    name = r["implementation"]
    generator = r.get("generator", {})
    errors = sum(r.get("errors", {}).values())
    rps = f"{r['throughput_rps']:,.0f}" if r.get("throughput_rps") is not None else "–"
    return [name, engine, r.get("connections", "–"), generator.get("application_protocol") or "–",
            rps if r.get("valid") else f"({rps})", summary.ms(lat.get("p50")), summary.ms(lat.get("p99")),
            _f(res.get(name, {}).get("cpu_us_per_request")), _f(res.get("database", {}).get("cpu_us_per_request")),
            f"{r.get('generator_cpu_percent', 0):.0f}", _f(r.get("generator_cpu_us_per_request")),
            f"{errors:,}", "yes" if r.get("valid") else "no: " + "; ".join(r.get("invalid_reasons", []))[:140],
            source]


def h2load_section(page: Page, load_dir: Path) -> None:
    page.add(Heading(3, "Streams on one connection vs HTTP/1.1 connections, on h2load", "h2load"))
    run = read_json(load_dir / H2LOAD_FILE, "load", page)
    if not run:
        page.add(Para("Not measured: `python -m load.h2load`."))
        return
    ctx = run["context"].get("load", {})
    pins = ctx.get("pinning", {})
    others = locust_runs(load_dir)
    rows = []
    for subject, entry in run["results"].items():
        for r in entry.get("closed", []):
            if "latency_us" not in r:
                continue
            rows.append(_h2load_row(r, f"h2load ({r['clients']})", H2LOAD_FILE))
            beside = next(((name, x) for name, results in others for x in results.get(subject, {}).get("closed", [])
                           if x.get("clients") == r["clients"] and "latency_us" in x), None)
            if beside:
                rows.append(_h2load_row(beside[1], f"Locust ({r['clients']})", beside[0]))
    loads = [x for e in run["results"].values() for r in e.get("closed", []) for x in r.get("load_average_1m", [])]
    page.add(Table(
        ["subject", "generator (clients)", "connections", "negotiated", "req/s", "p50 ms", "p99 ms",
         "svc CPU µs/req", "db CPU µs/req", "gen CPU %", "gen CPU µs/req", "not 2xx", "valid", "file"], rows,
        f"{ctx.get('engine_version', 'h2load')}, "
        + (f"one thread pinned to CPU {pins.get('generator_cpus')} (services and database on "
           f"{pins.get('services_and_database_cpus')})" if pins.get("enabled") else "unpinned")
        + f"; {ctx.get('operation')}, the lab client's own request; warm-up {ctx.get('warmup_s')} s, window "
        f"{ctx.get('steady_s')} s; {ctx.get('layout', '')}. The HTTP/2 and HTTP/1.1 rows are what h2load "
        "reported as negotiated (ALPN over TLS, prior knowledge in cleartext). CPU per request: each process's "
        "CPU inside h2load's window over the requests done there (Locust rows: as the Locust sweep counts it). "
        f"{ctx.get('certificate', '')}. A run is invalid under the Locust runs' rule (the generator past "
        f"{100 * ctx.get('generator_cpu_limit', 0.6):.0f} % of its core), or when a request failed, was not "
        "answered 2xx, or another protocol was negotiated; (…): invalid, not the service's figure. The Locust "
        "row beside each: the newest Locust result in results/load with the subject at the same clients."
        + (f" The machine's 1-minute load average over the h2load runs: {min(loads):.1f}–{max(loads):.1f} "
           "(two cores, shared)." if loads else ""), "h2load-table"))
