"""Test fixtures: the database in a known state, and a way to see that a
request changed nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from lab import dataset
from lab.stack import Lab

SEEDED = 100


@pytest.fixture
def seeded(lab: Lab):
    """The first 100 games of the dataset, with secondary indexes; yields them."""
    store = lab.store()
    games = dataset.games(SEEDED)
    dataset.reset(store.games, games, indexes=True)
    yield games
    store.close()


@pytest.fixture
def fingerprint(lab: Lab) -> Callable[[], str]:
    """fingerprint() -> a hash of every stored document, read straight from MongoDB."""
    store = lab.store()

    def take() -> str:
        digest = hashlib.sha256()
        for doc in store.games.find({}).sort("_id", 1):
            digest.update(repr(sorted(doc.items())).encode())
        return digest.hexdigest()
    yield take
    store.close()



# Every message the tests' clients receive is checked against the contract
# files when the test ends (tests/watched.py).
@pytest.fixture
def client_of(client_of):
    import watched

    watched.clear()

    def get(name: str):
        return watched.watch(client_of(name))
    yield get
    problems = watched.checked()
    assert problems == [], f"{len(problems)} message(s) outside the contract:\n" + "\n".join(problems[:20])


def _tallies() -> tuple[list[dict], dict[str, int]]:
    from watched import CHECKED

    from fuzz.runner import TALLIES
    return [t.summary() for t in TALLIES], dict(CHECKED)


_FROM_WORKERS: list[tuple[list[dict], dict[str, int]]] = []


def pytest_sessionfinish(session) -> None:
    if hasattr(session.config, "workeroutput"):  # an xdist worker: hand the counts to the controller
        session.config.workeroutput["protolab_tallies"] = _tallies()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    found = getattr(node, "workeroutput", {}).get("protolab_tallies")
    if found:
        _FROM_WORKERS.append(found)


def pytest_terminal_summary(terminalreporter) -> None:
    tallies, checked = _tallies()
    for more, counts in _FROM_WORKERS:
        tallies += more
        checked = {k: checked.get(k, 0) + counts.get(k, 0) for k in {*checked, *counts}}
    for tally in tallies:
        terminalreporter.write_line(
            f"fuzz: {tally['implementation']:<28} cases {tally['cases']:>6}  failures {tally['failures']:>3}  "
            f"5xx/internal {tally['server_errors']}  acknowledged writes {tally['acknowledged_writes']}")
    if any(checked.values()):
        terminalreporter.write_line(
            f"contract: {checked['rest']} REST responses checked against openapi.yaml, "
            f"{checked['ws']} WebSocket replies and push messages against ws-protocol.schema.json, "
            f"{checked['socketio']} socket.io and {checked['sse']} SSE push messages against push.schema.json, "
            f"{checked['soap']} SOAP exchanges against games.wsdl's XML Schema")
