"""After a benchmark run: a table per operation (mean, min, max, σ as the
study; median, p95, p99 and the ratio to the direct baseline's median), and
the raw results with their context in results/benchmarks/."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab import settings
from lab.context import run_context
from lab.statistics import summarize
from lab.testing import LAB_KEY

OPERATIONS = ("insert", "fetch-one", "fetch-100")


def collect(config: pytest.Config) -> dict[str, dict[str, dict[str, Any]]]:
    """{operation: {subject: stats + raw data}} from the benchmark session."""
    session = getattr(config, "_benchmarksession", None)
    found: dict[str, dict[str, dict[str, Any]]] = {}
    if session is None or session.disabled:
        return found
    for bench in session.benchmarks:
        if not bench.stats or not bench.stats.data:
            continue
        # One operation per round: each datum is one operation's time.
        per_round = [t / bench.iterations for t in bench.stats.data] if bench.iterations > 1 \
            else list(bench.stats.data)
        subject = bench.params["subject"]
        found.setdefault(bench.group, {})[subject] = {
            **summarize(per_round), "iterations": bench.iterations, "data_s": per_round}
    return found


def table(operation: str, rows: dict[str, dict[str, Any]]) -> list[str]:
    base = rows.get("direct", {}).get("median")
    head = (f"{'implementation':<22}{'mean':>9}{'min':>9}{'max':>9}{'σ':>8}{'median':>9}{'±95%':>7}"
            f"{'p95':>9}{'p99':>9}{'rounds':>8}{'× direct':>10}")
    lines = [f"{operation} (µs; ±95%: half-width of the median's 95 % confidence interval)", head,
             "-" * len(head)]
    for subject, s in rows.items():
        ratio = f"{s['median'] / base:.2f}" if base else "-"
        low, high = s["median_ci95"]
        margin = max(s["median"] - low, high - s["median"])
        lines.append(f"{subject:<22}{s['mean']:>9.0f}{s['min']:>9.0f}{s['max']:>9.0f}"
                     f"{s['stddev']:>8.0f}{s['median']:>9.0f}{margin:>7.0f}{s['p95']:>9.0f}{s['p99']:>9.0f}"
                     f"{s['rounds']:>8}{ratio:>10}")
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    results = collect(config)
    if not results:
        return
    lab = config.stash.get(LAB_KEY, None)
    write = terminalreporter.write_line
    terminalreporter.section("protolab: latency per operation")
    for operation in [*OPERATIONS, *sorted(set(results) - set(OPERATIONS))]:
        if operation in results:
            for line in table(operation, results[operation]):
                write(line)
            write("")
    if lab is None:
        return
    context = run_context(lab.mode, lab.database, lab.implementations,
                          benchmark=_benchmark_settings(config))
    write(f"mode {lab.mode}; database {lab.database.server} {lab.database.version}; "
          f"{context['cpu']['count']} × {context['cpu']['model']}; commit {context['commit']}")
    out_dir = settings.RESULTS / "benchmarks"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = context["date"].replace(":", "").replace("+0000", "Z")
    path = out_dir / f"{lab.mode}-{stamp}.json"
    text = json.dumps({"context": context, "results": results}, indent=1)
    path.write_text(text)
    write(f"raw results: {path.relative_to(settings.ROOT)}")
    subjects = {*lab.endpoints, "direct"}
    if all(subjects <= set(results.get(op, {})) for op in OPERATIONS):
        (out_dir / f"{lab.mode}-latest.json").write_text(text)
    else:  # a -k selection must not replace the complete run that reports and comparisons read
        write(f"partial run: {lab.mode}-latest.json (read by lab.compare and make report) left as it was")


def _benchmark_settings(config: pytest.Config) -> dict[str, Any]:
    names = ("benchmark_warmup", "benchmark_warmup_iterations", "benchmark_min_rounds",
             "benchmark_max_time", "benchmark_min_time", "benchmark_timer")
    return {name.removeprefix("benchmark_"): str(config.getoption(name)) for name in names}
