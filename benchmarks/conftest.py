"""After a benchmark run: a table per operation (median with its CI, p95,
p99, mean, σ as the study; each ratio to the direct baseline, paired by cycle,
with its 99 % bootstrap CI; CPU µs per operation of the client, the service and
the database), the ranking the intervals support, the noise guard, and the
raw results with their context in results/benchmarks/."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.suite import Suite, operations, selected_subjects
from lab import results as lab_results
from lab import settings
from lab.axes import parse_subject
from lab.context import run_context
from lab.pytest_plugin.fixtures import SITES_KEY, implementations, run_sites
from lab.registry import CRUD_CALLS
from lab.stack import site_unavailable
from lab.stats import noise
from lab.stats.statistics import resampled_in_runs, summarize

SUITE_KEY = pytest.StashKey[Suite]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The latency tests: the workload table's operations (benchmarks.suite.operations) ×
    every implementation that serves CRUD at every site of the run (--lab-mode × --lab-paths),
    then each site's `direct`. A site this host cannot run gives skipped tests that say why."""
    if not {"operation", "subject"} <= set(metafunc.fixturenames):
        return
    params = []
    for site in run_sites(metafunc.config):
        why = site_unavailable(site)
        marks = [pytest.mark.skip(reason=f"{site.name}: {why}")] if why else []
        for p in [*implementations(*CRUD_CALLS), pytest.param("direct", id="direct")]:
            name = p.values[0]
            if name is None:  # every implementation left out here: its parameter says why
                params.append(p)
                continue
            params.append(pytest.param(site.subject(name), id=site.subject(name), marks=[*p.marks, *marks]))
    cells = [pytest.param(op, p.values[0], id=f"{op}-{p.id}", marks=p.marks)
             for op in operations() for p in params]
    metafunc.parametrize(("operation", "subject"), cells)


@pytest.fixture(scope="session")
def interleaved(request: pytest.FixtureRequest, sites, client_of):
    """interleaved(operation) -> benchmarks.suite.Result: every selected subject
    of the operation, measured together on first use."""
    suite = Suite(sites, client_of, selected_subjects(request.session.items),
                  enabled=not request.config.getoption("benchmark_disable"))
    request.config.stash[SUITE_KEY] = suite
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None and suite.enabled:
        def show(result: Any) -> None:
            with capture.global_and_fixture_disabled():  # to the terminal, mid-test
                early_table(reporter.write_line, result)
        def say(text: str) -> None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(text)
        suite.on_measured, suite.on_progress = show, say
    return suite.run


def row(per_round: list[float], result: Any, subject: str) -> dict[str, Any]:
    """A subject's statistics (µs) from its per-operation times (s), with the
    CPU split and ratio the interleaved measurement gave it."""
    out = {**summarize(per_round), "data_s": per_round}
    if result is not None and subject in result.times:
        out["cpu_us_per_op"] = result.cpu_us.get(subject, {})
        out["wall_us_per_op"] = result.wall_us.get(subject)
        if subject in result.ranking.get("to_baseline", {}):
            out["ratio_to_direct"] = result.ranking["to_baseline"][subject]
    return out


def early_table(write: Any, result: Any) -> None:
    """An operation's table as soon as it is measured (the first one a few
    minutes into a run, not at its end); the summary repeats it with the others."""
    if not result.times:
        return
    rows = {s: row(times, result, s) for s, times in result.times.items()}
    write("")
    for line in table(result.operation, rows, result.ranking, result.design.describe()):
        write(line)
    for line in site_lines(result):
        write(line)
    for line in stopping_lines(result.stopping):
        write(line)
    now = datetime.datetime.now(datetime.UTC)  # a run's log then tells when each table came (a newcomer's wait)
    write(f"({result.operation} measured in {result.seconds:.0f} s{settled(result.settle)}{collected(result.gc)}; "
          f"every table again at the end, with the noise guard; printed at {now:%H:%M:%S} UTC)")


