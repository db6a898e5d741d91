"""The page: what is missing, the context, latency tables and box plots per
operation and mode, native vs Docker, bytes on the wire, load, push, profiles;
then each published study's section (studies/<name>/report.py), none named here."""

from __future__ import annotations

import datetime
from typing import Any

from capture import report as capture_report
from clients.protocols import label
from lab.host import compose
from lab.stats import compare
from lab.stats import runs as bench_runs
from report import axes as axes_report
from report import confidence, figures, grouping
from report import load as load_report
from report import profiles as profiles_report
from report import push as push_report
from report import summary as run_summary
from report import sweep as sweep_report
from report.inputs import MODES, RUN_COMMAND, Inputs, missing
from report.page import Bullets, Figure, Heading, Page, Para, Table, markdown_table
from studies import STUDIES, Study
from studies import claims as study_claims
from studies.common import n0, ratio

STATS = ("mean", "min", "max", "stddev", "median", "p95", "p99")
STAT_HEAD = {"stddev": "σ"}


def rounds_text(rows: dict[str, Any]) -> str:
    counts = sorted({int(r["rounds"]) for r in rows.values()})
    return "–" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]:,}–{counts[-1]:,}"


# -- sections ---------------------------------------------------------------

def missing_section(page: Page, inputs: Inputs, discovered: list[str] | None) -> list[str]:
    gaps = missing(inputs, discovered)
    page.add(Heading(2, "What is missing", "missing"))
    if gaps:
        page.add(Para("The page leaves these out; each line says how to fill the gap."),
                 Bullets(gaps, "missing"))
    else:
        page.add(Para("Nothing: both modes were benchmarked, every implementation has every "
                      "operation, and both wire captures are present."))
    return gaps


def _versions(ctx: dict[str, Any]) -> tuple[str, str]:
    server: dict[str, str] = {}
    for impl in ctx.get("implementations", {}).values():
        server.update(impl.get("versions", {}))
    clients = ctx.get("client_versions", {})
    return (", ".join(f"{k} {v}" for k, v in sorted(server.items())) or "–",
            ", ".join(f"{k} {v}" for k, v in sorted(clients.items())) or "–")


def _docker_text(ctx: dict[str, Any]) -> str:
    if ctx.get("mode") != "docker":
        return "– (not Docker)"
    docker = ctx.get("docker")
    if not docker:
        return "**not recorded** by this run"
    d = docker.get("daemon", {})
    proxy = d.get("userland_proxy")
    proxy_text = "unknown" if proxy is None else ("**on**" if proxy else "off")
    return (f"Docker {d.get('version')}, userland proxy {proxy_text}, {d.get('storage_driver')}, "
            f"cgroup v{d.get('cgroup_version')}, images {compose.images_text(docker)}, "
            f"database image {docker.get('mongo_image')}, ports on {docker.get('published_on')}")


def _design_texts(ctx: dict[str, Any]) -> tuple[str, str]:
    """The warm-up and the design as the run recorded them: the interleaved design's (benchmarks/interleave.py),
    or an older run's pytest-benchmark settings."""
    benchmark = ctx.get("settings", {}).get("benchmark", {})
    design = benchmark.get("design")
    if not design:
        return (f"{benchmark.get('warmup', '–')}, {benchmark.get('warmup_iterations', '–')} iterations",
                f"min rounds {benchmark.get('min_rounds', '–')} / max time {benchmark.get('max_time', '–')} s")
    # a record written before 2026-12-08 named the field where its value belongs
    order = design["order"].replace("baseline_visits", str(design.get("baseline_visits", "baseline_visits")))
    return (f"{design['warmup']} untimed calls per subject (or its manifest's own count), at most "
            f"{design['warmup_max_s']:g} s each, then {design['settle_cycles']} untimed cycles",
            f"{design['design']}, at most {design['rounds']:,} cycles ({design['baseline']} "
            f"{design['baseline_rounds']:,}): {order}")


