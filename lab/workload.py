"""The workload, defined once: every operation an instrument runs — its call
through the client interface (clients.base.GameClient), the database state it
starts from, and its check. The latency suite (benchmarks/), the wire capture
(capture/), the load instrument (load/), the profiles (profiling/) and the
report read this table.

    op = get("fetch-one")       # or OPERATIONS["fetch-one"]; get also resolves parametric names
    prepare(store, op)          # the collection as the operation starts from it
    call = op.call(client)      # a call without arguments, made again and again
    op.check(call())            # raises AssertionError if the answer is wrong

The games are the dataset's (lab.dataset): the median game is inserted;
fetch-one and update use the fetch set's middle game; fetch-100 lists the
whole fetch set; delete removes fetch-set games in order (a state allows at
most FETCH_SET deletes); echo sends ECHO_PAYLOAD back; broadcast sends it to
every connected client.

Parametric operations (get(name), made on first use): `fetch-<N>` lists N
games, 1 ≤ N ≤ 1,000 (the contract's largest `limit`), from a collection of
the dataset's first max(N, FETCH_SET) games, answered in the order of their
ids; `insert:<size>` inserts, and `fetch-one:<size>` fetches (from the fetch
set with that game added), the game at <size> of the dataset's JSON sizes:
smallest, p10, median, p90 or largest (dataset.SIZES). PAYLOAD names the
payload axis' rows. payload_bytes(op) says how large the games it carries are.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract import games_pb2 as pb
from contract.codec import dumpb
from contract.game import MAX_LIST_LIMIT, appid_of
from contract.grpc_codec import game_to_message
from lab import dataset

# Fernando & Engel's echo test does not give its message size; the lab sends
# this object, 120 bytes of JSON as a payload (the request ~160 bytes).
ECHO_PAYLOAD = {"text": "x" * 109}


@functools.cache
def insert_game() -> dict[str, Any]:
    return dataset.median_game()


@functools.cache
def fetch_games() -> tuple[dict[str, Any], ...]:
    return tuple(dataset.fetch_games())


@functools.cache
def fetch_id() -> str:
    return dataset.fetch_id()


def update_game() -> dict[str, Any]:
    """The fetched game, replaced as it is (the state does not drift)."""
    return fetch_games()[dataset.FETCH_SET // 2]


@functools.cache
def delete_ids() -> tuple[str, ...]:
    return tuple(d["_id"] for d in dataset.documents(list(fetch_games())))


@functools.cache
def sized_game(size: str) -> dict[str, Any]:
    """The game at `size` of the dataset's JSON sizes (dataset.SIZES)."""
    return dataset.sized_game(size)


@functools.cache
def listed(count: int) -> tuple[dict[str, Any], ...]:
    """The collection fetch-<count> lists from: the dataset's first max(count, FETCH_SET) games."""
    return tuple(dataset.fetch_games(max(count, dataset.FETCH_SET)))


@functools.cache
def answered(count: int) -> tuple[dict[str, Any], ...]:
    """fetch-<count>'s answer: the first `count` games of its collection by id, as the API gives them."""
    documents = sorted(dataset.documents(list(listed(count))), key=lambda d: d["_id"])[:count]
    return tuple({"id": d["_id"], **{k: v for k, v in d.items() if k != "_id"}} for d in documents)


def _check_nothing(result: Any) -> None:
    assert result is None, f"expected no result, got {result!r}"


def _check_echo(result: Any) -> None:
    assert result == ECHO_PAYLOAD, "the echo differs from what was sent"


def _check_broadcast(result: Any) -> None:
    assert isinstance(result, dict) and "delivered" in result, f"not a broadcast reply: {result!r}"


def _check_update(result: Any) -> None:
    assert result["id"] == fetch_id(), f"updated {result.get('id')!r}, not {fetch_id()!r}"


def _delete_nth(client: Any, index: int) -> Any:
    return client.delete(delete_ids()[index])


def _deletes(client: Any) -> Callable[[], Any]:
    calls = itertools.count()  # past FETCH_SET the ids are gone: NOT_FOUND
    return lambda: _delete_nth(client, next(calls) % dataset.FETCH_SET)


