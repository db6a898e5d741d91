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
    games = dataset.games()[:SEEDED]
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
