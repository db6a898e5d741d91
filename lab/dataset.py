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


def games() -> list[dict[str, Any]]:
    """All 3,424 games, as fresh dicts in file order."""
    return [json.loads(line) for line in _games()]


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