@dataclass(frozen=True)
class Operation:
    name: str
    contract_op: str                              # the contract's operation (a manifest's `operations`)
    call: Callable[[Any], Callable[[], Any]]      # client -> the call, made again and again
    check: Callable[[Any], None]
    state: Callable[[], list[dict[str, Any]]]     # the collection's games before the first call
    indexes: bool                                 # secondary indexes on it
    creates: bool = False                         # every call adds a document
    latency: bool = False                         # measured by the latency suite (make bench)
    capture: bool = False                         # measured by the wire capture (make capture)
    calls_per_state: int | None = None            # at most this many calls from one prepared state
    indexed: Callable[[Any, int], Any] | None = None  # (client, n) -> the n-th call, where calls differ
    carries: Callable[[], Any] | None = None      # the game(s) it sends or is answered, as the API's JSON

    @property
    def seed(self) -> list[dict[str, Any]]:
        """The games the collection holds before the first call."""
        return self.state()

    @property
    def repeatable(self) -> bool:
        """Its call can be made again and again from one state, which it leaves as it found it."""
        return not self.creates and self.calls_per_state is None

    def nth(self, client: Any, index: int) -> Any:
        """Call number `index` from the prepared state (delete: a distinct game each)."""
        return self.indexed(client, index) if self.indexed else self.call(client)()

    def served_by(self, impl: Any) -> bool:
        return impl.serves(self.contract_op)


def _fetch_state() -> list[dict[str, Any]]:
    return list(fetch_games())


def _inserting(name: str, game: Callable[[], dict[str, Any]], **marks: Any) -> Operation:
    """`game()` inserted into an empty collection without secondary indexes."""
    def call(client: Any) -> Callable[[], Any]:
        sent = game()
        return lambda: client.create(sent)

    def check(result: Any) -> None:
        assert {k: v for k, v in result.items() if k != "id"} == game(), "the stored game differs"
    return Operation(name, "create", call, check, list, False, creates=True, carries=game, **marks)


def _fetching_one(name: str, game: Callable[[], dict[str, Any]], state: Callable[[], list[dict[str, Any]]],
                  **marks: Any) -> Operation:
    """`game()` fetched by its id from `state()`, with indexes."""
    def call(client: Any) -> Callable[[], Any]:
        game_id = appid_of(game())
        return lambda: client.get(game_id)

    def check(result: Any) -> None:
        expected = appid_of(game())
        assert result["id"] == expected, f"fetched {result.get('id')!r}, not {expected!r}"
    return Operation(name, "get", call, check, state, True, carries=lambda: {"id": appid_of(game()), **game()},
                     **marks)


def _fetching(count: int, **marks: Any) -> Operation:
    """`count` games listed from the dataset's first max(count, FETCH_SET), with indexes."""
    def check(result: Any) -> None:
        assert len(result) == count, f"{len(result)} games, not {count}"
        ids = [g["id"] for g in result]
        assert ids == [g["id"] for g in answered(count)], f"not the first {count} games by id: {ids[:5]}…"
    return Operation(f"fetch-{count}", "list", lambda c: lambda: c.list(count, 0), check,
                     lambda: list(listed(count)), True, carries=lambda: list(answered(count)), **marks)


