"""Beside the sweep's latency cells, the other instruments along its axes: bytes per call with
and without compression at 1, 100 and 1,000 games (the payload capture: results/capture/wire-payload.json),
throughput at a fixed client count across network paths (make load --path: results/load/paths-latest.json),
and a new connection's setup apart from the steady call per path
(benchmarks/connection_setup.py: results/setup/connection-setup-latest.json)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import connection_setup
from capture import report as capture_report
from clients.protocols import label
from load import summary
from report.page import Bullets, Heading, Page, Para, Table
from studies.common import read_json


def section(page: Page, results_dir: Path) -> list[str]:
    page.add(Heading(2, "Along the axes: bytes, throughput and connection setup", "axes"))
    lines = compression(page, results_dir)
    throughput(page, results_dir)
    setup(page, results_dir)
    return lines


def compression(page: Page, results_dir: Path) -> list[str]:
    page.add(Heading(3, "Bytes per call with and without compression", "axes-compression"))
    wire = read_json(results_dir / "capture" / "wire-payload.json", "capture", page)
    if not wire:
        page.add(Para("Not captured: `.venv/bin/python -m capture --axis compression --operations fetch-1 fetch-100 "
                      "fetch-1000 -n 3 --new-connections 1 --no-database` writes `results/capture/wire-payload.json`.",
                      "missing"))
        return []
    ctx = wire["context"]
    cap = ctx["settings"]["capture"]
    rows = capture_report.compression_rows(wire)
    page.add(Para(f"`results/capture/wire-payload.json`, {ctx.get('date')} ({cap['link']}, "
                  f"{cap['operations_per_steady_window']} calls a kept-alive window after "
                  f"{cap['warmup_operations']} warm-up calls): each implementation beside its `+gzip` subject, the "
                  "protocol's own mechanism negotiated by the lab's client; frame bytes per call on an open "
                  "connection, both directions, link headers included. The ratio is compressed ÷ uncompressed."))
    page.add(Table(["protocol", "implementation", "operation", "games", "identity B/call", "compressed B/call",
                    "compressed ÷ identity", "response app payload identity → compressed"],
                   [[label(r["protocol"]), r["implementation"], r["operation"],
                     f"{r['games']:,}" if r["games"] else "–",
                     f"{r['frame_bytes']['identity']:,.0f}", f"{r['frame_bytes'][r['value']]:,.0f}",
                     f"{r['ratio']:.3f}" if r["ratio"] is not None else "–",
                     f"{r['app_payload']['identity']:,.0f} → {r['app_payload'][r['value']]:,.0f}"] for r in rows],
                   caption="Kept-alive bytes per call, without and with compression", anchor="axes-compression-table"))
    per = capture_report.protocol_ratios(rows)
    items = [f"{label(p)}, {op}: compressed ÷ identity {lo:.2f}" + (f"–{hi:.2f}" if hi - lo >= 0.005 else "")
             + f" ({n} implementation{'s' * (n != 1)})" for (p, op), (lo, hi, n) in per.items()]
    unsupported = (wire.get("compression") or {}).get("unsupported") or {}
    items += [f"`{name}` could not compress: {why}" for name, why in unsupported.items()]
    if items:
        page.add(Bullets(items))
    return []


def throughput(page: Page, results_dir: Path) -> None:
    page.add(Heading(3, "Throughput at a fixed client count across network paths", "axes-throughput"))
    run = read_json(results_dir / "load" / "paths-latest.json", "load", page)
    if not run:
        page.add(Para("Not measured: `make load LOAD_ARGS=\"--per-protocol --path veth rtt20ms --clients 50 "
                      "--model closed\"` (root) writes `results/load/paths-latest.json`.", "missing"))
        return
    ctx = run["context"]
    load = ctx.get("load", {})
    paths = load.get("paths", {})
    page.add(Para(f"`results/load/paths-latest.json`, {ctx.get('date')}: Locust {load.get('engine_version', '')} on "
                  f"the host, the database and the services beyond each path (one lab per path, in turn), closed "
                  f"model ({load.get('operation')}; warm-up {load.get('warmup_s')} s, window ≥ {load.get('steady_s')} "
                  "s). `clients ÷ rtt` is the ceiling of a closed model there: each client has one request in "
                  "flight and waits at least the measured round trip for its answer."))
    page.add(Table(list(summary.PATH_HEAD), summary.path_rows(run["results"], paths),
                   caption="Closed-model throughput per subject and path, beside the path's set and measured "
                           "round trip",
                   anchor="axes-throughput-table"))


def setup(page: Page, results_dir: Path) -> None:
    page.add(Heading(3, "Connection setup apart, per round trip", "axes-setup"))
    found = read_json(results_dir / "setup" / "connection-setup-latest.json", "connection-setup", page)
    if not found:
        page.add(Para("Not measured: `make connection-setup` (root) writes "
                      "`results/setup/connection-setup-latest.json`.", "missing"))
        return
    loads = ", ".join(f"{p['path']} {p['load_before'][0]:.1f}–{p['load_after'][0]:.1f}" for p in found["paths"]
                      if p.get("load_before"))
    page.add(Para(f"`results/setup/connection-setup-latest.json`, {found['context'].get('date')}: {found['rounds']} "
                  f"rounds a path, `{found['operation']}`, every subject and kind interleaved in a shuffled order. "
                  "tcp: connect() alone; made: the protocol's client made (its handshake, where its library makes "
                  "one then); first call: its first call; steady: the same call on a kept, warmed connection; setup = "
                  "made + first − steady and beyond TCP = setup − tcp, each the median of the per-round differences "
                  "with its 95 % interval; in round trips: ÷ the path's measured round trip. Load average (1 min) "
                  f"before–after each path: {loads}."))
    page.add(Table(list(connection_setup.HEAD), connection_setup.rows(found),
                   caption="Medians in ms [95 % interval]", anchor="axes-setup-table"))
