"""The pytest plugin of the lab (loaded by the root conftest.py): one lab per
session, started and stopped here, and one connected client per implementation."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from clients.base import GameClient
from lab import settings
from lab.registry import CRUD_OPERATIONS, select
from lab.stack import Lab, running_lab


def implementations(*operations: str) -> list[Any]:
    """Every implementation the lab runs, as pytest parameters; one whose
    manifest does not list all of `operations` is skipped, saying which it lacks."""
    found = []
    for impl in select():
        lacking = [op for op in operations if not impl.serves(op)]
        reason = (f"{impl.name} does not serve {', '.join(lacking)} "
                  f"(its manifest's operations: {', '.join(impl.operations)})")
        marks = [pytest.mark.skip(reason=reason)] if lacking else []
        found.append(pytest.param(impl.name, marks=marks, id=impl.name))
    return found


# The CRUD suites' parameters: every implementation, push-only ones skipped.
IMPLEMENTATIONS = implementations(*CRUD_OPERATIONS)
LAB_KEY = pytest.StashKey[Lab]()


def _terminate(signum: int, frame: object) -> None:
    # A runner stopping pytest with SIGTERM still unwinds the fixtures, so
    # the lab's processes are stopped.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lab-mode", choices=settings.MODES, default=os.environ.get("LAB_MODE", "native"),
                     help="run against native processes or the Docker Compose stack (env LAB_MODE)")


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _terminate)


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
             "test_faults.py"),
    "fuzz": ("test_fuzz.py",),
}


def scope_of(nodeid: str) -> str:
    """The unit of work a test is scheduled in: its ONE_WORKER group, or itself."""
    file = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return next((group for group, files in ONE_WORKER.items() if file in files), nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") not in ("load", "loadgroup", "loadscope"):
        return None  # --dist each/loadfile/worksteal: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = True
    return OneWorkerGroups(config, log)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A service that died during a test stops the run, saying which and why
    (rather than every later test failing on a refused connection)."""
    running = item.config.stash.get(LAB_KEY, None)
    gone = running.exited() if running is not None else []
    if gone:
        pytest.exit("stopping the run: a service of the lab is gone: " + "; ".join(gone), returncode=3)


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    # Tests need change streams (the push feed `changes`); timings are taken without.
    change_streams = not request.config.getoption("benchmark_only", False)
    if not change_streams:
        settings.measuring()
    with running_lab(mode=request.config.getoption("--lab-mode"), change_streams=change_streams) as running:
        request.config.stash[LAB_KEY] = running  # for the benchmark summary
        yield running


@pytest.fixture(scope="session")
def _clients(lab: Lab) -> Iterator[dict[str, GameClient]]:
    opened: dict[str, GameClient] = {}
    yield opened
    for client in opened.values():
        client.close()


@pytest.fixture(scope="session")
def client_of(lab: Lab, _clients: dict[str, GameClient]):
    """client_of(name) -> the session's connected client of that implementation
    (or of "direct", the baseline), opened on first use."""
    def get(name: str) -> GameClient:
        if name not in _clients:
            _clients[name] = lab.client(name)
        return _clients[name]
    return get