def context_section(page: Page, inputs: Inputs, head: str) -> None:
    sources: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
    for mode in MODES:
        if mode in inputs.runs:
            sources.append((f"{mode} benchmarks", inputs.runs[mode]["context"], inputs.runs[mode]))
    if inputs.wire:
        sources.append(("wire capture", inputs.wire["context"], None))
    if inputs.wire_netns:
        sources.append(("wire capture (netns)", inputs.wire_netns["context"], None))
    page.add(Heading(2, "Context", "context"))
    if not sources:
        page.add(Para("No saved results: run `make bench` and `make capture`."))
        return

    def bench(ctx: dict[str, Any], key: str) -> str:
        return str(ctx.get("settings", {}).get("benchmark", {}).get(key, "–"))

    def capture(ctx: dict[str, Any], key: str) -> str:
        return str(ctx.get("settings", {}).get("capture", {}).get(key, "–"))

    rows_def: list[tuple[str, Any]] = [
        ("date (UTC)", lambda c, r: c.get("date", "–")),
        ("commit", lambda c, r: f"`{c.get('commit', '?')[:12]}`"
         + ("" if not head or c.get("commit", "").removesuffix("-dirty") == head.removesuffix("-dirty")
            else f" (work tree now `{head[:12]}`)")),
        ("mode", lambda c, r: c.get("mode", "–")),
        ("machine", lambda c, r: c.get("platform", "–")),
        ("CPU", lambda c, r: f"{c.get('cpu', {}).get('count')} × {c.get('cpu', {}).get('model')}"),
        ("Python", lambda c, r: c.get("python", "–")),
        ("database server", lambda c, r: f"{c.get('database', {}).get('server')} "
         f"{c.get('database', {}).get('version')}"),
        ("service threads × processes", lambda c, r: f"{c.get('settings', {}).get('service_threads')} × "
         f"{c.get('settings', {}).get('service_processes')}"),
        ("listen address", lambda c, r: c.get("settings", {}).get("host", "–")),
        ("Docker", lambda c, r: _docker_text(c)),
        ("rounds per row", lambda c, r: "–" if r is None else
         ", ".join(f"{op} {rounds_text(rows)}" for op, rows in r["results"].items())),
        ("warm-up", lambda c, r: "–" if r is None else _design_texts(c)[0]),
        ("design", lambda c, r: "–" if r is None else _design_texts(c)[1]),
        ("timer", lambda c, r: "–" if r is None else bench(c, "timer")),
        ("capture link", lambda c, r: "–" if r is not None else
         f"{capture(c, 'link')} (`{capture(c, 'interface')}`)"),
        ("capture tool", lambda c, r: "–" if r is not None else capture(c, "tshark")),
        ("server libraries", lambda c, r: _versions(c)[0]),
        ("client libraries", lambda c, r: _versions(c)[1]),
    ]
    table_rows = [[label, *(str(fn(ctx, run)) for _, ctx, run in sources)] for label, fn in rows_def]
    page.add(Table(["", *(s[0] for s in sources)], table_rows, anchor="context-table"))
    # What differs between the sources, apart from what always does.
    differ = [row[0] for row in table_rows
              if row[0] not in ("date (UTC)", "mode", "Docker", "rounds per row", "capture link",
                                "capture tool", "warm-up", "design", "timer")
              and len({c for c in row[1:] if c != "–"}) > 1]
    if len(sources) > 1:
        page.add(Para("Settings that differ between these sources: " + (", ".join(differ) or "none")
                      + ". Settings that change results: service threads, the Docker userland proxy "
                        "(40–100 µs per round trip when on), the mode, the database server."))


