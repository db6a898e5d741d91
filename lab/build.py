"""Every implementation's build step, the languages side by side:

    python -m lab.build      # what `make bootstrap` runs beside the venv and the database build

Builds are cached (lab.registry: rerun only when an input changes). Within a
language they run one after another (Go's builds share their compiled
dependencies; the Node.js implementations share one `npm ci`); the languages
run at the same time, so a first run's npm download, Go compile and the
database's cargo build overlap. Needs no venv: it runs with the system's python3.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lab.registry import BuildFailed, Implementation, select


def _build_in_turn(implementations: Sequence[Implementation], logs: Path | None) -> None:
    for impl in implementations:
        impl.build(logs / f"{impl.name.replace('/', '-')}.build.log" if logs else None)


def build_all(implementations: Sequence[Implementation], logs: Path | None = None) -> None:
    """Build each implementation that has a build step; raises the first failure
    once every language's builds have ended."""
    by_language: dict[str, list[Implementation]] = {}
    for impl in implementations:
        if impl.build_command:
            by_language.setdefault(impl.language, []).append(impl)
    if not by_language:
        return
    with ThreadPoolExecutor(max_workers=len(by_language)) as pool:
        runs = [pool.submit(_build_in_turn, group, logs) for group in by_language.values()]
    for run in runs:
        run.result()


def main() -> int:
    try:
        build_all(select())
    except BuildFailed as exc:
        print(f"protolab: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
