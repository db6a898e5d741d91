"""Every discovered implementation, driven through its own protocol's client,
serves the same resource with the same semantics."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import watched

from contract.errors import NotFound
from lab import dataset
from lab.pytest_plugin.fixtures import IMPLEMENTATIONS

pytestmark = pytest.mark.parametrize("impl", IMPLEMENTATIONS)
ROUND_TRIP_CLIENTS = 3


def _fields(game: dict) -> dict:
    return {k: v for k, v in game.items() if k != "id"}


def test_get_returns_the_seeded_game(impl, client_of, seeded):
    client = client_of(impl)
    original = seeded[7]
    game_id = dataset.documents([original])[0]["_id"]
    got = client.get(game_id)
    assert got == {"id": game_id, **original}


def test_create_assigns_a_new_id_and_stores_the_game(impl, client_of, seeded):
    client = client_of(impl)
    created = client.create(seeded[3])
    assert _fields(created) == seeded[3]
    assert created["id"] not in {d["_id"] for d in dataset.documents(seeded)}
    assert client.get(created["id"]) == created
    assert len(client.list(1000, 0)) == len(seeded) + 1


def test_list_pages_in_id_order(impl, client_of, seeded):
    client = client_of(impl)
    expected_ids = sorted(d["_id"] for d in dataset.documents(seeded))
    everything = client.list(1000, 0)
    assert [g["id"] for g in everything] == expected_ids
    page = client.list(10, 25)
    assert page == everything[25:35]
    assert client.list(10, len(seeded)) == []


def test_update_replaces_the_game(impl, client_of, seeded):
    client = client_of(impl)
    game_id = dataset.documents([seeded[0]])[0]["_id"]
    updated = client.update(game_id, seeded[1])
    assert updated == {"id": game_id, **seeded[1]}
    assert client.get(game_id) == updated


def test_delete_removes_only_that_game(impl, client_of, seeded):
    client = client_of(impl)
    game_id = dataset.documents([seeded[2]])[0]["_id"]
    client.delete(game_id)
    with pytest.raises(NotFound):
        client.get(game_id)
    assert len(client.list(1000, 0)) == len(seeded) - 1


def test_every_game_round_trips_losslessly(impl, client_of, lab, seeding):
    """The dataset's games — nulls, empty lists, non-BMP characters, HTML
    entities — go in through the protocol and come back identical. They are
    sent over ROUND_TRIP_CLIENTS connections at once, each its own client
    (the client library's work overlaps the service's on two cores).

    Unless LAB_ROUND_TRIP=all (CI sets it), the 30 games that together hold
    every value class of the dataset (lab.dataset.covering, tested to cover all
    83 classes the 3,424 hold). All 3,424 over 21 implementations take ~3
    minutes of make test natively and ~5 in Docker mode."""
    client = client_of(impl)
    dataset.reset(seeding.store.games, [], indexes=False)
    whole = os.environ.get("LAB_ROUND_TRIP") == "all"
    games = dataset.games() if whole else dataset.covering()
    clients = [client] + [watched.watch(lab.client(impl)) for _ in range(ROUND_TRIP_CLIENTS - 1)]

    def send(k: int) -> dict:
        created_here = {}
        for game in games[k::len(clients)]:
            created = clients[k].create(game)
            assert _fields(created) == game, game["link"]
            created_here[created["id"]] = game
        return created_here
    try:
        with ThreadPoolExecutor(len(clients)) as pool:
            sent = {gid: game for part in pool.map(send, range(len(clients))) for gid, game in part.items()}
    finally:
        for extra in clients[1:]:
            extra.close()
    received = {}
    offset = 0
    while page := client.list(1000, offset):
        received.update((g["id"], _fields(g)) for g in page)
        offset += len(page)
    assert len(received) == len(games) and (len(games) == 3424 or not whole)
    mismatched = [gid for gid, game in sent.items() if received.get(gid) != game]
    assert mismatched == []