def latency_section(page: Page, inputs: Inputs) -> None:
    page.add(Heading(2, "Latency per operation", "latency"),
             Para("Per round, one operation, timed at the client from the call to the fully decoded "
                  "response on a connection opened before timing; µs. Mean, min, max and σ as the "
                  "study's Tables 4–6; median, p95 and p99 as well. `× direct` is the median over "
                  "the median of `direct`, the in-process store call on the same database: the "
                  "protocol's cost on top of it."))
    if not inputs.runs:
        page.add(Para("No benchmark run saved: run `make bench` (and `make bench-docker`).", "missing"))
        return
    subjects = inputs.subjects()
    for op in inputs.operations():
        page.add(Heading(3, op, f"latency-{op}"))
        for mode in MODES:
            run = inputs.runs.get(mode)
            if run is None:
                page.add(Para(f"{mode} mode: not run — `{RUN_COMMAND[mode]}`.", "missing"))
                continue
            rows = run["results"].get(op)
            if not rows:
                page.add(Para(f"{mode} mode: no {op} results.", "missing"))
                continue
            base = rows.get("direct", {}).get("median")
            tuned = {n: i["tuned"] for n, i in run["context"].get("implementations", {}).items() if i.get("tuned")}
            body = []
            for s in subjects:
                language = grouping.language_label(inputs.language_of(s)) or "–"
                if s not in rows:
                    body.append([s, label(inputs.protocol_of(s)), language, *["–"] * (len(STATS) + 2)])
                    continue
                r = rows[s]
                body.append([f"{s} †" if s in tuned else s, label(inputs.protocol_of(s)), language,
                             f"{int(r['rounds']):,}",
                             *(n0(r[k]) for k in STATS), ratio(r["median"], base)])
            page.add(Table(["implementation", "protocol", "language", "rounds",
                            *(STAT_HEAD.get(k, k) for k in STATS), "× direct"], body,
                           caption=f"{op}, {mode} mode (µs), by protocol and by language within it"
                           + "".join(f"; † {n}: tuned — {t}" for n, t in tuned.items() if n in rows),
                           anchor=f"t-{op}-{mode}"))
            head, grid = grouping.protocol_language_grid(rows, subjects, inputs.protocol_of, inputs.language_of)
            if len(head) > 2:  # more than one language: the same protocol side by side
                page.add(Table(head, grid, caption=f"{op}, {mode} mode: median µs, protocol × language",
                               anchor=f"t-{op}-{mode}-languages"))
        runs = {m: inputs.runs[m]["results"].get(op, {}) for m in MODES if m in inputs.runs}
        counts = []
        for m, rows in runs.items():
            total = sum(len(r.get("data_s") or []) for r in rows.values())
            out = sum(figures.whisker_outliers([t * 1e6 for t in r.get("data_s") or []]) for r in rows.values())
            counts.append(f"{m}: {out:,} of {total:,} rounds beyond the whiskers")
        page.add(Figure(f"latency-{op}", figures.latency(op, runs, subjects),
                        f"{op}: every round's time, per implementation"
                        + (" and mode (native beside Docker)" if len(runs) > 1 else f" ({', '.join(runs)} mode)")
                        + ". Box: quartiles and median; ◇ mean; whiskers 1.5 × IQR; every round outside "
                          "them is drawn as a point — outliers are shown, not removed (the study removed "
                          "them from its Figures 1–6). Log scale. " + "; ".join(counts) + "."))


def native_vs_docker_section(page: Page, inputs: Inputs) -> None:
    page.add(Heading(2, "Native vs Docker", "native-vs-docker"))
    if not all(m in inputs.runs for m in MODES):
        absent = [m for m in MODES if m not in inputs.runs]
        page.add(Para(f"Needs both modes; {' and '.join(absent)} mode not run — "
                      + ", ".join(f"`{RUN_COMMAND[m]}`" for m in absent) + ".", "missing"))
        return
    native, docker = inputs.runs["native"], inputs.runs["docker"]
    page.add(Para("As `python -m lab.stats.compare` prints it: the same benchmarks and clients, the services "
                  "in containers with their ports published on 127.0.0.1; Δ median and the Docker/native "
                  "ratio of medians."),
             Bullets([compare.describe(m, inputs.runs[m]["context"]).removeprefix("- ") for m in MODES]))
    for op in inputs.operations():
        lines = compare.table(op, native["results"].get(op, {}), docker["results"].get(op, {}))
        table = markdown_table(lines)
        table.caption = lines[0].removeprefix("### ")
        table.anchor = f"nvd-{op}"
        page.add(table)


