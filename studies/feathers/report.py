"""The Feathers comparison beside the lab (python -m studies feathers): the
study's requests/s and bytes per call beside the lab's HTTP and messaging
implementations at 100 connections × N calls.

Reads only results/load/feathers-latest.json."""

from __future__ import annotations

from typing import Any

from clients.protocols import PROTOCOLS
from lab.page import Bullets, Heading, Page, Para, Table
from lab.registry import discover
from studies.common import read_json
from studies.feathers import STUDY, axes

PUBLISHED = STUDY.published()


def http_beside_messaging(recorded: dict[str, dict[str, Any]], names: list[str]) -> list[tuple[str, str]]:
    """(REST, messaging) pairs of one language each, from the implementations'
    manifest fields (protocol, language: as the results' context recorded them,
    else from the registry) and the protocols' `messaging` flag: the study's
    pair was Express beside socket.io, both Node.js."""
    manifests = {i.name: {"protocol": i.protocol, "language": i.language} for i in discover()}
    fields = {n: recorded.get(n.split("@")[0]) or manifests.get(n.split("@")[0], {}) for n in names}

    def messaging(name: str) -> bool:
        p = fields[name].get("protocol")
        return p in PROTOCOLS and PROTOCOLS[p].messaging
    pairs = []
    for w in filter(messaging, names):
        http = [h for h in names if fields[h].get("protocol") == "rest"
                and fields[h].get("language") == fields[w].get("language")
                and h.partition("@")[2] == w.partition("@")[2]]   # on the same network path
        if http:
            pairs.append((http[0], w))
    return pairs


def section(page: Page, inputs: Any) -> list[str]:
    load_dir = inputs.results_dir / "load"
    page.add(Heading(2, "Feathers: HTTP vs one WebSocket per client", "feathers"))
    f = read_json(load_dir / "feathers-latest.json", "feathers", page)
    if not f:
        page.add(Para("Not measured: `python -m studies feathers`."))
        return beside_round_trips(page, inputs)
    results = f["results"]
    rps = {name: {r["calls_per_connection"]: r for r in cells} for name, cells in results.items()}
    calls = sorted({c for by in rps.values() for c in by})
    pairs = http_beside_messaging(f.get("context", {}).get("implementations", {}), list(rps))
    head = ["calls per connection", "study: HTTP req/s", "study: socket.io req/s", "the study says",
            *[f"lab: {n} req/s" for n in rps], *[f"lab: {w.split('/')[1]} ÷ {h.split('/')[1]}" for h, w in pairs]]

    def lab_cells(c: int) -> list[str]:
        out = [_rps(rps[n].get(c)) for n in rps]
        for h, w in pairs:
            a, b = rps[h].get(c), rps[w].get(c)
            out.append(f"{b['requests_per_s'] / a['requests_per_s']:.2f}" if a and b and a["requests_per_s"] else "–")
        return out
    rows = []
    for label, row in PUBLISHED["tables"]["requests_per_s"]["rows"].items():
        http, sio, says = row["HTTP"] or "–", row["socket.io"] or "–", row["says"]
        matching = [c for c in calls if str(c) == label or (label.startswith("500") and c >= 500)]
        if not matching:
            rows.append([label, http, sio, says, *["not run"] * (len(rps) + len(pairs))])
        for c in matching:
            rows.append([f"{c:,}", http, sio, says, *lab_cells(c)])
    for c in calls:
        if not any(r[0] == f"{c:,}" for r in rows):
            rows.append([f"{c:,}", "–", "–", "(not in the study)", *lab_cells(c)])
    rows.sort(key=lambda r: int(r[0].replace(",", "").split("–")[0]))
    when = f.get("context", {}).get("date", "")
    page.add(Para(f"The study's table beside the lab's ({when}). The study ran {PUBLISHED['setup']}; "
                  "the lab runs Locust "
                  "against its own implementations on loopback, pinned as the "
                  "sweep is, with the tiny `health` call (the study's `get` returned `{\"id\": ...}` without "
                  "a database; the lab's health reaches the database)."),
             Table(head, rows, "100 connections, each making N calls one after another, connection setup "
                               "included; requests/s = all calls ÷ (first call's start to the last reply).",
                   "feathers-table"))
    brow = []
    for name, cells in results.items():
        last = cells[-1].get("bytes_per_call") or {}
        brow.append([f"lab: {name}", f"{last.get('sent', 0) + last.get('received', 0):,.0f}" if last else "–",
                     "the Locust process's count of application bytes (headers and frames, not TCP/IP), "
                     "over the last run"])
    brow += [[f"study: {k}", str(v), "one call and its reply on an open connection (browser tools)"]
             for k, v in PUBLISHED["tables"]["bytes"]["rows"]["one call"].items()]
    page.add(Table(["who", "bytes per call", "counted as"], brow, "Bytes per call, sent + received.",
                   "feathers-bytes"))
    notes = []
    for h, w in pairs:
        r = {c: rps[w][c]["requests_per_s"] / rps[h][c]["requests_per_s"] for c in calls
             if c in rps[h] and c in rps[w] and rps[h][c]["requests_per_s"]}
        if not r:
            continue
        one, most = r.get(min(r)), r[max(r)]
        verdict = []
        if one is not None and min(r) == 1:
            verdict.append(f"at 1 call the WebSocket side is {one:.2f}× HTTP "
                           + ("(slower, as the study found)" if one < 1 else "(not slower: the study found it "
                                                                            "about 50 % slower)"))
        if 10 in r and max(r) != 10:
            verdict.append(f"at 10 calls {r[10]:.2f}× " + ("(slower, as the study found)" if r[10] < 1 else
                                                          "(already faster: the study found it still slower)"))
        verdict.append(f"at {max(r):,} calls {most:.2f}× "
                       + ("(faster, as the study found" + (", but far from its 4.1×)" if most < 3 else ")")
                          if most > 1 else "(not faster: the study found socket.io faster from 50 calls on)"))
        notes.append(f"{w} vs {h}: " + "; ".join(verdict) + ".")
    if notes:
        notes.append("Where the lab's ratio is smaller than the study's, the likely reason is its server: both "
                     "lab sides spend most of a call's CPU in the framework and the database call, not in HTTP's "
                     "headers, and the lab's clients keep HTTP connections alive as autocannon did; the study's "
                     "HTTP side ran Express on a Heroku dyno reached over the Internet.")
    page.add(Bullets(notes) if notes else Para(""))
    return beside_round_trips(page, inputs)