OPERATIONS = {o.name: o for o in (
    _inserting("insert", insert_game, latency=True, capture=True),
    _fetching_one("fetch-one", lambda: fetch_games()[dataset.FETCH_SET // 2], _fetch_state,
                  latency=True, capture=True),
    _fetching(dataset.FETCH_SET, latency=True, capture=True),
    Operation("update", "update", lambda c: lambda: c.update(fetch_id(), update_game()), _check_update,
              _fetch_state, True, capture=True, carries=update_game),
    Operation("delete", "delete", _deletes, _check_nothing, _fetch_state, True, capture=True,
              calls_per_state=dataset.FETCH_SET, indexed=_delete_nth),
    # The smallest call every protocol has: the "tiny get" of the Feathers comparison.
    Operation("health", "health", lambda c: c.health, _check_nothing, _fetch_state, True),
    Operation("echo", "echo", lambda c: lambda: c.echo(ECHO_PAYLOAD), _check_echo, _fetch_state, True,
              carries=lambda: ECHO_PAYLOAD),
    Operation("broadcast", "broadcast", lambda c: lambda: c.broadcast(ECHO_PAYLOAD), _check_broadcast,
              _fetch_state, True, carries=lambda: ECHO_PAYLOAD),
)}

LATENCY = tuple(name for name, o in OPERATIONS.items() if o.latency)
CAPTURE = tuple(name for name, o in OPERATIONS.items() if o.capture)
# The payload axis: how many games a fetch lists, and how large the one game is.
PAYLOAD = (*(f"fetch-{n}" for n in (1, 10, 100, 1000)),
           *(f"fetch-one:{size}" for size in dataset.SIZES), *(f"insert:{size}" for size in dataset.SIZES))
# Every operation named anywhere, in the order the instruments and the report show them.
NAMES = tuple(dict.fromkeys((*OPERATIONS, *PAYLOAD)))

_FETCH_N = re.compile(r"fetch-([1-9][0-9]{0,3})")
_SIZED = re.compile(r"(insert|fetch-one):([a-z0-9]+)")


@functools.cache
def _parametric(name: str) -> Operation:
    if (match := _FETCH_N.fullmatch(name)) and int(match.group(1)) <= MAX_LIST_LIMIT:
        return _fetching(int(match.group(1)))
    if (match := _SIZED.fullmatch(name)) and match.group(2) in dataset.SIZES:
        kind, size = match.groups()
        game = functools.partial(sized_game, size)
        if kind == "insert":
            return _inserting(name, game)
        return _fetching_one(name, game, functools.partial(_with_fetch_set, size))
    raise ValueError(f"unknown operation {name!r}: expected one of {', '.join(OPERATIONS)}, "
                     f"fetch-<N> with N from 1 to {MAX_LIST_LIMIT:,}, or insert:<size> or fetch-one:<size> "
                     f"with <size> one of {', '.join(dataset.SIZES)}")


def _with_fetch_set(size: str) -> list[dict[str, Any]]:
    """The fetch set, and the game at `size` after it unless the set holds it."""
    game = sized_game(size)
    held = {appid_of(g) for g in fetch_games()}
    return [*fetch_games(), *([] if appid_of(game) in held else [game])]


def get(name: str) -> Operation:
    """The operation called `name`: a row of OPERATIONS, or a parametric one (made once)."""
    return OPERATIONS[name] if name in OPERATIONS else _parametric(name)


@functools.cache
def payload_bytes(op: Operation) -> dict[str, int]:
    """How large what `op` carries is (the game it sends, or the games it is
    answered; {} for an operation without one): the number of games, its JSON
    in the lab's codec (as the JSON protocols send it) and, for games, its
    protobuf message (the contract's Game, or GameList for a list) — the payload
    alone, without any protocol's framing."""
    if op.carries is None:
        return {}
    value = op.carries()
    out = {"json_bytes": len(dumpb(value))}
    if op.contract_op in ("create", "get", "list", "update"):
        games = value if isinstance(value, list) else [value]
        messages = [game_to_message({k: v for k, v in g.items() if k != "id"}, g.get("id", "")) for g in games]
        message = pb.GameList(games=messages) if isinstance(value, list) else messages[0]
        out = {"games": len(games), **out, "protobuf_bytes": message.ByteSize()}
    return out


def prepare(collection: Any, operation: Operation) -> None:
    """The collection as `operation` starts from it: the inserts into an empty
    collection without secondary indexes; the others against the fetch set
    with indexes (as the core study did), fetch-<N> over 100 against the first
    N games, fetch-one:<size> with its game added to the fetch set."""
    dataset.reset(collection, operation.seed, indexes=operation.indexes)


def warmup_max_s() -> float:
    """At most this long a subject's warm-up calls (LAB_BENCH_WARMUP_MAX_S, default 45 s):
    the latency suite's limit, which the cross-check's warm-up keeps too."""
    return float(os.environ.get("LAB_BENCH_WARMUP_MAX_S", 45.0))


def untimed_calls(call: Callable[[], Any], n: int, limit_s: float | None = None,
                  after: Callable[[Any], None] | None = None) -> int:
    """n untimed calls (fewer if limit_s runs out first), after(result) after
    each; how many were made. The latency suite's warm-up, and the cross-check's."""
    deadline = None if limit_s is None else time.monotonic() + limit_s
    for done in range(n):
        if deadline is not None and time.monotonic() > deadline:
            return done
        result = call()
        if after is not None:
            after(result)
    return n