AXIS_TITLES = {"variant": "variant ÷ its base", "mode": "Docker ÷ native", "path": "across the path ÷ on loopback"}


def side_by_side_section(page: Page, inputs: Inputs) -> None:
    """The comparisons along one axis from runs that measured several sites (a mode on a
    network path) together, each ratio paired by cycle within one run."""
    page.add(Heading(2, "One axis changed, measured side by side", "side-by-side"))
    runs = {**{m: r for m, r in inputs.runs.items() if any(r.get("comparisons", {}).values())},
            **inputs.side_by_side}
    if not inputs.side_by_side:
        page.add(Para("Not run: `make bench LAB_MODE=native,docker` measures every implementation natively and in "
                      "Docker in one run (`LAB_PATHS=loopback,rtt20ms` likewise across a network path); the "
                      "variant ÷ base ratios come from every `make bench`.", "missing"))
    for key, run in runs.items():
        ctx = run["context"]
        sites = "; ".join(f"{s['mode']} on {s['path']['name']}" + (  # older runs name no sites
            f" (measured: {s['link'].get('measured')})" if s.get("link") else "") for s in ctx.get("sites", []))
        page.add(Para(f"`{key}-latest.json`, {ctx.get('date')}: {sites}. Each ratio is the median over cycles of "
                      "the per-cycle ratio of the two subjects, with its 99 % bootstrap interval; '>' means the "
                      "first is slower and the interval excludes 1."))
        for op, rows in run.get("comparisons", {}).items():
            if not rows:
                continue
            table = Table(["subject", "reference", "axis", "ratio", "99 % CI", ""],
                          [[r["a"], r["b"], AXIS_TITLES.get(r["axis"], r["axis"]), f"{r['ratio']:.3f}",
                            f"{r['ci'][0]:.3f}–{r['ci'][1]:.3f}", r["relation"]] for r in rows],
                          caption=f"{op}: one axis changed ({key})", anchor=f"side-{key}-{op}")
            page.add(table)


def repeated_runs_section(page: Page, inputs: Inputs) -> None:
    page.add(Heading(2, "Run to run", "runs"))
    rep = inputs.repeated
    if rep is None:
        page.add(Para("Run-to-run spread: not measured — run `make bench-runs` (whole runs repeated, "
                      "modes alternating).", "missing"))
        return
    page.add(Para(bench_runs.explanation(rep["modes"], rep["runs_per_mode"]) + f" `make bench-runs`, {rep['date']}; "
                  "runs: " + "; ".join(f"{m}: " + ", ".join(f) for m, f in rep["files"].items()) + "."))
    for op, lines in bench_runs.tables(rep["summary"], rep["modes"]).items():
        table = markdown_table(lines)
        table.caption = f"{op} (µs)"
        table.anchor = f"runs-{op}"
        page.add(table)


