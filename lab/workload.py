"""The workload, defined once: every operation an instrument runs — its call
through the client interface (clients.base.GameClient), the database state it
starts from, and its check. The latency suite (benchmarks/), the wire capture
(capture/), the load instrument (load/) and the report read this table.

    op = OPERATIONS["fetch-one"]
    prepare(store, op)          # the collection as the operation starts from it
    call = op.call(client)      # a call without arguments, made again and again
    op.check(call())            # raises AssertionError if the answer is wrong

The games are the dataset's (lab.dataset): the median game is inserted;
fetch-one and update use the fetch set's middle game; fetch-100 lists the
whole fetch set; delete removes fetch-set games in order (a state allows at
most FETCH_SET deletes); echo sends ECHO_PAYLOAD back; broadcast sends it to
every connected client.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def _check_insert(result: Any) -> None:
    assert {k: v for k, v in result.items() if k != "id"} == insert_game(), "the stored game differs"


def _check_fetch_one(result: Any) -> None:
    assert result["id"] == fetch_id(), f"fetched {result.get('id')!r}, not {fetch_id()!r}"


def _check_fetch_100(result: Any) -> None:
    assert len(result) == dataset.FETCH_SET, f"{len(result)} games, not {dataset.FETCH_SET}"


def _check_update(result: Any) -> None:
    assert result["id"] == fetch_id(), f"updated {result.get('id')!r}, not {fetch_id()!r}"


def _check_nothing(result: Any) -> None:
    assert result is None, f"expected no result, got {result!r}"


def _check_echo(result: Any) -> None:
    assert result == ECHO_PAYLOAD, "the echo differs from what was sent"


def _check_broadcast(result: Any) -> None:
    assert isinstance(result, dict) and "delivered" in result, f"not a broadcast reply: {result!r}"


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

    @property
    def seed(self) -> list[dict[str, Any]]:
        """The games the collection holds before the first call."""
        return self.state()

    def nth(self, client: Any, index: int) -> Any:
        """Call number `index` from the prepared state (delete: a distinct game each)."""
        return self.indexed(client, index) if self.indexed else self.call(client)()

    def served_by(self, impl: Any) -> bool:
        return impl.serves(self.contract_op)


def _fetch_state() -> list[dict[str, Any]]:
    return list(fetch_games())


OPERATIONS = {o.name: o for o in (
    Operation("insert", "create", lambda c: lambda: c.create(insert_game()), _check_insert, list, False,
              creates=True, latency=True, capture=True),
    Operation("fetch-one", "get", lambda c: lambda: c.get(fetch_id()), _check_fetch_one, _fetch_state, True,
              latency=True, capture=True),
    Operation("fetch-100", "list", lambda c: lambda: c.list(dataset.FETCH_SET, 0), _check_fetch_100,
              _fetch_state, True, latency=True, capture=True),
    Operation("update", "update", lambda c: lambda: c.update(fetch_id(), update_game()), _check_update,
              _fetch_state, True, capture=True),
    Operation("delete", "delete", _deletes, _check_nothing, _fetch_state, True, capture=True,
              calls_per_state=dataset.FETCH_SET, indexed=_delete_nth),
    # The smallest call every protocol has: the "tiny get" of the Feathers comparison.
    Operation("health", "health", lambda c: c.health, _check_nothing, _fetch_state, True),
    Operation("echo", "echo", lambda c: lambda: c.echo(ECHO_PAYLOAD), _check_echo, _fetch_state, True),
    Operation("broadcast", "broadcast", lambda c: lambda: c.broadcast(ECHO_PAYLOAD), _check_broadcast,
              _fetch_state, True),
)}

LATENCY = tuple(name for name, o in OPERATIONS.items() if o.latency)
CAPTURE = tuple(name for name, o in OPERATIONS.items() if o.capture)


def get(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise ValueError(f"unknown operation {name!r}: expected one of {', '.join(OPERATIONS)}") from None


def prepare(collection: Any, operation: Operation) -> None:
    """The collection as `operation` starts from it: insert into an empty
    collection without secondary indexes; the others against the fetch set
    with indexes (as the core study did)."""
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
