"""Test fixtures: the database in a known state, and a way to see that a
request changed nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

import pytest

from lab import dataset
from lab.stack import Lab
from services.common.store import Store

SEEDED = 100

# What settings.measuring() sets in os.environ when a test runs an instrument in its own process: put
# back after each test, so a later test on the same worker gets the tests' database settings (a fsync
# at every commit: test_faults' kill -9 test lost writes after one that ran the load sweep).
MEASURING_ENV = ("LAB_DB_SYNC_ON_COMMIT",)


@pytest.fixture(autouse=True)
def _measuring_settings_stay_in_their_test() -> Iterator[None]:
    import os

    before = {name: os.environ.get(name) for name in MEASURING_ENV}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _stored(store: Store) -> str:
    """A hash of every stored document's BSON as the database holds it, in _id order
    (raw batches: nothing decoded, ~4 ms for the 100 games where decoding and hashing
    each document's repr took ~11 ms)."""
    digest = hashlib.sha256()
    for batch in store.games.find_raw_batches({}, sort=[("_id", 1)]):
        digest.update(batch)
    return digest.hexdigest()


class Seeding:
    """The tests' one connection to the lab's database, and what the last reset left in it."""

    def __init__(self, store: Store):
        self.store = store
        self.loaded: list[dict] | None = None
        self.left: tuple[str, frozenset[str]] | None = None

    def state(self) -> tuple[str, frozenset[str]]:
        return _stored(self.store), frozenset(self.store.games.index_information())

    def seed(self, games: list[dict]) -> bool:
        """Drops the collection and loads `games` with the secondary indexes, unless the last
        reset loaded these games and the collection still holds exactly what it left (the
        same documents, byte for byte, and the same indexes): the hundreds of tests that
        change nothing skip a ~28 ms reset for a ~5 ms look. Whether it reset."""
        if games == self.loaded and self.state() == self.left:
            return False
        dataset.reset(self.store.games, games, indexes=True)
        self.loaded, self.left = games, self.state()
        return True


@pytest.fixture(scope="session")
def seeding(lab: Lab) -> Iterator[Seeding]:
    store = lab.store()
    yield Seeding(store)
    store.close()


@pytest.fixture
def seeded(seeding: Seeding):
    """The first 100 games of the dataset, with secondary indexes; yields them."""
    games = dataset.games(SEEDED)
    seeding.seed(games)
    yield games


@pytest.fixture
def fingerprint(seeding: Seeding) -> Callable[[], str]:
    """fingerprint() -> a hash of every stored document, read straight from MongoDB."""
    return lambda: _stored(seeding.store)


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
