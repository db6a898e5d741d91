"""The pytest plugin of the lab (loaded by the root conftest.py, through
lab/pytest_plugin/__init__.py): one lab per session, started and stopped here,
and one connected client per implementation; the suites' parameters. How
make test's workers share the tests out is scheduling.py's."""

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
    # Before any lab starts, here or in a test's own process: a test run keeps the
    # database's files in memory, a measurement does not fsync at every commit (lab/settings.py).
    if config.getoption("benchmark_only", False):
        settings.measuring()
    else:
        settings.testing()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """The session's fixtures are torn down (the lab stops) even when another
    plugin's sessionfinish fails before pytest's own teardown runs. pytest-benchmark
    writes its JSON and says so first; to a closed pipe (Ctrl-C on `make bench |
    tee log` stops tee as well) that raises BrokenPipeError, and pytest skipped the
    teardown, then hung at exit on the clients' threads with every service up.
    After pytest's own teardown there is nothing left to do here."""
    try:
        return (yield)
    finally:
        session._setupstate.teardown_exact(None)


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