def beside_round_trips(page: Page, inputs: Any) -> list[str]:
    """The study's long-run row beside the lab's round-trip rows (studies/feathers/axes.py computes the
    sentences from results/setup/connection-setup-latest.json)."""
    page.add(Heading(3, "Calls per connection beside the round-trip rows", "feathers-round-trips"))
    study = axes.study_call_times(PUBLISHED)
    setup = read_json(inputs.results_dir / "setup" / "connection-setup-latest.json", "connection-setup", page)
    if not setup or not study:
        page.add(Para("Not measured: `make connection-setup` (root) times, per network path, an HTTP call on a new "
                      "and on a kept-alive connection and a messaging protocol's call on its open one.", "missing"))
        return []
    implementations = {i.name: i for i in discover()}

    def field(name: str, key: str) -> str:
        impl = implementations.get(name.split("+")[0])
        return getattr(impl, key) if impl else name.split("/")[0] if key == "protocol" else ""
    rows = axes.beside(study, setup, lambda n: field(n, "protocol"),
                       lambda p: p in PROTOCOLS and PROTOCOLS[p].messaging, lambda n: field(n, "language"))
    page.add(Para(f"The study's {study['calls']} calls a connection: HTTP {study['http_rps']:,.0f} requests/s over "
                  f"{PUBLISHED['scenario']['connections']} connections is {study['http_ms']:.1f} ms a call, socket.io "
                  f"{study['sio_rps']:,.0f}/s {study['sio_ms']:.1f} ms: {study['ratio']:.1f}× as long. The lab's, "
                  f"per path (`results/setup/connection-setup-latest.json`, {setup['context'].get('date')}; each ratio "
                  "the median of per-round ratios, paired by round, with its 95 % interval)."))

    def cell(r: dict[str, Any] | None) -> str:
        return "–" if not r else f"{r['ratio']:.2f} [{r['ci95'][0]:.2f}–{r['ci95'][1]:.2f}]"
    page.add(Table(["path", "measured rtt ms", "HTTP", "messaging", "new HTTP ÷ messaging", "kept HTTP ÷ messaging",
                    "first call: messaging ÷ HTTP", "study"],
                   [[r["path"], f"{r['measured_rtt_ms']:.2f}" if r["measured_rtt_ms"] is not None else "–",
                     r["http"], r["messaging"], cell(r["new_http_over_messaging"]), cell(r["kept_http_over_messaging"]),
                     cell(r["first_call_messaging_over_http"]), f"{study['ratio']:.1f}"] for r in rows],
                   caption="Time a call, HTTP over messaging, per network path", anchor="feathers-round-trips-table"),
             Bullets([r["text"] for r in rows]))
    return [f"Feathers beside the round-trip rows: {r['text']}" for r in rows]


def _rps(r: dict[str, Any] | None) -> str:
    if r is None:
        return "–"
    errors = sum(r.get("errors", {}).values())
    return (f"{r['requests_per_s']:,.0f}" + (f" ({errors} err)" if errors else "")
            + ("" if r.get("valid", True) else "*"))