def stopping_lines(stopping: dict[str, Any]) -> list[str]:
    """Where the sequential rule stopped an operation and why (lab.stats.sequential), with each look's widths."""
    from benchmarks.suite import look_text
    if not stopping:
        return []
    took = f" ({stopping['seconds']:.0f} s)" if "seconds" in stopping else ""
    text = (f"stopped at {stopping['stopped_at']} of at most {stopping['cap']} cycles{took}: {stopping['reason']}; "
            f"intervals at {stopping['level']:.4%}")
    if stopping.get("target_half_width"):
        text += (f" (99 % over the looks at {', '.join(map(str, stopping['looks']))} cycles, "
                 f"alpha spent in proportion to cycles)")
    return [text, *(f"  look at {look['cycles']} cycles, {look['seconds']:.0f} s in: {look_text(look)}"
                    for look in stopping.get("looks_taken", []))]


def collected(record: dict[str, Any]) -> str:
    """The client's garbage collection while measured (interleave.GcRecord), for a table's last line."""
    if not record:
        return ""
    n = record["collections"]
    return (f"; the client's garbage collector, its {record['frozen_objects']:,} objects from before frozen: "
            f"{sum(n):,} collections ({n[2]:,} full) in {record['ms']:,.0f} ms, {record['in_timed_calls_ms']:,.0f} ms "
            f"of it inside timed calls, the longest {record['largest_ms']:,.1f} ms")


def settled(settle: dict[str, Any]) -> str:
    """How the subjects were warmed and settled before the measured cycles, for a table's last line."""
    if not settle:
        return ""
    warm = settle.get("warmup") or {}
    text = ""
    if warm:
        seconds = settle.get("warmup_s", sum(w["seconds"] for w in warm.values()))  # before 2026-12-03: in turn
        text += f", {seconds:.0f} s of it warming up"
        own = sorted({w["asked"] for w in warm.values()})
        if len(own) > 1:
            text += f" ({', '.join(f'{n:,}' for n in own)} calls a subject, as their manifests ask)"
    if settle.get("cycles"):
        text += f", then {settle['cycles']} untimed cycles"
    short = [f"{s} ({w['calls']:,} of {w['asked']:,} calls)" for s, w in warm.items() if w["calls"] < w["asked"]]
    if short:
        text += " - warm-up cut short by LAB_BENCH_WARMUP_MAX_S: " + ", ".join(short)
    return text


def collect(config: pytest.Config) -> dict[str, dict[str, dict[str, Any]]]:
    """{operation: {subject: stats + raw data}} from the benchmark session."""
    session = getattr(config, "_benchmarksession", None)
    found: dict[str, dict[str, dict[str, Any]]] = {}
    if session is None or session.disabled:
        return found
    suite = config.stash.get(SUITE_KEY, None)
    for bench in session.benchmarks:
        if not bench.stats or not bench.stats.data:
            continue
        # One operation per round: each datum is one operation's time.
        per_round = [t / bench.iterations for t in bench.stats.data] if bench.iterations > 1 \
            else list(bench.stats.data)
        subject = bench.params["subject"]
        result = suite.results.get(bench.group) if suite else None
        found.setdefault(bench.group, {})[subject] = {**row(per_round, result, subject),
                                                      "iterations": bench.iterations}
    return found


def _short(subject: str, width: int = 26) -> str:
    return subject if len(subject) <= width else subject[:width - 1] + "…"


def table(operation: str, rows: dict[str, dict[str, Any]], ranking: dict[str, Any] | None = None,
          design: dict[str, Any] | None = None) -> list[str]:
    """Rows in ranking order (fastest first) when there is a ranking."""
    base = rows.get("direct", {}).get("median")
    order = [s for s in (ranking or {}).get("order", []) if s in rows] or list(rows)
    order += [s for s in rows if s not in order]
    level = (ranking or {}).get("confidence", 0.99)
    head = (f"{'implementation':<27}{'median':>8}{'±95%':>6}{'p95':>8}{'p99':>8}{'mean':>8}{'σ':>7}"
            f"{f'× direct [{level * 100:g} % CI]':>22}   {'CPU µs/op: client':>17}{'service':>8}{'db':>7}{'rest':>7}")
    how = ""
    if design:
        how = (f"; {design['rounds']} rounds each: {design['blocks']} cycles, each visiting every subject "
               f"in random order for {design['discard']} untimed + {design['block']} timed call(s)")
        if design.get("baseline_visits", 1) > 1:
            how += (f"; {design['baseline']} {design['baseline_visits']} visits a cycle "
                    f"({design['baseline_rounds']} rounds)")
    lines = [f"{operation} (µs per operation{how})", head, "-" * len(head)]
    for subject in order:
        s = rows[subject]
        low, high = s["median_ci95"]
        margin = max(s["median"] - low, high - s["median"])
        r = s.get("ratio_to_direct")
        if r:
            ratio = f"{r['ratio']:.2f} [{r['ci'][0]:.2f}–{r['ci'][1]:.2f}]"
        else:
            ratio = f"{s['median'] / base:.2f}" if base else "-"
        cpu = s.get("cpu_us_per_op") or {}
        wall = s.get("wall_us_per_op")
        used = sum(cpu.values())
        rest = f"{wall - used:.0f}" if cpu and wall else "-"
        cells = [f"{cpu[p]:.0f}" if p in cpu else "-" for p in ("client", "service", "database")]
        lines.append(f"{_short(subject):<27}{s['median']:>8.0f}{margin:>6.0f}{s['p95']:>8.0f}{s['p99']:>8.0f}"
                     f"{s['mean']:>8.0f}{s['stddev']:>7.0f}{ratio:>22}   {cells[0]:>17}{cells[1]:>8}{cells[2]:>7}"
                     f"{rest:>7}")
    return lines


