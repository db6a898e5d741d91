"""The push section of the page (python -m studies push): how the lab's push
load client measures, and bytes per pushed event (make capture); the push
studies' tables are in their own sections (studies/<name>/report.py), with
the helpers here.

Reads only results/load/push-latest.json and results/capture/push-latest.json;
what it calls the protocols and their ways comes from their descriptors
(clients/protocols.py: `label`, `push`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clients.protocols import PROTOCOLS, PushWay, push_ways
from report.page import Bullets, Heading, Page, Para, Table
from studies.common import eps, read_json


def _and(words: list[str]) -> str:
    return " and ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + " and " + words[-1]


def section(page: Page, results_dir: Path) -> list[str]:
    pushing = [p.label for p in PROTOCOLS.values() if p.push]
    page.add(Heading(2, f"Push: {_and(pushing)} under load", "push"))
    data = read_json(results_dir / "load" / "push-latest.json", "push", page)
    if data:
        load_runs(page, data)
    else:
        page.add(Para("Not measured: run `python -m studies push` (the push studies' scenarios, ~9 min) "
                      "to fill this section."))
    wire(page, read_json(results_dir / "capture" / "push-latest.json", "push-capture", page))
    return []


def load_runs(page: Page, data: dict[str, Any]) -> None:
    ctx = data["context"].get("push", {})
    pins = ctx.get("pinning", {})
    load0, load1 = ctx.get("load_average_start", [0]), ctx.get("load_average_end", [0])
    page.add(Para(
        f"The lab's push client ({ctx.get('client', 'load/push-client')}) subscribes N clients to the synthetic "
        f"feed (a 12-field event, the server's send time in ns in its first field) and counts the "
        f"events of every message; latency is its receive time − that send time (same host clock). Each run: "
        f"a warm-up while the subscriptions open, then the window in which events, latency and CPU are counted "
        f"(errors over the whole run; a client that got no message by the run's end is one). CPU: "
        f"{ctx.get('cpu', '')}. Pinning: " + (f"services on CPU {pins.get('services_and_database_cpus')}, "
                                             f"client on CPU {pins.get('generator_cpus')}" if pins.get("enabled")
                                             else "off") +
        f". The run took {ctx.get('seconds', 0):.0f} s; the machine's 1-minute load average was "
        f"{load0[0]:.1f} at its start and {load1[0]:.1f} at its end" +
        (" (quick run: short windows)" if ctx.get("quick") else "") + "."))
    latency(page, data["rows"])


def latency(page: Page, rows: list[dict[str, Any]]) -> None:
    """Per scenario: events/s and per-event latency p50 / p99 of every implementation and way,
    point by point (subscriptions × batch), the ways side by side."""
    ways = list(push_ways())
    page.add(Heading(3, "Events/s and per-event latency", "push-latency"))
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    for scenario in scenarios:
        these = [r for r in rows if r["scenario"] == scenario]
        points = sorted({(r["clients"], r["batch"]) for r in these})
        cells: dict[tuple[str, str, str], dict[tuple[int, int], dict[str, Any]]] = {}
        for r in sorted(these, key=lambda r: (_language(r["implementation"]),
                                              ways.index(r["transport"]) if r["transport"] in ways else len(ways),
                                              r["implementation"])):
            key = (_language(r["implementation"]), r["transport"], r["implementation"])
            cells.setdefault(key, {})[(r["clients"], r["batch"])] = r
        table = [[language, push_ways()[transport].short if transport in ways else transport, name,
                  *[_latency_cell(per.get(point)) for point in points]]
                 for (language, transport, name), per in cells.items()]
        page.add(Table(["language", "way", "implementation", *[f"{c} sub × batch {b}" for c, b in points]], table,
                       f"{scenario}: events/s received in the window · latency p50 / p99 in ms (the client's receive "
                       "time − the server's send stamp; every event of a message has its message's stamp, so the "
                       "percentiles over messages are those over events at one batch size); rows by language, "
                       "the ways side by side; ', N err': the run's errors.", f"push-latency-{scenario}"))


def _language(implementation: str) -> str:
    """"rest/go_nethttp" -> "go" (the folder name's first word: services/README.md)."""
    return implementation.split("/")[-1].split("_")[0]


def _latency_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "–"
    lat = r["latency_ms"]
    errors = f", {r['errors']} err" if r["errors"] else ""
    return f"{eps(r['events_per_s'])} · {lat['p50']:.2f} / {lat['p99']:.2f}{errors}"


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
                   f"Bytes to the client per event of the synthetic feed (its 12-field event): TCP payload "
                   f"and whole frames (link header included), a {data['short']}- and a {data['long']}-message "
                   f"subscription differenced so that setup and teardown fall out; loopback, TShark "
                   f"({data['context'].get('date', '')}).", "push-wire-table"))
    notes = [w.framing for w in _captured(data["rows"]) if w.framing]
    page.add(Bullets([f"At batch 1 the framing shows, per message: {'; '.join(notes)}. At batch 50 every "
                      "transport converges on the event's own encoding, JSON or protobuf as the framing says "
                      "(the per-message overhead ÷ 50)."]))


def _captured(rows: list[dict[str, Any]]) -> list[PushWay]:
    """The push ways of the capture's rows (their protocol, their capture label), in the
    registry's order, each once."""
    present = {(r["protocol"], r["transport"]) for r in rows}
    return [w for p in PROTOCOLS.values() for w in p.push if (p.name, w.capture_label) in present]
