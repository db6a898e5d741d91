"""How make test's pytest-xdist workers share the tests out (part of the lab's
pytest plugin, lab/pytest_plugin/): the host-wide tests on one worker, the
tests marked `alone` with no other worker's test beside them."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without workers)
        for path in _lock_files(os.getpid()):
            path.unlink(missing_ok=True)


# make test runs on three workers (pytest-xdist, `-n 3`; the Makefile's
# TEST_WORKERS), each with its own lab. Tests that change the host as a whole
# (its Docker daemon, network namespaces and veth pairs, iptables; or that
# capture loopback traffic) run one after another on one worker, and so does a
# module that writes one result file at its end; every other test is a unit of
# its own, largest groups first. (xdist's own loadgroup cannot do this under
# pytest 9: it marks a test by rewriting item._nodeid, which pytest 9 no
# longer reads.)
ONE_WORKER = {
    "host": ("test_docker_mode.py", "test_dockerd.py", "test_capture_engine.py", "test_wire_capture.py",
             "test_faults.py", "test_netpath.py", "test_axes_instruments.py"),
    "profiling": ("test_profiling.py",),  # one profiling run (a module fixture) for all its tests
    "tls": ("test_tls.py",),  # one lab of TLS subjects (a module fixture) for all its tests
    "http2": ("test_http2.py",),  # one lab of HTTP/2 subjects (a module fixture) for all its tests
}


def scope_of(nodeid: str, alone: frozenset[str] = frozenset()) -> str:
    """The unit of work a test is scheduled in: "alone" for the tests marked so
    (one after another on one worker, so the others wait for them once), its
    ONE_WORKER group, or itself."""
    if nodeid in alone:
        return "alone"
    file = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return next((group for group, files in ONE_WORKER.items() if file in files), nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") not in ("load", "loadgroup", "loadscope"):
        return None  # --dist each/loadfile/worksteal: xdist's own
    # Imported here: this hook runs only under pytest-xdist (make test), and a run
    # without it (make bench) has no need of it.
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerGroups(LoadScopeScheduling):
        alone: frozenset[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.alone is None:  # every worker has collected (and written the list) by now
                listed = _lock_files(os.getpid()).alone
                self.alone = frozenset(json.loads(listed.read_text())) if listed.exists() else frozenset()
            return scope_of(nodeid, self.alone)

        def _assign_work_unit(self, node: Any) -> None:
            # The alone unit first (the other workers wait at their first test
            # until it has begun: _await_the_alone_tests), then the largest first.
            if "alone" in self.workqueue:
                self.workqueue.move_to_end("alone", last=False)
                _lock_files(os.getpid()).handed.touch()  # before any worker has work
            super()._assign_work_unit(node)

    config.option.loadscopereorder = True
    return OneWorkerGroups(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker tells the controller's scheduler which tests are marked `alone`
    (the controller collects nothing; its scheduler sees node ids only), before
    xdist reports the collection finished."""
    if hasattr(session.config, "workerinput"):
        listed = _lock_files(os.getppid()).alone
        ids = [item.nodeid for item in session.items if _alone(item)]
        partial = listed.with_suffix(f".{os.getpid()}")
        partial.write_text(json.dumps(ids))
        partial.replace(listed)  # every worker writes the same list; a reader never sees half of one


# A test marked `alone` (1,000 Locust clients against one service) makes a claim
# about a service, not about a machine shared with two other test workers: it
# runs with no other worker's test beside it. A readers-writer lock across the
# workers of one run (flock): every test holds it shared, an `alone` test
# exclusive; a gate in front keeps the other workers from starting new tests
# while an `alone` test waits for theirs to end (flock alone would let the
# shared holders starve it). Without xdist, nothing to wait for.
#
# The alone tests are the first unit handed out, and the other workers' first
# tests wait until they have begun: otherwise whatever the others drew first
# (a 36 s Docker test, a lab's start) ran while the alone tests waited for it,
# and the others waited all through the alone tests after it (make test,
# 2026-11-28: the alone tests began 10 s into the run, with two workers idle).
class RunFiles(NamedTuple):
    gate: Path
    lock: Path
    alone: Path   # the alone tests' node ids
    handed: Path  # the scheduler handed the alone tests out first
    begun: Path   # they have begun


def _lock_files(controller: int) -> RunFiles:
    """The files of the run whose controller has this pid."""
    base = Path(tempfile.gettempdir()) / f"protolab-tests-{controller}"
    return RunFiles(*(base.with_suffix(f".{name}") for name in RunFiles._fields))


ALONE_BEGIN_S = 60.0  # the longest a worker's first test waits for the alone tests to begin


def _await_the_alone_tests(handed: Path, begun: Path) -> None:
    """Before a worker's first test (not an alone one): while the alone tests,
    handed out first, have not begun, wait (at most ALONE_BEGIN_S); once they
    have, the gate holds this worker until they end. (Under another --dist
    than this scheduler's, nothing is handed out first: no wait.)"""
    if not handed.exists():
        return
    deadline = time.monotonic() + ALONE_BEGIN_S
    while not begun.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _alone(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


_held: list[Any] = []  # this worker's open (gate, lock) while it holds them across alone tests
_began: list[bool] = []  # [True] once this worker has begun a test


@contextmanager
def _turn(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not hasattr(item.config, "workerinput"):
        yield
        return
    exclusive = _alone(item)
    if not _held:
        # the controller's files, removed at its end
        files = _lock_files(os.getppid())
        if not _began and not exclusive:
            _await_the_alone_tests(files.handed, files.begun)
        _began[:] = [True]
        gate, lock = open(files.gate, "a"), open(files.lock, "a")
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)
        if exclusive:
            files.begun.touch()
        _held[:] = [gate, lock]
    try:
        yield
    finally:
        # The alone tests run one after another (their own unit of work): the
        # lock is kept from one to the next, so the others wait once, not each time.
        if not (exclusive and _alone(nextitem)):
            for f in reversed(_held):
                fcntl.flock(f, fcntl.LOCK_UN)
                f.close()
            _held.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    with _turn(item, nextitem):
        return (yield)