def ranking_lines(ranking: dict[str, Any]) -> list[str]:
    """The chain, then the statement for each neighbour pair in it."""
    if not ranking.get("order"):
        return []
    pct = f"{ranking['confidence'] * 100:g} %"
    lines = [f"ranking ({pct} CIs, ratios paired by cycle, bootstrap over {ranking['cycles']} cycles"
             f"{resampled_in_runs(ranking)}; "
             f"'=' within a group the CIs cannot tell apart, '<' between groups): {ranking['chain']}"]
    by_pair = {(p["a"], p["b"]): p for p in ranking["pairs"]}
    for a, b in zip(ranking["order"], ranking["order"][1:], strict=False):
        lines.append("  " + by_pair[(a, b)]["text"])
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    results = collect(config)
    if not results:
        return
    sites = config.stash.get(SITES_KEY, None)
    suite = config.stash.get(SUITE_KEY, None)
    write = terminalreporter.write_line
    guard = None
    if suite is not None and suite.noise_before is not None:
        baselines = {op: next((t for s, t in r.times.items() if parse_subject(s)[0] == "direct"), None)
                     for op, r in suite.results.items()}
        guard = noise.verdict(suite.noise_before, noise.snapshot(),
                              baseline={op: t for op, t in baselines.items() if t})
    terminalreporter.section("protolab: latency per operation")
    rankings, site_rankings, compared = {}, {}, {}
    measured = operations()
    for operation in [*measured, *sorted(set(results) - set(measured))]:
        if operation not in results:
            continue
        result = suite.results.get(operation) if suite else None
        ranking = result.ranking if result else {}
        rankings[operation] = ranking
        if result is not None:
            site_rankings[operation] = result.rankings
            compared[operation] = result.comparisons
        for line in table(operation, results[operation], ranking,
                          result.design.describe() if result else None):
            write(line)
        for line in site_lines(result) if result else ranking_lines(ranking):
            write(line)
        for line in stopping_lines(result.stopping) if result else []:
            write(line)
        write("")
    write("CPU µs/op: CPU time per operation during the timed blocks, of this client process, the service's "
          "process tree and the database; rest = wall time − their sum (waiting, wire, scheduling); a negative rest "
          "means the processes ran at the same time on the two cores (the client decoding while the service "
          "finishes its request), so their CPU adds up to more than the wall time.")
    write("cross-check: " + crosscheck_status())
    if guard is not None:
        write(noise.describe(guard), red=guard["flagged"], bold=guard["flagged"])
    if sites is None:
        return
    lab = sites.default
    implementations = list({i.name: i for one in sites.labs.values() for i in one.implementations}.values())
    key = run_key(sites)
    context = run_context(lab.mode if len(sites.labs) == 1 else key, lab.database, implementations,
                          benchmark=_benchmark_settings(config, suite))
    context["sites"] = [{**site.describe(), "database": one.database.describe(),
                         **({"link": one.link} if one.link else {})} for site, one in sites.labs.items()]
    context["sites_left_out"] = {site.name: why for site, why in sites.left_out.items()}
    if guard is not None:
        context["noise"] = guard
    write(f"sites {', '.join(s.name for s in sites.labs)}; database {lab.database.server} {lab.database.version}; "
          f"{context['cpu']['count']} × {context['cpu']['model']}; commit {context['commit']}")
    # every subject that serves the CRUD operations (a push-only one has no latency row)
    subjects = set(sites.subjects(lambda i: i.serves("create", "get", "list")))
    complete = all(subjects <= set(results.get(op, {})) for op in measured)
    data = {"results": results, "rankings": rankings, "site_rankings": site_rankings, "comparisons": compared}
    if len(sites.labs) == 1:  # one site: its file's key and context say where; the names are the plain ones
        data = without_suffix(data, next(iter(sites.labs)).suffix)
    path = lab_results.write("latency", key, context, data, results_dir(), latest=complete)
    write(f"raw results: {path.relative_to(settings.ROOT) if path.is_relative_to(settings.ROOT) else path}")
    if not complete:  # a -k selection must not replace the complete run that reports and comparisons read
        write(f"partial run: {key}-latest.json (read by lab.stats.compare and make report) left as it was")


