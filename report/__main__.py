"""`python -m report [--results DIR] [--out DIR]`: results/report.html (one
self-contained file: figures inline as SVG, no scripts, nothing fetched) and
results/report.md (figures in results/report-figures/)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from lab import settings
from lab.context import git_commit
from lab.registry import discover
from report import inputs as report_inputs
from report.build import build
from report.page import to_html, to_markdown


def write(results_dir: Path, out_dir: Path, head: str | None = None,
          discovered: list[str] | None = None) -> tuple[list[Path], dict]:
    if head is None:
        head = git_commit()
    inputs = report_inputs.load(results_dir)
    page, summary = build(inputs, head, discovered)
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path, md_path = out_dir / "report.html", out_dir / "report.md"
    html_path.write_text(to_html(page))
    md_path.write_text(to_markdown(page, out_dir / "report-figures", "report-figures"))
    return [html_path, md_path], summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m report", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=settings.RESULTS,
                        help="folder with benchmarks/ and capture/ (default results/)")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: --results)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    paths, summary = write(args.results, args.out or args.results,
                           discovered=[i.name for i in discover() if i.serves("get")])
    for line in summary["missing"]:
        print(f"missing: {line.replace('**', '').replace('`', '')}")
    for line in summary["rankings"]:
        print(f"ranking: {line}")
    for line in summary.get("confidence", []):
        print(f"ranking with confidence: {line}")
    for line in summary.get("claims", []):
        print(line)
    for path in paths:
        print(f"wrote {path}")
    print(f"report: done in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
