"""Timeplus beside the lab (python -m studies push --scenario timeplus): its
tests I and II, events/s with client and server CPU, SSE (HTTP/1.1, h2 over TLS and h2c)
beside WebSocket push, and the figures its text gives beside the lab's best.

Reads only results/load/push-latest.json (its "studies" member holds the
figures the run was compared with; else published.json)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from lab.page import Bullets, Figure, Heading, Page, Para, Table, svg
from studies.common import LABELS, cell, eps, opt, read_json
from studies.common import series as by_transport
from studies.timeplus import STUDY
from studies.timeplus.scenario import figures

BATCH, CONCURRENCY = f"{STUDY.name}-batch", f"{STUDY.name}-concurrency"


def section(page: Page, inputs: Any) -> list[str]:
    data = read_json(inputs.results_dir / "load" / "push-latest.json", "push")
    rows = data["rows"] if data else []
    study = (data or {}).get("studies", {}).get(STUDY.name) or figures()
    page.add(Heading(2, "Timeplus: events/s vs batch size and vs concurrency", "push-timeplus"))
    if not any(r["scenario"] in (BATCH, CONCURRENCY) for r in rows):
        page.add(Para("Not measured: `python -m studies push --scenario timeplus`."))
        return []
    tls = any(r["transport"] == "sse-h2" for r in rows if r["scenario"] in (BATCH, CONCURRENCY))
    ways = ("SSE over HTTP/2 over TLS 1.3 (h2, as Timeplus's tab; the service's h2 variant, the lab's CA), beside "
            "it cleartext h2c and HTTP/1.1" if tls else
            "SSE over cleartext h2c instead of HTTP/2 over TLS (this run has no SSE h2 rows: it predates them)")
    tests = ((BATCH, "batch", "Test I: batch size at 10 subscriptions"),
             (CONCURRENCY, "clients", "Test II: subscriptions at batch 50"))
    for scenario, key, title in tests:
        series = by_transport(rows, scenario)
        if not series:
            continue
        xs = sorted({r[key] for runs in series.values() for r in runs})
        table = [["offered", "", *[eps(1000 * (10 if key == "batch" else x) * (x if key == "batch" else 50))
                                   for x in xs]]]
        for (impl, transport), runs in series.items():
            by = {r[key]: r for r in runs}
            table.append([impl, LABELS.get(transport, transport), *[cell(by[x]) if x in by else "–" for x in xs]])
        page.add(Table(["implementation", "transport", *[f"{key} {x}" for x in xs]], table,
                       f"{title}, one message per ms per subscription (offered: subscriptions × batch × 1,000 "
                       "events/s): events/s (client CPU / server CPU, % of one "
                       "core); * the client used ≥ 90 % of its CPUs (the client was the bottleneck, as Timeplus's "
                       "tab was).", f"push-{scenario}"),
                 Figure(f"push-{scenario}", _figure(series, key, study), f"{title}: events/s (log) per "
                        "implementation and transport; black marks: Timeplus's figures given in its text."))
    lab_sse_b400 = max((r["events_per_s"] for r in rows if r["scenario"] == BATCH and r["batch"] == 400
                        and r["transport"].startswith("sse")), default=None)
    lab_sse_c60 = max((r["events_per_s"] for r in rows if r["scenario"] == CONCURRENCY
                       and r["clients"] == 60 and r["transport"].startswith("sse")), default=None)
    lab_ws_max = max((r["events_per_s"] for r in rows if r["scenario"] == CONCURRENCY
                      and r["transport"] == "ws"), default=None)
    lab_ws_c30 = max((r["events_per_s"] for r in rows if r["scenario"] == CONCURRENCY
                      and r["clients"] == 30 and r["transport"] == "ws"), default=None)
    beside = [["SSE, batch 400, 10 subscriptions", eps(study.get("sse_batch400_c10_eps", 0)), opt(lab_sse_b400)],
              ["SSE, batch 50, 60 subscriptions (Timeplus's SSE maximum)", eps(study.get("sse_max_c60_b50_eps", 0)),
               opt(lab_sse_c60)],
              ["WebSocket, batch 50, its maximum over 1–60 subscriptions", eps(study.get("ws_max_b50_eps", 0)),
               opt(lab_ws_max)],
              ["WebSocket, batch 50, 30 subscriptions", eps(study.get("ws_b50_c30_eps", 0)), opt(lab_ws_c30)]]
    page.add(Table(["Timeplus's figure (from its text)", "Timeplus events/s", "the lab's best events/s"], beside,
                   "The only figures Timeplus gives as numbers; its charts' other points are not in the text.",
                   "push-timeplus-beside"),
             Bullets([f"Timeplus: {study.get('setup', '')}. The lab: a Go client (no EventSource, no JavaScript "
                      "parsing, no rendering: it finds each message's timestamp and counts its events); "
                      f"{ways}; loopback, a 2-core machine shared with other work. Timeplus's "
                      "limit was its tab's CPU; the lab's is whichever of server and client runs out of CPU first: "
                      "the CPU columns say which. Events/s below the offered rate mean the server fell behind; where "
                      "that happened and neither is near 100 % of its CPU, neither limited the run alone: the share "
                      "of the machine it got did (the load average above says how busy the machine was).",
                      "Timeplus found SSE and WebSocket close, WebSocket with slightly less client CPU and SSE with "
                      "the higher maximum; compare each language's SSE rows with its WS row (the same feed and "
                      "server code paths, the transport apart).",
                      "gRPC server streaming (the lab's addition; not in Timeplus's test): the same feed as a "
                      "protobuf server stream, every subscription on one HTTP/2 connection as SSE h2c's; its events "
                      "are typed messages, not JSON, so the server's cost per event differs from the other ways' by "
                      "the serialization as well as the transport."]))
    return []


def _figure(series: dict[tuple[str, str], list[dict[str, Any]]], key: str, study: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(8.5, 4.4))
    styles: dict[str, Any] = {"sse-h1": "-", "sse-h2c": ":", "sse-h2": (0, (5, 1)), "ws": "--", "grpc": "-."}
    languages: dict[str, int] = {}
    for (impl, transport), runs in series.items():
        language = impl.split("/")[1].split("_")[0]
        colour = f"C{languages.setdefault(language, len(languages)) % 10}"
        runs = sorted(runs, key=lambda r: r[key])
        ax.plot([r[key] for r in runs], [max(r["events_per_s"], 1) for r in runs],
                linestyle=styles.get(transport, "-"), marker="o", markersize=3, color=colour,
                label=f"{impl} {LABELS.get(transport, transport)}")
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
    return svg(fig, f"push-{key}")
