"""The pytest plugin of the lab (loaded by the root conftest.py): one lab per
session, started and stopped here, and one connected client per implementation."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from clients.base import GameClient
from lab import settings
from lab.registry import select
from lab.stack import Lab, running_lab

IMPLEMENTATIONS = [impl.name for impl in select()]
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


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    with running_lab(mode=request.config.getoption("--lab-mode")) as running:
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
