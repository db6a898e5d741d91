"""After a benchmark run: a table per operation (mean, min, max, σ as the
study; median, p95, p99 and the ratio to the direct baseline's median), and
the raw results with their context in results/benchmarks/."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab import settings
from lab.context import run_context
from lab.testing import LAB_KEY

OPERATIONS = ("insert", "fetch-one", "fetch-100")


def percentile(sorted_data: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_data:
        return float("nan")
    position = (len(sorted_data) - 1) * q
    low = int(position)
    high = min(low + 1, len(sorted_data) - 1)
    return sorted_data[low] + (sorted_data[high] - sorted_data[low]) * (position - low)


def summarize(data: list[float]) -> dict[str, float]:
    """Statistics in µs of per-round times given in seconds."""
    ordered = sorted(data)
    n = len(ordered)
    mean = sum(ordered) / n
    var = sum((x - mean) ** 2 for x in ordered) / (n - 1) if n > 1 else 0.0
    us = 1e6
    return {"rounds": n, "mean": mean * us, "min": ordered[0] * us, "max": ordered[-1] * us,
            "stddev": var ** 0.5 * us, "median": percentile(ordered, 0.5) * us,
            "p95": percentile(ordered, 0.95) * us, "p99": percentile(ordered, 0.99) * us}


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
    head = (f"{'implementation':<22}{'mean':>9}{'min':>9}{'max':>9}{'σ':>8}{'median':>9}"
            f"{'p95':>9}{'p99':>9}{'rounds':>8}{'× direct':>10}")
    lines = [f"{operation} (µs)", head, "-" * len(head)]
    for subject, s in rows.items():
        ratio = f"{s['median'] / base:.2f}" if base else "-"
        lines.append(f"{subject:<22}{s['mean']:>9.0f}{s['min']:>9.0f}{s['max']:>9.0f}"
                     f"{s['stddev']:>8.0f}{s['median']:>9.0f}{s['p95']:>9.0f}{s['p99']:>9.0f}"
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
    (out_dir / f"{lab.mode}-latest.json").write_text(text)
    write(f"raw results: {path.relative_to(settings.ROOT)}")


def _benchmark_settings(config: pytest.Config) -> dict[str, Any]:
    names = ("benchmark_warmup", "benchmark_warmup_iterations", "benchmark_min_rounds",
             "benchmark_max_time", "benchmark_min_time", "benchmark_timer")
    return {name.removeprefix("benchmark_"): str(config.getoption(name)) for name in names}
