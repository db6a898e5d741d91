"""The push section of the page (python -m load.push): Timeplus's events/s
vs batch size and vs concurrency with client and server CPU, SSE (HTTP/1.1
and h2c) beside WebSocket push; Pathan's push latency at 10-1,000 clients
(WebSocket, SSE, HTTP polling) with CPU; each study's figures beside the
lab's, with what differs in the setup.

Reads only results/load/push-latest.json (its "studies" member holds the
studies' figures as load/push.py transcribed them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from report.figures import _svg
from report.load import read_json
from report.page import Bullets, Figure, Heading, Page, Para, Table

LABELS = {"sse-h1": "SSE h1", "sse-h2c": "SSE h2c", "ws": "WS", "poll": "polling"}
PATHAN_KEY = {"ws": "ws", "sse-h1": "sse", "poll": "rest"}
PATHAN_NAME = {"ws": "WebSocket", "sse": "SSE", "rest": "REST polling"}


def _eps(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:,.0f} k" if x >= 1e4 else f"{x:,.0f}"


def _series(rows: list[dict[str, Any]], scenario: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["scenario"] == scenario:
            out.setdefault((r["implementation"], r["transport"]), []).append(r)
    return out


def _cell(r: dict[str, Any]) -> str:
    mark = "*" if r.get("client_bound") else ""
    errors = f", {r['errors']} err" if r.get("errors") else ""
    return f"{_eps(r['events_per_s'])}{mark} ({r['client_cpu_percent']:.0f} / {r['server_cpu_percent']:.0f} %{errors})"


def section(page: Page, results_dir: Path) -> list[str]:
    page.add(Heading(2, "Push: SSE and WebSocket under load (Timeplus, Pathan)", "push"))
    data = read_json(results_dir / "load" / "push-latest.json", "push", page)
    if data:
        load_runs(page, data)
    else:
        page.add(Para("Not measured: run `python -m load.push` (Timeplus's and Pathan's scenarios, ~9 min) "
                      "to fill this section."))
    wire(page, read_json(results_dir / "capture" / "push-latest.json", "push-capture", page))
    return []


def load_runs(page: Page, data: dict[str, Any]) -> None:
    ctx = data["context"].get("push", {})
    pins = ctx.get("pinning", {})
    load0, load1 = ctx.get("load_average_start", [0]), ctx.get("load_average_end", [0])
    page.add(Para(
        f"The lab's push client ({ctx.get('client', 'load/push-client')}) subscribes N clients to the synthetic "
        f"feed (Timeplus's 12-field event, the server's send time in ns in its first field) and counts the "
        f"events of every message; latency is its receive time − that send time (same host clock). Each run: "
        f"a warm-up while the subscriptions open, then the window in which events, latency and CPU are counted "
        f"(errors over the whole run; a client that got no message by the run's end is one). CPU: "
        f"{ctx.get('cpu', '')}. Pinning: " + (f"services on CPU {pins.get('services_and_database_cpus')}, "
                                             f"client on CPU {pins.get('generator_cpus')}" if pins.get("enabled")
                                             else "off") +
        f". The run took {ctx.get('seconds', 0):.0f} s; the machine's 1-minute load average was "
        f"{load0[0]:.1f} at its start and {load1[0]:.1f} at its end" +
        (" (quick run: short windows)" if ctx.get("quick") else "") + "."))
    timeplus(page, data)
    pathan(page, data)


def timeplus(page: Page, data: dict[str, Any]) -> None:
    rows, study = data["rows"], data.get("studies", {}).get("timeplus", {})
    page.add(Heading(3, "Timeplus: events/s vs batch size and vs concurrency", "push-timeplus"))
    tests = (("timeplus-batch", "batch", "Test I: batch size at 10 subscriptions"),
             ("timeplus-concurrency", "clients", "Test II: subscriptions at batch 50"))
    for scenario, key, title in tests:
        series = _series(rows, scenario)
        if not series:
            continue
        xs = sorted({r[key] for runs in series.values() for r in runs})
        table = [["offered", "", *[_eps(1000 * (10 if key == "batch" else x) * (x if key == "batch" else 50))
                                   for x in xs]]]
        for (impl, transport), runs in series.items():
            by = {r[key]: r for r in runs}
            table.append([impl, LABELS.get(transport, transport), *[_cell(by[x]) if x in by else "–" for x in xs]])
        page.add(Table(["implementation", "transport", *[f"{key} {x}" for x in xs]], table,
                       f"{title}, one message per ms per subscription (offered: subscriptions × batch × 1,000 "
                       "events/s): events/s (client CPU / server CPU, % of one "
                       "core); * the client used ≥ 90 % of its CPUs (the client was the bottleneck, as Timeplus's "
                       "tab was).", f"push-{scenario}"),
                 Figure(f"push-{scenario}", _figure(series, key, study), f"{title}: events/s (log) per "
                        "implementation and transport; black marks: Timeplus's figures given in its text."))
    lab_sse_b400 = max((r["events_per_s"] for r in rows if r["scenario"] == "timeplus-batch" and r["batch"] == 400
                        and r["transport"].startswith("sse")), default=None)
    lab_sse_c60 = max((r["events_per_s"] for r in rows if r["scenario"] == "timeplus-concurrency"
                       and r["clients"] == 60 and r["transport"].startswith("sse")), default=None)
    lab_ws_max = max((r["events_per_s"] for r in rows if r["scenario"] == "timeplus-concurrency"
                      and r["transport"] == "ws"), default=None)
    lab_ws_c30 = max((r["events_per_s"] for r in rows if r["scenario"] == "timeplus-concurrency"
                      and r["clients"] == 30 and r["transport"] == "ws"), default=None)
    beside = [["SSE, batch 400, 10 subscriptions", _eps(study.get("sse_batch400_c10_eps", 0)), _opt(lab_sse_b400)],
              ["SSE, batch 50, 60 subscriptions (Timeplus's SSE maximum)", _eps(study.get("sse_max_c60_b50_eps", 0)),
               _opt(lab_sse_c60)],
              ["WebSocket, batch 50, its maximum over 1–60 subscriptions", _eps(study.get("ws_max_b50_eps", 0)),
               _opt(lab_ws_max)],
              ["WebSocket, batch 50, 30 subscriptions", _eps(study.get("ws_b50_c30_eps", 0)), _opt(lab_ws_c30)]]
    page.add(Table(["Timeplus's figure (from its text)", "Timeplus events/s", "the lab's best events/s"], beside,
                   "The only figures Timeplus gives as numbers; its charts' other points are not in the text.",
                   "push-timeplus-beside"),
             Bullets([f"Timeplus: {study.get('setup', '')}. The lab: a Go client (no EventSource, no JavaScript "
                      "parsing, no rendering: it finds each message's timestamp and counts its events), cleartext "
                      "h2c instead of HTTP/2 over TLS, loopback, a 2-core machine shared with other work. Timeplus's "
                      "limit was its tab's CPU; the lab's is whichever of server and client runs out of CPU first: "
                      "the CPU columns say which. Events/s below the offered rate mean the server fell behind; where "
                      "that happened and neither is near 100 % of its CPU, neither limited the run alone: the share "
                      "of the machine it got did (the load average above says how busy the machine was).",
                      "Timeplus found SSE and WebSocket close, WebSocket with slightly less client CPU and SSE with "
                      "the higher maximum; compare each language's SSE rows with its WS row (the same feed and "
                      "server code paths, the transport apart)."]))


def _opt(x: float | None) -> str:
    return "–" if x is None else _eps(x)


def _figure(series: dict[tuple[str, str], list[dict[str, Any]]], key: str, study: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(8.5, 4.4))
    styles = {"sse-h1": "-", "sse-h2c": ":", "ws": "--"}
    languages: dict[str, int] = {}
    for (impl, transport), runs in series.items():
        language = impl.split("/")[1].split("_")[0]
        colour = f"C{languages.setdefault(language, len(languages)) % 10}"
        runs = sorted(runs, key=lambda r: r[key])
        ax.plot([r[key] for r in runs], [max(r["events_per_s"], 1) for r in runs], styles.get(transport, "-"),
                marker="o", markersize=3, color=colour, label=f"{impl} {LABELS.get(transport, transport)}")
    if key == "batch" and study.get("sse_batch400_c10_eps"):
        ax.plot([400], [study["sse_batch400_c10_eps"]], "k^", label="Timeplus SSE")
    if key == "clients":
        ax.plot([60], [study.get("sse_max_c60_b50_eps", 1)], "k^", label="Timeplus SSE max")
        ax.plot([30], [study.get("ws_b50_c30_eps", 1)], "ks", label="Timeplus WS (c30)")
        ax.axhline(study.get("ws_max_b50_eps", 1), color="k", lw=0.6, ls="--", label="Timeplus WS max")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (events per message)" if key == "batch" else "subscriptions")
    ax.set_ylabel("events/s (log)")
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=6, loc="lower right", frameon=False, ncol=2)
    return _svg(fig, f"push-{key}")


def pathan(page: Page, data: dict[str, Any]) -> None:
    rows = [r for r in data["rows"] if r["scenario"] == "pathan"]
    page.add(Heading(3, "Pathan: push latency at 10–1,000 clients", "push-pathan"))
    if not rows:
        page.add(Para("Not measured: `python -m load.push --scenario pathan`."))
        return
    study = data.get("studies", {}).get("pathan", {})
    lat, cpu = study.get("latency_ms", {}), study.get("cpu_percent", {})
    table = []
    for r in sorted(rows, key=lambda r: (r["clients"], PATHAN_KEY.get(r["transport"], ""), r["implementation"])):
        key = PATHAN_KEY.get(r["transport"], "")
        theirs = lat.get(key, {}).get(str(r["clients"]))
        their_cpu = cpu.get(key, {}).get(str(r["clients"]))
        ms = r["latency_ms"]
        table.append([f"{r['clients']:,}", PATHAN_NAME.get(key, r["transport"]),
                      f"{theirs[0]:.2f} ± {theirs[1]:.2f}" if theirs else "–",
                      f"{their_cpu:.1f}" if their_cpu is not None else "–",
                      r["implementation"], f"{ms['mean']:.2f} ± {ms['sd']:.2f}", f"{ms['p50']:.2f}",
                      f"{ms['p99']:.2f}", f"{r['messages'] / r['seconds']:,.0f}", f"{r['server_cpu_percent']:.1f}",
                      f"{r['client_cpu_percent']:.1f}",
                      f"{r['errors']}" + (f" {r['errors_by_kind']}" if r.get("errors") else "")])
    page.add(Table(["clients", "protocol", "Pathan ms (mean ± sd)", "Pathan CPU %", "lab implementation",
                    "lab ms (mean ± sd)", "lab p50 ms", "lab p99 ms", "lab messages/s", "lab server CPU %",
                    "lab client CPU %", "errors"], table,
                   "One message per second per client (batch 1) for WebSocket and SSE; polling: each client GETs "
                   "one freshly stamped message after another (Pathan's REST loop). Pathan's columns: its Tables 3 "
                   "and 5.", "push-pathan-table"),
             Bullets([f"Pathan: {study.get('setup', '')}. Its CPU is the testing machine's load (% of all logical "
                      "cores, the clients included), not the server's; the lab gives the server process tree and "
                      "the client apart, each as % of one core.",
                      "Pathan reports the mean ± sd only; the lab adds p50 and p99 from every message, so a mean "
                      "pulled up by a few spikes (Pathan's SSE at 1,000 clients: 9.75 ± 49.06 ms) shows as such.",
                      "The lab's polling client asks the SSE service for a one-message feed (count=1) over a kept-"
                      "alive HTTP/1.1 connection; Pathan's asked a separate Express server. Both stamp the message "
                      "in the request's handler, so both latencies are the answer's way back, not the round trip."]))


def wire(page: Page, data: dict[str, Any] | None) -> None:
    """Bytes per pushed event, from `make capture` (capture/push.py)."""
    page.add(Heading(3, "Bytes per pushed event", "push-wire"))
    if not data:
        page.add(Para("Not measured: run `make capture` (its push part, `python -m capture.push`)."))
        return
    rows: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in data["rows"]:
        rows.setdefault((r["implementation"], r["transport"]), {})[r["batch"]] = r
    batches = sorted({b for per in rows.values() for b in per})
    head = ["implementation", "transport",
            *[f"batch {b}: B/event (payload / frames)" for b in batches], "setup + teardown, to the client (frames)"]
    table = []
    for (name, transport), per in rows.items():
        cells = []
        for b in batches:
            r = per.get(b)
            frames = None if r is None else r["per_message_to_client"]["frame_bytes"] / b
            cells.append("–" if r is None else f"{r['per_event_to_client_payload']:,.1f} / {frames:,.1f}")
        first = per[min(per)]
        table.append([name, transport, *cells, f"{first['setup_teardown_to_client']['frame_bytes']:,.0f}"])
    page.add(Table(head, table,
                   f"Bytes to the client per event of the synthetic feed (Timeplus's 12-field event): TCP payload "
                   f"and whole frames (link header included), a {data['short']}- and a {data['long']}-message "
                   f"subscription differenced so that setup and teardown fall out; loopback, TShark "
                   f"({data['context'].get('date', '')}).", "push-wire-table"))
    page.add(Bullets(["At batch 1 the framing shows: an SSE message is `id:`/`event:`/`data:` lines, a WebSocket "
                      "message a JSON object with its feed and id, socket.io adds its packet prefix; at batch 50 "
                      "every transport converges on the event's own JSON (the per-message overhead ÷ 50).",
                      "HTTP/2 (h2c) carries SSE in DATA frames (9-byte header each); HTTP/1.1 in chunks "
                      "(hex length and CRLFs)."]))
