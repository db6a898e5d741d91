"""Kamiński et al. 2023 beside the lab: its Tables 4-6 (latency, µs) beside the
lab's benchmarks, and its Table 7 (bytes per operation) beside the wire capture."""

from __future__ import annotations

from typing import Any

from lab.page import Bullets, Heading, Page, Para, Table
from lab.registry import study_column
from lab.settings import MODES, RUN_COMMAND
from lab.workload import LATENCY
from studies import published
from studies.common import n0, ratio, read_json
from studies.kaminski2023 import STUDY, axes, wire

Inputs = Any  # report.inputs.Inputs: the saved results (the report's, above the studies)

STUDY_ENV = {"native": "Windows", "docker": "Docker"}  # the lab's mode -> the study's column


def first_of_each_protocol(inputs: Any, names: list[str]) -> dict[str, str]:
    """Protocol -> the implementation set beside the study (lab.registry.study_column;
    names no longer discovered: the first of their protocol)."""
    out = study_column([n for n in names if n != "direct"])
    for name in names:
        if name != "direct":
            out.setdefault(inputs.protocol_of(name), name)
    return out


def wire_marks() -> dict[str, dict[str, int]]:
    """{operation: {protocol: bytes}}: Table 7, marked on the lab's wire figure."""
    return published.study_bytes(STUDY.published())


def section(page: Page, inputs: Inputs) -> list[str]:
    """The study's Tables 4-7 beside the lab; returns the ranking lines for the summary."""
    study = STUDY.published()
    cite = study["citation"]
    setup = study["setup"]
    page.add(Heading(2, "The study beside the lab", "study"),
             Para(f"Published: {cite['text']}, Tables 4–6 (µs; mean of an unstated number of rounds) — kept "
                  f"as data in `studies/kaminski2023/published.json`. Its setup: {setup['machine']}, "
                  f"{setup['docker']}, Python {setup['python']}, {setup['database']}; {setup['libraries']}. "
                  "The study's *Windows* column is native, like the lab's native mode. Absolute times "
                  "differ with hardware, OS, database and library versions, so each column also gives "
                  "every protocol's mean over that column's fastest (`× best`); the rankings order the "
                  "protocols by mean, fastest first, as the study's tables do. The lab ranks the first "
                  "implementation of each protocol."))
    summary: list[str] = []
    names = inputs.subjects()
    impl_of = first_of_each_protocol(inputs, names)
    for op in LATENCY:  # insert, fetch-one, fetch-100: the study's Tables 4-6
        found = published.latency_table(study, op)
        if found is None:
            continue
        number, _ = found
        page.add(Heading(3, f"{op} — study Table {number}", f"study-{op}"))
        study_vals = {env: published.study_latency(study, op, STUDY_ENV[env]) for env in MODES}
        lab_vals: dict[str, dict[str, float]] = {}
        lab_median: dict[str, dict[str, float]] = {}
        for mode in MODES:
            rows = inputs.runs.get(mode, {}).get("results", {}).get(op)
            if rows:
                lab_vals[mode] = {p: rows[n]["mean"] for p, n in impl_of.items() if n in rows}
                lab_median[mode] = {p: rows[n]["median"] for p, n in impl_of.items() if n in rows}
        protocols = [p for p in study["protocols"].values()]
        head = ["protocol"]
        for mode in MODES:
            head += [f"study {STUDY_ENV[mode]} mean", "× best"]
        for mode in lab_vals:
            head += [f"lab {mode} mean", "× best", f"lab {mode} median"]
        body = []
        for p in protocols:
            row = [published.name(p) + (f" (`{impl_of[p]}`)" if p in impl_of else " (not in the lab)")]
            for mode in MODES:
                vals = study_vals[mode]
                row += [n0(vals.get(p)), ratio(vals.get(p), min(vals.values()))]
            for mode, vals in lab_vals.items():
                row += [n0(vals.get(p)), ratio(vals.get(p), min(vals.values()) if vals else None),
                        n0(lab_median[mode].get(p))]
            body.append(row)
        page.add(Table(head, body, caption=f"{op}: study Table {number} beside the lab (µs)",
                       anchor=f"study-t-{op}"))
        items = []
        for mode in MODES:
            env = STUDY_ENV[mode]
            s_order = published.ranking(study_vals[mode])
            line = f"**{env} vs lab {mode}** — study: {published.ranking_text(s_order)}; "
            if mode not in lab_vals:
                line += f"lab: {mode} mode not run (`{RUN_COMMAND[mode]}`)."
                items.append(line)
                summary.append(f"{op}, {mode}: study {published.ranking_text(s_order)}; lab not run")
                continue
            l_order = published.ranking(lab_vals[mode])
            sentence = published.disagreement(s_order, l_order, f"the study ({env})", f"the lab ({mode})",
                                                "fastest")
            line += f"lab: {published.ranking_text(l_order)} — " + ("**they agree**." if sentence is None
                                                                    else f"**they disagree**: {sentence}")
            m_order = published.ranking(lab_median[mode])
            if m_order != l_order:
                line += f" (By median the lab's order is {published.ranking_text(m_order)}.)"
            items.append(line)
            summary.append(f"{op}, {mode}: study {published.ranking_text(s_order)}; lab "
                           f"{published.ranking_text(l_order)} ({'agree' if sentence is None else 'disagree'})")
        page.add(Bullets(items))
    summary += table_7(page, inputs, study)
    summary += beside_payload_axis(page, inputs, study)
    return summary


