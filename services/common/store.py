"""The one store every service (and the direct baseline) uses: validation and MongoDB access.

Nothing from a request reaches MongoDB before contract.game has checked it,
so ids and values are plain strings, lists and bools — never query operators.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymongo
from bson import ObjectId
from pymongo.errors import ConnectionFailure, ExecutionTimeout, NetworkTimeout, WTimeoutError
from pymongo.write_concern import WriteConcern

from contract.errors import DeadlineExceeded, NotFound, Unavailable
from contract.game import DEFAULT_LIST_LIMIT, check_game, check_id, check_page

# How long a request waits for a lost database before answering UNAVAILABLE,
# or for a slow one before answering DEADLINE_EXCEEDED.
TIMEOUT_MS = int(os.environ.get("MONGODB_TIMEOUT_MS", "5000"))
# CRUD operations in flight at once (the driver's pool keeps its default 100
# connections; the changes feed's cursors use the rest). A request beyond
# them waits its turn in the service (at most QUEUE_TIMEOUT_S) before its
# TIMEOUT_MS starts: under 1,000 clients a burst of requests must
# not spend the database's time budget queueing in the driver's pool (pymongo
# counts the wait for a pooled connection in timeoutMS and reports running
# out as a lost database) or sharing the process's CPU with 1,000 others
# while its reply waits to be read (a gevent service at saturation).
POOL = int(os.environ.get("MONGODB_POOL", "16"))
QUEUE_TIMEOUT_S = float(os.environ.get("MONGODB_QUEUE_TIMEOUT_S", "30"))
# A write is acknowledged once the server has it (w=1) in its journal (j=true:
# MongoDB waits for the journal commit). The embedded SecantusDB accepts j
# without acting on it; it is started with --sync-on-commit, which fsyncs its
# log at every commit (lab/database.py, tests/test_faults.py).
WRITE_CONCERN = WriteConcern(w=1, j=True)
DEFAULT_DB = "protolab"
COLLECTION = "games"


# pymongo's server selection sleeps up to common.MIN_HEARTBEAT_INTERVAL (0.5 s)
# between looks at the topology and notices only then that its time is up: with
# timeoutMS at 600 ms a lost server was reported after 0.64-1.23 s (18 services on
# a database link shaped to 8 kbit/s, tests/test_faults.py). A 50 ms wait keeps
# the answer within the timeout. The same constant spaces the checks a waiting
# selection asks the monitor for: while the database is lost, every 50 ms.
# A private constant (pymongo 4.20): should an upgrade drop it, say so here rather
# than let the slow-database answers quietly grow again (tests/test_faults.py
# checks that server selection still waits on it).
if not hasattr(pymongo.common, "MIN_HEARTBEAT_INTERVAL"):
    raise ImportError("pymongo.common.MIN_HEARTBEAT_INTERVAL is gone: revisit services/common/store.py")
pymongo.common.MIN_HEARTBEAT_INTERVAL = 0.05


def connect(uri: str, timeout_ms: int = TIMEOUT_MS) -> pymongo.MongoClient:
    # timeoutMS bounds a whole operation (server selection, connecting, every
    # read of a reply that trickles in); socketTimeoutMS alone bounds each read.
    return pymongo.MongoClient(
        uri, timeoutMS=timeout_ms, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms,
        socketTimeoutMS=timeout_ms, appname="protolab",
    )


def _public(doc: dict[str, Any]) -> dict[str, Any]:
    game_id = doc.pop("_id")
    return {"id": game_id, **doc}


class Store:
    def __init__(self, uri: str | None = None, db: str | None = None, timeout_ms: int = TIMEOUT_MS):
        self.client = connect(uri or os.environ["MONGODB_URI"], timeout_ms)
        self.games = self.client[db or os.environ.get("MONGODB_DB", DEFAULT_DB)].get_collection(
            COLLECTION, write_concern=WRITE_CONCERN)
        # A thread's semaphore: gevent's under gunicorn's gevent worker (monkey-patched).
        self._turns = threading.BoundedSemaphore(POOL)

    def close(self) -> None:
        self.client.close()

    def create(self, game: Any) -> dict[str, Any]:
        doc = {"_id": str(ObjectId()), **check_game(game)}
        with self._turn(), _database_errors():
            self.games.insert_one(doc)
        return _public(doc)

    def get(self, game_id: Any) -> dict[str, Any]:
        check_id(game_id)
        with self._turn(), _database_errors():
            doc = self.games.find_one({"_id": game_id})
        if doc is None:
            raise NotFound(f"no game with id {game_id!r}")
        return _public(doc)

    def list(self, limit: Any = DEFAULT_LIST_LIMIT, offset: Any = 0) -> list[dict[str, Any]]:
        check_page(limit, offset)
        with self._turn(), _database_errors():
            docs = list(self.games.find({}).sort("_id", 1).skip(offset).limit(limit))
        return [_public(doc) for doc in docs]

    def update(self, game_id: Any, game: Any) -> dict[str, Any]:
        check_id(game_id)
        fields = check_game(game)
        with self._turn(), _database_errors():
            result = self.games.replace_one({"_id": game_id}, fields)
        if result.matched_count == 0:
            raise NotFound(f"no game with id {game_id!r}")
        return {"id": game_id, **fields}

    def delete(self, game_id: Any) -> None:
        check_id(game_id)
        with self._turn(), _database_errors():
            result = self.games.delete_one({"_id": game_id})
        if result.deleted_count == 0:
            raise NotFound(f"no game with id {game_id!r}")

    def health(self) -> None:
        with self._turn(), _database_errors():
            self.client.admin.command("ping")

    @contextmanager
    def _turn(self) -> Iterator[None]:
        """One of the POOL database slots, waited for in the service (not
        counted in the operation's TIMEOUT_MS)."""
        if not self._turns.acquire(timeout=QUEUE_TIMEOUT_S):
            raise DeadlineExceeded(f"no database connection came free within {QUEUE_TIMEOUT_S:g} s "
                                   f"({POOL} operations in flight): the service is overloaded")
        try:
            yield
        finally:
            self._turns.release()


class _database_errors:
    """A database that did not answer in time is the contract's DEADLINE_EXCEEDED;
    one that cannot be reached, UNAVAILABLE."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, NetworkTimeout | ExecutionTimeout | WTimeoutError):
            raise DeadlineExceeded(f"database did not answer within {TIMEOUT_MS} ms: {exc}") from exc
        if isinstance(exc, ConnectionFailure):
            raise Unavailable(f"database unavailable: {exc}") from exc
