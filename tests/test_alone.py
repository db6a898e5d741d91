"""lab/pytest_plugin/scheduling.py's `alone` marker: under make test's workers, a test marked
`alone` runs with no other worker's test beside it, while the others still run
beside each other. Real pytest, real xdist workers, in a subprocess; each test
writes when it starts and ends (one system-wide monotonic clock), and the
intervals are compared: an order, not a timing."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

RECORD = '''
import json, os, time

def _record(name, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    with open(os.environ["INTERVALS"], "a") as f:
        f.write(json.dumps([name, start, time.monotonic(), os.environ.get("PYTEST_XDIST_WORKER")]) + "\\n")
'''
BODY = RECORD + '''
import pytest

@pytest.mark.parametrize("i", range(6))
def test_beside(i):
    _record(f"beside{i}", 0.4)

@pytest.mark.alone
@pytest.mark.parametrize("i", range(3))
def test_alone(i):
    _record(f"alone{i}", 0.6)
'''
# Two files of lab/pytest_plugin/scheduling.py's ONE_WORKER groups, each a unit larger than the
# alone tests' (xdist hands out the largest units first).
GROUP = RECORD + '''
import pytest

@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    _record(f"{__name__}{i}", 0.1)
'''
CONFTEST = '''
import os, time, pytest
pytest_plugins = ["lab.pytest_plugin"]

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        open("controller", "w").write(str(os.getpid()))

_first = []

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    # The worker of the alone tests comes to them late (as when its lab starts
    # slowly): the other workers must not begin theirs meanwhile.
    if item.get_closest_marker("alone") and not _first:
        _first.append(item)
        time.sleep(0.5)
    return (yield)
'''


def run(tmp_path: Path, workers: int) -> dict[str, tuple[float, float, str]]:
    (tmp_path / "test_sample.py").write_text(BODY)
    (tmp_path / "test_fuzz.py").write_text(GROUP)
    (tmp_path / "test_faults.py").write_text(GROUP)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    alone: alone\n")
    intervals = tmp_path / "intervals.jsonl"
    env = {"INTERVALS": str(intervals), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
                           "--dist", "load", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in intervals.read_text().splitlines()]
    return {name: (start, end, worker) for name, start, end, worker in rows}


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_an_alone_test_runs_beside_no_other_and_the_rest_still_run_side_by_side(tmp_path):
    got = run(tmp_path, workers=2)
    assert len(got) == 17
    alone = [v for k, v in got.items() if k.startswith("alone")]
    beside = [v for k, v in got.items() if not k.startswith("alone")]
    for a in alone:
        assert not any(overlap(a, other) for other in got.values() if other is not a), got
    # the others did run in parallel (so the check above could have failed)
    assert any(overlap(x, y) for i, x in enumerate(beside) for y in beside[i + 1:]), got
    # the alone tests are one unit of work: one worker runs them one after another,
    # nothing else between them (the others wait for them once, not once each)
    assert len({got[f"alone{i}"][2] for i in range(3)}) == 1, got
    first, last = min(a[0] for a in alone), max(a[1] for a in alone)
    assert not any(first < v[0] < last for v in beside), got
    # and they come first: handed out before the larger groups, and no other
    # worker begins a test while their worker has yet to begin them
    assert all(v[0] >= last for v in beside), got
    # the lock's files were used, and removed at the end
    controller = (tmp_path / "controller").read_text()
    assert not list(Path(tempfile.gettempdir()).glob(f"protolab-tests-{controller}.*"))