def beside_payload_axis(page: Page, inputs: Inputs, study: dict[str, Any]) -> list[str]:
    """Table 6 beside the sweep's payload axis, Table 7 beside the payload capture (studies/kaminski2023/axes.py
    computes every sentence)."""
    page.add(Heading(3, "Tables 6 and 7 beside the payload axis", "study-payload-axis"))
    sweep = read_json(inputs.results_dir / "sweep" / "latest.json", "sweep", page)
    found: list[str] = []
    if not sweep:
        page.add(Para("The sweep has not run: `make sweep` measures fetch-1 to fetch-1,000.", "missing"))
    else:
        rows = axes.table_6(study, sweep)
        line = axes.payload_line(sweep)
        head = ["protocol ÷ REST", "study (Table 6)"] + [f"lab, {c['games']:,} games [99 % CI]" for c in line]
        body = []
        for r in rows:
            by_games = {p["games"]: p for p in r["points"]}
            body.append([f"{published.name(r['protocol'])} ÷ REST", f"{r['study_ratio']:.2f}"]
                        + [f"{by_games[c['games']]['ratio']:.2f} [{by_games[c['games']]['ci'][0]:.2f}–"
                           f"{by_games[c['games']]['ci'][1]:.2f}]" if c["games"] in by_games else "–" for c in line])
        page.add(Para(f"The study's fetch-100 means over REST's against the lab's paired ratios along games per "
                      f"response (`results/sweep/latest.json`, {sweep['context'].get('date')}; uncompressed, "
                      "loopback)."),
                 Table(head, body, caption="Table 6 beside the payload axis", anchor="study-t6-payload"),
                 Bullets([r["text"] for r in rows]))
        found += [f"Table 6 beside the payload axis: {r['text']}" for r in rows]
    wire = read_json(inputs.results_dir / "capture" / "wire-payload.json", "capture", page)
    if not wire:
        page.add(Para("The payload capture has not run: `.venv/bin/python -m capture --axis compression "
                      "--operations fetch-1 fetch-100 fetch-1000 -n 3 --new-connections 1 --no-database`.", "missing"))
        return found
    names = [n for n in wire["steady"] if "+" not in n]
    impl_of = first_of_each_protocol(inputs, names)
    t7 = axes.table_7(study, wire, impl_of)
    games = sorted({g for r in t7["rows"] for g in r["steady"]})
    page.add(Table(["protocol", "implementation", "study fetch-one B", "lab 1 game, new connection B",
                    *[f"lab {g:,} games, kept-alive B/call" for g in games]],
                   [[published.name(r["protocol"]), r["implementation"] or "–", n0(r["study"]),
                     n0(r["new_connection_1"]), *[n0(r["steady"].get(g)) for g in games]] for r in t7["rows"]],
                   caption=f"Table 7 beside the payload capture (`results/capture/wire-payload.json`, "
                           f"{wire['context'].get('date')}; frame bytes, both directions)", anchor="study-t7-payload"),
             Bullets(t7["text"]))
    return found + [f"Table 7 beside the payload capture: {t}" for t in t7["text"]]


def table_7(page: Page, inputs: Inputs, study: dict[str, Any]) -> list[str]:
    summary: list[str] = []
    results = inputs.wire
    if results is None:
        page.add(Heading(3, "Study Table 7 beside the lab", "wire-table-7"),
                 Para("Wire capture not run — `make capture` writes `results/capture/wire.json`.", "missing"))
        return summary
    comp = wire.comparison(results)
    page.add(Heading(3, "Study Table 7 beside the lab", "wire-table-7"),
             Para(f"Study: {study['citation']['text']}, Table 7 — "
                  f"{study['tables']['7']['counted_with']}; it does not say whether connection setup "
                  "was counted. Lab: the same operation on a new connection (handshake, setup, "
                  "operation, close); with the service↔database frames; and on a kept-alive "
                  "connection. Comparison as `studies/kaminski2023/wire.py` computes it."))
    body = []
    for op, c in comp.items():
        for protocol, r in c["rows"].items():
            body.append([wire.STUDY_OPERATION[op], published.name(protocol), n0(r["study"]),
                         n0(r["new_connection"]), n0(r["new_connection_with_db"]), n0(r["steady"]),
                         f"{r['study_over_lab']:.2f}"])
    page.add(Table(["operation", "protocol", "study", "lab: new connection", "lab: + database",
                    "lab: kept-alive", "study ÷ lab"], body, caption="Bytes per operation",
                   anchor="wire-t7"))
    items = []
    for op, c in comp.items():
        s_order, l_order = c["ranking"]["study"], c["ranking"]["new_connection"]
        sentence = published.disagreement(s_order, l_order, "the study", "the lab (new connection)",
                                                "smallest")
        k_order = c["ranking"]["steady"]
        items.append(f"**{op}**, fewest bytes first — study: {published.ranking_text(s_order)}; lab, new "
                     f"connection: {published.ranking_text(l_order)} — "
                     + ("**they agree**." if sentence is None else f"**they disagree**: {sentence}")
                     + f" Kept-alive: {published.ranking_text(k_order)}.")
        summary.append(f"{op} bytes: study {published.ranking_text(s_order)}; lab (new connection) "
                       f"{published.ranking_text(l_order)} ({'agree' if sentence is None else 'disagree'})")
    why = wire.why_they_differ(results, comp)
    if why:
        page.add(Para(why))
    page.add(Bullets(items))
    return summary
