"""Repeated benchmark runs, modes alternating (native, docker, native, ...),
so that run-to-run noise is measured rather than guessed, and a slow spell of
the machine cannot land on one mode only.

    python -m lab.runs [--runs 3] [--modes native,docker] [-- extra pytest args]
    make bench-runs RUNS=3

Each run is a whole `pytest --benchmark-only` (its own lab, its own result
file). The summary gives, per operation and implementation, the median of the
runs' medians and their range, and, with two modes, the ratio of the second
mode's median to the first's within each pair of adjacent runs. It is printed
and written to results/runs-<date>.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from lab import settings
from lab.compare import BENCHMARKS, OPERATIONS, load


def run_once(mode: str, extra: list[str]) -> Path:
    """One benchmark run in `mode`; returns the result file it wrote."""
    before = set(BENCHMARKS.glob(f"{mode}-2*.json")) if BENCHMARKS.exists() else set()
    done = subprocess.run([sys.executable, "-m", "pytest", "--benchmark-only", "-q", "benchmarks",
                           "--lab-mode", mode, *extra], cwd=settings.ROOT, env=os.environ.copy())
    if done.returncode != 0:
        raise SystemExit(f"the {mode} run failed (pytest exit {done.returncode})")
    new = set(BENCHMARKS.glob(f"{mode}-2*.json")) - before
    if len(new) != 1:
        raise SystemExit(f"the {mode} run wrote {len(new)} result files, expected 1")
    return new.pop()


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{operation: {subject: {mode: {median, low, high, medians}, ratio: {...}}}} from
    {mode: [result, ...]} (results as benchmarks/conftest.py writes them, in run order)."""
    modes = list(runs)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for op in OPERATIONS:
        subjects = [s for s in runs[modes[0]][0]["results"].get(op, {})]
        for subject in subjects:
            cell: dict[str, Any] = {}
            for mode in modes:
                medians = [r["results"][op][subject]["median"] for r in runs[mode]
                           if subject in r["results"].get(op, {})]
                if medians:
                    cell[mode] = {"median": statistics.median(medians), "low": min(medians),
                                  "high": max(medians), "medians": medians}
            if len(modes) == 2 and all(m in cell for m in modes):
                ratios = [b / a for a, b in zip(cell[modes[0]]["medians"], cell[modes[1]]["medians"],
                                                strict=False)]
                cell["ratio"] = {"median": statistics.median(ratios), "low": min(ratios),
                                 "high": max(ratios), "values": ratios}
            out.setdefault(op, {})[subject] = cell
    return out


def tables(summary: dict[str, dict[str, dict[str, Any]]], modes: list[str]) -> dict[str, list[str]]:
    """{operation: Markdown table lines}: median of the runs' medians [range], and the ratio."""
    out = {}
    for op, rows in summary.items():
        head = ["implementation", *modes] + ([f"{modes[1]} / {modes[0]}"] if len(modes) == 2 else [])
        lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        for subject, cell in rows.items():
            cells = [f"{cell[m]['median']:.0f} [{cell[m]['low']:.0f}–{cell[m]['high']:.0f}]" if m in cell
                     else "-" for m in modes]
            if len(modes) == 2:
                r = cell.get("ratio")
                cells.append(f"{r['median']:.2f} [{r['low']:.2f}–{r['high']:.2f}]" if r else "-")
            lines.append(f"| {subject} | " + " | ".join(cells) + " |")
        out[op] = lines
    return out


def explanation(modes: list[str], n: int) -> str:
    return (f"{n} runs per mode, modes alternating ({', '.join(modes)}): the median of the runs' medians "
            "in µs, [lowest–highest run]"
            + (f"; {modes[1]} / {modes[0]}: the ratio of medians within each pair of adjacent runs, "
               "median [range]." if len(modes) == 2 else "."))


def markdown(summary: dict[str, dict[str, dict[str, Any]]], modes: list[str], n: int) -> str:
    lines = [f"# {n} runs per mode, modes alternating ({', '.join(modes)})", "", explanation(modes, n), ""]
    for op, table in tables(summary, modes).items():
        lines += [f"## {op}", "", *table, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.runs", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="native,docker")
    parser.add_argument("extra", nargs="*", help="after --: extra pytest arguments")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(settings.MODES)
    if unknown or not modes:
        parser.error(f"--modes: choose from {', '.join(settings.MODES)}")
    files: dict[str, list[Path]] = {m: [] for m in modes}
    for i in range(args.runs):
        for mode in modes:
            print(f"run {i + 1}/{args.runs}, {mode}", flush=True)
            files[mode].append(run_once(mode, args.extra))
    runs = {m: [load(p) for p in paths] for m, paths in files.items()}
    summary = summarize(runs)
    text = markdown(summary, modes, args.runs)
    text += "\nRuns: " + "; ".join(f"{m}: " + ", ".join(p.name for p in ps) for m, ps in files.items()) + "\n"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    out = settings.RESULTS / f"runs-{stamp}.md"
    out.write_text(text)
    # What make report reads: the summary and the runs it came from.
    (settings.RESULTS / "runs-latest.json").write_text(json.dumps({
        "date": stamp, "modes": modes, "runs_per_mode": args.runs,
        "files": {m: [p.name for p in ps] for m, ps in files.items()},
        "contexts": {m: [r["context"] for r in rs] for m, rs in runs.items()},
        "summary": summary}, indent=1))
    print(text)
    print(f"written to {out} and {settings.RESULTS / 'runs-latest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
