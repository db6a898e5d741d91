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



# Every REST response and WebSocket reply the tests' clients receive is
# checked against the contract (openapi.yaml, ws-protocol.schema.json) when
# the test ends: only recorded during the test (a list append), validated
# after it (benchmarks/ has no such hook, so nothing of it is ever timed).
CHECKED: dict[str, int] = {"rest": 0, "ws": 0}
_SEEN: dict[str, list] = {"rest": [], "ws": []}
_HOOKED: set[int] = set()


def _hook(client) -> None:
    from clients.rest import RestClient
    from clients.ws import WebSocketClient

    if id(client) in _HOOKED:
        return
    _HOOKED.add(id(client))
    if isinstance(client, RestClient):
        client.session.hooks["response"].append(lambda response, *a, **k: _SEEN["rest"].append(response))
    elif isinstance(client, WebSocketClient):
        receive = client.ws.receive

        def receiving(*args, **kwargs):
            message = receive(*args, **kwargs)
            if message is not None:
                _SEEN["ws"].append(message)
            return message
        client.ws.receive = receiving


@pytest.fixture
def client_of(client_of):
    from contract.validate import rest_response_errors, ws_message_errors

    for seen in _SEEN.values():
        seen.clear()

    def get(name: str):
        client = client_of(name)
        _hook(client)
        return client
    yield get
    problems = []
    for response in _SEEN["rest"]:
        path = response.request.path_url.split("?")[0]
        problems += rest_response_errors(response.request.method, path, response.status_code,
                                         response.headers.get("Content-Type"), response.content)
    for message in _SEEN["ws"]:
        problems += ws_message_errors(message)
    CHECKED["rest"] += len(_SEEN["rest"])
    CHECKED["ws"] += len(_SEEN["ws"])
    assert problems == [], f"{len(problems)} message(s) outside the contract:\n" + "\n".join(problems[:20])


def pytest_terminal_summary(terminalreporter) -> None:
    from fuzz.runner import TALLIES
    for tally in TALLIES:
        terminalreporter.write_line(
            f"fuzz: {tally.implementation:<28} cases {tally.cases:>6}  failures {len(tally.failures):>3}  "
            f"5xx/internal {tally.server_errors}  acknowledged writes {tally.acknowledged_writes}")
    if any(CHECKED.values()):
        terminalreporter.write_line(
            f"contract: {CHECKED['rest']} REST responses checked against openapi.yaml, "
            f"{CHECKED['ws']} WebSocket replies against ws-protocol.schema.json")
