"""pytest plugin: at the end of a session, every result file written under
results/ during it is checked against its kind's JSON Schema (lab/results.py,
lab/schemas/). A file that does not validate fails the session, named with
what is wrong, so no instrument can drift from the documented format unseen."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pytest

from lab import results, settings

_STARTED = pytest.StashKey[float]()
_SESSION = pytest.StashKey[pytest.Session]()


def written_since(directory: Path, since: float, skip: set[Path] = frozenset()) -> list[Path]:
    """The .json files under `directory` modified at or after `since` (a time.time())."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*.json")
                  if p.is_file() and p.stat().st_mtime >= since and p.resolve() not in skip)


def check(paths: list[Path]) -> list[str]:
    """One message per file that is not a valid result, naming the file and the error."""
    problems = []
    for path in paths:
        try:
            results.validate(path)
        except (OSError, results.ResultError) as exc:
            problems.append(str(exc))
    return problems


def pytest_sessionstart(session: pytest.Session) -> None:
    # a second early: file systems with coarse timestamps must not hide a file written at once
    session.config.stash[_STARTED] = time.time() - 1.0
    session.config.stash[_SESSION] = session


@pytest.hookimpl(trylast=True)  # after benchmarks/conftest.py's summary has written its result
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or _STARTED not in config.stash:
        return  # the controller checks once, after every worker's files are written
    # pytest-benchmark's own --benchmark-json is its format, not the lab's
    own = getattr(config.option, "benchmark_json", None)
    skip = {Path(own).resolve()} if own else set()
    paths = written_since(settings.RESULTS, config.stash[_STARTED], skip)
    if not paths:
        return
    problems = check(paths)
    if not problems:
        terminalreporter.write_line(f"results format: {len(paths)} result file(s) written under results/ "
                                    "validate against lab/schemas/")
        return
    terminalreporter.section("results format", red=True, bold=True)
    for problem in problems:
        terminalreporter.write_line(problem, red=True)
    terminalreporter.write_line(f"the session fails: {len(problems)} of {len(paths)} result file(s) written "
                                "under results/ do not validate (docs/results.md)", red=True, bold=True)
    session = config.stash[_SESSION]
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def main(argv: list[str] | None = None) -> int:
    """python -m lab.results_check [DIR ...]: every result file under the directories
    (default results/) against its schema; exit 1 naming each one that does not validate.
    CI runs it after the producing commands (.ci/run)."""
    parser = argparse.ArgumentParser(prog="python -m lab.results_check", description=main.__doc__)
    parser.add_argument("dirs", nargs="*", type=Path, default=[settings.RESULTS])
    args = parser.parse_args(argv)
    paths = [p for d in args.dirs for p in written_since(d, 0.0)]
    problems = check(paths)
    for problem in problems:
        print(problem)
    print(f"results format: {len(paths) - len(problems)} of {len(paths)} result file(s) validate against "
          "lab/schemas/")
    return 1 if problems or not paths else 0


if __name__ == "__main__":
    raise SystemExit(main())
