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


def pytest_terminal_summary(terminalreporter) -> None:
    from fuzz.runner import TALLIES
    for tally in TALLIES:
        terminalreporter.write_line(
            f"fuzz: {tally.implementation:<28} cases {tally.cases:>6}  failures {len(tally.failures):>3}  "
            f"5xx/internal {tally.server_errors}  acknowledged writes {tally.acknowledged_writes}")
    from watched import CHECKED
    if any(CHECKED.values()):
        terminalreporter.write_line(
            f"contract: {CHECKED['rest']} REST responses checked against openapi.yaml, "
            f"{CHECKED['ws']} WebSocket replies and push messages against ws-protocol.schema.json, "
            f"{CHECKED['socketio']} socket.io and {CHECKED['sse']} SSE push messages against push.schema.json, "
            f"{CHECKED['soap']} SOAP exchanges against games.wsdl's XML Schema")
