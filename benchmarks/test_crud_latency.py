"""Latency of insert, fetch-one and fetch-100 for every implementation and
the direct-pymongo baseline, with the database prepared as the study did:

- insert: an empty collection without secondary indexes, restored before
  each implementation; the same game inserted by every one;
- fetch: 100 games of the dataset with indexes on; the same game fetched by
  every implementation.

One operation per round, timed at the client from the request to the fully
decoded response, on a connection opened before timing starts.
"""

from __future__ import annotations

import pytest

from lab import dataset
from lab.testing import IMPLEMENTATIONS

SUBJECTS = [*IMPLEMENTATIONS, "direct"]
FETCH_SET = dataset.FETCH_SET
INSERT_GAME = dataset.median_game()
FETCH_GAMES = dataset.fetch_games()
FETCH_ID = dataset.fetch_id()


@pytest.fixture
def collection(lab):
    store = lab.store()
    yield store.games
    store.close()


@pytest.mark.parametrize("subject", SUBJECTS)
def test_insert(benchmark, subject, client_of, collection):
    client = client_of(subject)
    dataset.reset(collection, [], indexes=False)
    benchmark.group = "insert"
    created = benchmark(client.create, INSERT_GAME)
    assert {k: v for k, v in created.items() if k != "id"} == INSERT_GAME


@pytest.mark.parametrize("subject", SUBJECTS)
def test_fetch_one(benchmark, subject, client_of, collection):
    client = client_of(subject)
    dataset.reset(collection, FETCH_GAMES, indexes=True)
    benchmark.group = "fetch-one"
    game = benchmark(client.get, FETCH_ID)
    assert game["id"] == FETCH_ID


@pytest.mark.parametrize("subject", SUBJECTS)
def test_fetch_100(benchmark, subject, client_of, collection):
    client = client_of(subject)
    dataset.reset(collection, FETCH_GAMES, indexes=True)
    benchmark.group = "fetch-100"
    games = benchmark(client.list, FETCH_SET, 0)
    assert len(games) == FETCH_SET