def results_dir() -> Path:
    """Where the run's latency files go: LAB_BENCH_RESULTS, by default results/benchmarks/ (a sweep's
    runs go to results/sweep/runs/, so that no slice of a grid replaces the complete run there)."""
    return Path(os.environ.get("LAB_BENCH_RESULTS") or settings.RESULTS / "benchmarks")


def without_suffix(value: Any, suffix: str) -> Any:
    """`value` with every subject's site suffix ("@docker") taken off its names, keys and sentences."""
    if not suffix:
        return value
    if isinstance(value, dict):
        return {without_suffix(k, suffix): without_suffix(v, suffix) for k, v in value.items()}
    if isinstance(value, list):
        return [without_suffix(v, suffix) for v in value]
    return value.replace(suffix, "") if isinstance(value, str) else value


def site_lines(result: Any) -> list[str]:
    """Each site's ranking against its own `direct`, then the comparisons along one axis."""
    if not result.rankings:  # ranked without sites (a single ranking)
        return ranking_lines(result.ranking) + comparison_lines(result.comparisons)
    lines = []
    for suffix, site_ranking in result.rankings.items():
        if len(result.rankings) > 1:
            lines.append(f"at {suffix[1:] or 'native on loopback'}:")
        lines += ranking_lines(site_ranking)
    return lines + comparison_lines(result.comparisons)


def run_key(sites: Any) -> str:
    """A latency file's key: its sites ("native", "docker", "native+docker",
    "native+native@rtt20ms"), so that no run of other sites overwrites it."""
    return "+".join(site.mode + (f"@{site.path.name}" if site.path.veth else "") for site in sites.labs)


def comparison_lines(compared: list[dict[str, Any]]) -> list[str]:
    """The paired ratios along one axis: a variant ÷ its base, Docker ÷ native, a path ÷ loopback."""
    if not compared:
        return []
    what = {"variant": "variant ÷ base", "mode": "Docker ÷ native", "path": "path ÷ loopback"}
    level = compared[0].get("confidence", 0.99) * 100
    lines = [f"one axis changed ({level:g} % CI, paired by cycle; '>' slower, '<' faster, '~' no difference shown):"]
    for axis in what:
        rows = [c for c in compared if c["axis"] == axis]
        if rows:
            lines.append(f"  {what[axis]}:")
            lines += [f"    {c['text']}" for c in rows]
    return lines


def crosscheck_status() -> str:
    """The Go and Node.js clients at concurrency 1 (python -m load.crosscheck), beside these in make report."""
    path = settings.RESULTS / "load" / "crosscheck-latest.json"
    return f"{path.relative_to(settings.ROOT)}, beside these medians in make report" if path.exists() else \
        ("not measured (python -m load.crosscheck: a Go or Node.js client per protocol at concurrency 1; "
         "make report sets it beside these)")


def _benchmark_settings(config: pytest.Config, suite: Suite | None) -> dict[str, Any]:
    out: dict[str, Any] = {"timer": str(config.getoption("benchmark_timer"))}
    if suite is not None:
        out["design"] = suite.design.describe()
        out["seconds_per_operation"] = {op: round(r.seconds, 1) for op, r in suite.results.items()}
        out["settle"] = {op: r.settle for op, r in suite.results.items() if r.settle}
        out["client_gc"] = {op: r.gc for op, r in suite.results.items() if r.gc}
        out["stopping"] = {op: r.stopping for op, r in suite.results.items() if r.stopping}
    return out
