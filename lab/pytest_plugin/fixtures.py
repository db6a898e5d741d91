"""The pytest plugin of the lab (loaded by the root conftest.py, through
lab/pytest_plugin/__init__.py): one lab per session, started and stopped here,
and one connected client per implementation; the suites' parameters. How
make test's workers share the tests out is scheduling.py's."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clients.base import GameClient
from lab import settings
from lab.registry import CRUD_CALLS, Implementation, discover, missing_line
from lab.stack import Lab, running_lab


def implementations(*operations: str, where: Callable[[Implementation], bool] = lambda impl: True) -> list[Any]:
    """The implementations the lab runs here that serve all of `operations` and
    satisfy `where`, as pytest parameters: a test is generated only where it
    applies, so a skip says something is missing on this machine. Where every
    implementation it applies to is left out (its toolchain is not installed),
    one parameter, skipped, says which and how to get it."""
    applies = [impl for impl in discover() if impl.serves(*operations) and where(impl)]
    here = [impl for impl in applies if not impl.missing()]
    if here or not applies:  # none in the repository at all: the test's own defect, pytest says so
        return [pytest.param(impl.name, id=impl.name) for impl in here]
    left_out = "; ".join(missing_line(impl) for impl in applies)
    return [pytest.param(None, id="none-here", marks=pytest.mark.skip(reason=left_out))]


# The CRUD suites' parameters: every implementation here that serves CRUD (not the push-only ones).
IMPLEMENTATIONS = implementations(*CRUD_CALLS)
LAB_KEY = pytest.StashKey[Lab]()


def _terminate(signum: int, frame: object) -> None:
    # A runner stopping pytest with SIGTERM still unwinds the fixtures, so
    # the lab's processes are stopped.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The implementations left out here (their toolchain is missing): no test
    is generated for them, so the run says so at its top."""
    return [missing_line(impl) for impl in discover() if impl.missing()]


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
