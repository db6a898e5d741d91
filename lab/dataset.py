"""The Steam games dataset and the database states the benchmarks start from."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from typing import Any

from pymongo import IndexModel
from pymongo.collection import Collection

from contract.codec import dumpb
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
    """Drop the collection and load `selection`, with or without secondary indexes.
    The indexes come first, in one command, on the empty collection: 17 ms for
    100 games, against 27 ms with one command per index after the games (the
    tests' `seeded` fixture does this before hundreds of tests)."""
    collection.drop()
    if indexes:
        collection.create_indexes([IndexModel(field) for field in SECONDARY_INDEXES])
    if selection:
        collection.insert_many(documents(selection), ordered=True)


# The games every measurement uses, so latency and wire bytes describe the same work.
FETCH_SET = 100  # the fetch benchmarks' collection: the dataset's first 100 games
# A single game chosen by its JSON size: the size's quantile of the dataset.
SIZES = {"smallest": 0.0, "p10": 0.1, "median": 0.5, "p90": 0.9, "largest": 1.0}


def json_size(game: dict[str, Any]) -> int:
    """The game's JSON size in bytes: the lab's codec (compact separators, UTF-8),
    as the JSON-speaking protocols send it."""
    return len(dumpb(game))


@cache
def _by_size() -> tuple[int, ...]:
    """The dataset's games (file positions) from the smallest JSON to the largest;
    equal sizes in the order of their links."""
    everything = games()
    return tuple(sorted(range(len(everything)), key=lambda i: (json_size(everything[i]), everything[i]["link"])))


def sized_game(size: str) -> dict[str, Any]:
    """The game at `size` (a key of SIZES) of the dataset's JSON sizes, as a fresh
    dict: the same game on every call."""
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}: expected one of {', '.join(SIZES)}")
    order = _by_size()
    return json.loads(_games()[order[min(int(SIZES[size] * len(order)), len(order) - 1)]])


def median_game() -> dict[str, Any]:
    """The game whose JSON size is the dataset's median: typical, not extreme
    (the game every benchmark inserts)."""
    return sized_game("median")


def fetch_games(count: int = FETCH_SET) -> list[dict[str, Any]]:
    """The collection the fetch benchmarks run against: the dataset's first
    `count` games (FETCH_SET unless a fetch lists more)."""
    return games(count)


def fetch_id() -> str:
    """The id of the game every fetch-one benchmark fetches (the middle of the set)."""
    return documents([fetch_games()[FETCH_SET // 2]])[0]["_id"]


def _value_classes(path: str, value: Any) -> set[str]:
    """What kind of value this is, as far as a protocol's encoding could care:
    null, each bool, empty, the characters it holds (non-ASCII, beyond the
    Basic Multilingual Plane, control characters, markup and escapes)."""
    if value is None or isinstance(value, bool):
        return {f"{path}={value!r}"}
    if isinstance(value, list):
        found = {f"{path}:empty" if not value else f"{path}:items"}
        for item in value:
            found |= _value_classes(f"{path}[]", item)
        return found
    if isinstance(value, dict):
        found = set()
        for key, item in value.items():
            found |= _value_classes(f"{path}.{key}", item)
        return found
    found = {f"{path}:empty" if value == "" else f"{path}:text"}
    for name, pattern in _CHARACTER_CLASSES.items():
        if pattern.search(value):
            found.add(f"{path}:{name}")
    if "&" in value and ";" in value:
        found.add(f"{path}:entity")
    if value != value.strip():
        found.add(f"{path}:edge-space")
    return found


_CHARACTER_CLASSES = {  # one regular expression each (a Python test per character took 1.7 s of _covering)
    "non-ascii": re.compile(r"[^\x00-\x7f]"),
    "non-bmp": re.compile(r"[\U00010000-\U0010ffff]"),
    "control": re.compile(r"[\x00-\x1f\x7f-\x9f]"),
    "markup": re.compile(r"[<>&\"'\\]"),
}


def covering() -> list[dict[str, Any]]:
    """See _covering: fresh dicts of those games, in file order."""
    everything = games()
    return [everything[i] for i in _covering()]


@cache
def _covering() -> tuple[int, ...]:
    """The fewest games (greedy set cover, in file order on ties) that together
    hold every value class the 3,424 hold (_value_classes, per field), plus the
    longest value of every field and the largest game: what a round trip must
    see to find an encoding's loss, at a few per cent of the whole dataset."""
    everything = games()
    classes = [set().union(*(_value_classes(key, value) for key, value in game.items())) for game in everything]
    chosen = {max(range(len(everything)), key=lambda i: len(json.dumps(everything[i])))}
    for key in everything[0]:
        chosen.add(max(range(len(everything)), key=lambda i: len(json.dumps(everything[i].get(key)))))
    missing = set().union(*classes) - set().union(*(classes[i] for i in chosen))
    while missing:
        best = max(range(len(everything)), key=lambda i: (len(classes[i] & missing), -i))
        chosen.add(best)
        missing -= classes[best]
    return tuple(sorted(chosen))
