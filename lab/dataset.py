"""The Steam games dataset and the database states the benchmarks start from."""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any

from pymongo.collection import Collection

from contract.game import appid_of
from lab.settings import ROOT

DATASET = ROOT / "data" / "steam" / "games.jsonl.gz"
# The secondary indexes of the fetch benchmarks ("indexing turned on").
SECONDARY_INDEXES = ("name", "genre", "developer")


@cache
def _games() -> tuple[str, ...]:
    with gzip.open(DATASET, "rt", encoding="utf-8") as lines:
        return tuple(line for line in lines if line.strip())


def games(count: int | None = None) -> list[dict[str, Any]]:
    """All 3,424 games (or the first `count`), as fresh dicts in file order.
    Parsing all of them takes ~0.2 s: a caller wanting a few asks for a few."""
    return [json.loads(line) for line in _games()[:count]]


def documents(selection: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seeded games keep their Steam appid as id."""
    return [{"_id": appid_of(game), **game} for game in selection]


def reset(collection: Collection, selection: list[dict[str, Any]], *, indexes: bool) -> None:
    """Drop the collection and load `selection`, with or without secondary indexes."""
    collection.drop()
    if selection:
        collection.insert_many(documents(selection), ordered=True)
    if indexes:
        for field in SECONDARY_INDEXES:
            collection.create_index(field)


# The games every measurement uses, so latency and wire bytes describe the same work.
FETCH_SET = 100  # the fetch benchmarks' collection: the dataset's first 100 games


def median_game() -> dict[str, Any]:
    """The game whose JSON size is the dataset's median: typical, not extreme
    (the game every benchmark inserts)."""
    by_size = sorted(games(), key=lambda g: (len(str(g)), g["link"]))
    return by_size[len(by_size) // 2]


def fetch_games() -> list[dict[str, Any]]:
    """The collection the fetch benchmarks run against."""
    return games(FETCH_SET)


def fetch_id() -> str:
    """The id of the game every fetch-one benchmark fetches (the middle of the set)."""
    return documents([fetch_games()[FETCH_SET // 2]])[0]["_id"]