def wire_section(page: Page, inputs: Inputs, marks: dict[str, dict[str, int]]) -> None:
    page.add(Heading(2, "Bytes on the wire", "wire"))
    if inputs.wire is None:
        page.add(Para("Wire capture not run — `make capture` writes `results/capture/wire.json`.", "missing"))
        return
    wire = inputs.wire
    cap = wire["context"]["settings"]["capture"]
    page.add(Para(f"From `results/capture/wire.json` ({wire['context']['date']}, {cap['link']}, "
                  f"{cap['tshark'].split(' (')[0]}); every detail is in `results/capture/wire.md`. Frame "
                  "bytes, both directions, link header included."))
    page.add(Heading(3, "Per operation: setup, request, response", "wire-parts"))
    netns = inputs.wire_netns
    head = ["implementation", "operation", "setup", "request →", "response ←", "teardown",
            "new connection", "kept-alive", "kept-alive app payload"]
    if netns:
        head.append("new connection, MTU 1,500")
    body = []
    for op in wire["operations"]:
        for name, ops in wire["new_connection"].items():
            if op not in ops:
                continue
            parts = figures.wire_parts(ops[op])
            steady = wire["steady"].get(name, {}).get(op)
            row = [name, op, *(n0(parts[k]) for k in ("setup", "request", "response", "teardown")),
                   n0(ops[op]["total"]["total"]["frame_bytes"]),
                   n0(steady["total"]["frame_bytes"]) if steady else "–",
                   n0(steady["total"]["app_payload"]) if steady else "–"]
            if netns:
                other = netns["new_connection"].get(name, {}).get(op)
                row.append(n0(other["total"]["total"]["frame_bytes"]) if other else "–")
            body.append(row)
    page.add(Table(head, body, caption="Frame bytes per operation", anchor="wire-parts-table"))
    impl_of = capture_report.by_protocol(wire)
    page.add(Figure("wire", figures.wire(wire, marks, impl_of),
                    "Frame bytes of one operation on a new connection, split into connection setup (TCP "
                    "handshake + HTTP/2 preface or WebSocket upgrade), request (client → server), response "
                    "(server → client) and teardown"
                    + ("; ◆ a published study's total for that protocol (its section says which)." if marks
                       else ".")))


def build(inputs: Inputs, head: str, discovered: list[str] | None = None,
          studies: list[Study] | None = None) -> tuple[Page, dict[str, Any]]:
    """The page and a summary (gaps, ranking lines) for the command line: the
    lab's sections, then each published study's (studies/, in their order)."""
    studies = STUDIES if studies is None else studies
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    page = Page("protolab report")
    page.add(Para(f"Generated {now} from "
                  + (", ".join(f"`{p.relative_to(inputs.results_dir.parent)}`" if p.is_relative_to(
                      inputs.results_dir.parent) else f"`{p}`" for p in inputs.sources) or "no saved results")
                  + " by `python -m report`. Compared with " + "; ".join(s.citation for s in studies) + ".",
                  "note"))
    run_summary.section(page, inputs)
    gaps = missing_section(page, inputs, discovered)
    context_section(page, inputs, head)
    latency_section(page, inputs)
    confidence_rankings = confidence.sections(page, inputs)
    native_vs_docker_section(page, inputs)
    side_by_side_section(page, inputs)
    repeated_runs_section(page, inputs)
    marks: dict[str, dict[str, int]] = {}
    for study in studies:  # a study may mark its bytes on the lab's wire figure
        marks.update(getattr(study.report(), "wire_marks", dict)())
    wire_section(page, inputs, marks)
    rankings = load_report.section(page, inputs.results_dir)
    rankings += push_report.section(page, inputs.results_dir)
    rankings += profiles_report.section(page, inputs.results_dir)
    rankings += sweep_report.section(page, inputs.results_dir)
    rankings += axes_report.section(page, inputs.results_dir)
    for study in studies:
        rankings += study.report().section(page, inputs)
    claims = study_claims.section(page, inputs.results_dir, studies)  # every study's claims, verdicts computed
    page.add(Heading(2, "Sources", "sources"),
             Bullets([f"{s.citation}: {s.measured}; its figures as data in `studies/{s.name}/published.json`."
                      for s in studies]
                     + ["Lab results: `results/benchmarks/<mode>-latest.json` (benchmarks/conftest.py), "
                        "`results/capture/wire.json` and `wire-netns.json` (`python -m capture`), "
                        "`results/load/` (`python -m load`, `python -m studies`)."]))
    return page, {"missing": gaps, "rankings": rankings, "confidence": confidence_rankings, "claims": claims}
