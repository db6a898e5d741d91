"""The push feeds (contract/push.md) for every Python service: parsing a
subscription, the synthetic feed's messages and pacing, the changes feed from
the database's change stream, and the WebSocket side (subscribe, unsubscribe,
echo, broadcast) as a hook the WebSocket app calls.

The SSE app (asyncio) and the WebSocket app (threads) share everything here
but their loops.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from contract.codec import dumps
from contract.errors import CONTRACT, ContractError, InvalidArgument, Unavailable

PUSH: dict[str, Any] = CONTRACT["push"]
FEEDS: tuple[str, ...] = tuple(PUSH["feeds"])
SYNTHETIC_PARAMS: dict[str, dict[str, int]] = PUSH["synthetic_params"]
KEEPALIVE_SECONDS: float = PUSH["keepalive_seconds"]
# Everything of an event after its timestamp, as compact JSON: an event is
# "[" + str(time.time_ns()) + EVENT_TAIL.
EVENT_TAIL = "," + dumps(PUSH["synthetic_event"][1:])[1:]
_DECIMAL = re.compile(r"[0-9]{1,10}")
_RESUME_TOKEN = re.compile(r"[0-9A-Za-z]{1,1024}")
CHANGE_TYPES = {"insert": "created", "replace": "updated", "update": "updated", "delete": "deleted"}
# Code of "The $changeStream stage is only supported on replica sets".
NOT_A_REPLICA_SET = 40573


@dataclass(frozen=True)
class Subscription:
    feed: str
    batch: int = 1
    rate: int = 1000
    count: int = 0
    last_event_id: str | None = None

    @property
    def first(self) -> int:
        """The synthetic feed's first message id of this subscription."""
        return int(self.last_event_id) + 1 if self.last_event_id is not None else 1


def parse_subscription(params: Mapping[str, Any], last_event_id: Any = None, *, strings: bool = False) -> Subscription:
    """A subscription from WebSocket params (`strings=False`: JSON integers) or
    SSE query parameters (`strings=True`: decimal strings); INVALID_ARGUMENT
    for anything push.md does not allow."""
    feed = params.get("feed")
    if feed not in FEEDS:
        raise InvalidArgument(f"unknown feed {feed!r}: expected one of {list(FEEDS)}")
    allowed = {"feed", *SYNTHETIC_PARAMS} if feed == "synthetic" else {"feed"}
    unknown = set(params) - allowed - ({"last_event_id"} if not strings else set())
    if unknown:
        raise InvalidArgument(f"unknown parameter {sorted(unknown)[0]!r} for feed {feed}")
    if last_event_id is None and not strings:
        last_event_id = params.get("last_event_id")
    if last_event_id is not None and type(last_event_id) is not str:
        raise InvalidArgument("last_event_id must be a string")
    values: dict[str, int] = {}
    if feed == "synthetic":
        for name, limits in SYNTHETIC_PARAMS.items():
            value = params.get(name, limits["default"])
            if strings and type(value) is str:
                if not _DECIMAL.fullmatch(value):
                    raise InvalidArgument(f"{name} must be a decimal integer, got {value!r}")
                value = int(value)
            if type(value) is not int or not limits["min"] <= value <= limits["max"]:
                raise InvalidArgument(f"{name} must be an integer in {limits['min']}..{limits['max']}, got {value!r}")
            values[name] = value
        if last_event_id is not None and (not _DECIMAL.fullmatch(last_event_id) or (
                values["count"] and int(last_event_id) > values["count"])):
            raise InvalidArgument(f"Last-Event-ID {last_event_id!r} is not a message id of this feed")
    elif last_event_id is not None and not _RESUME_TOKEN.fullmatch(last_event_id):
        raise InvalidArgument(f"Last-Event-ID {last_event_id!r} is not a resume token of the changes feed")
    return Subscription(feed=feed, last_event_id=last_event_id, **values)


# --- synthetic ------------------------------------------------------------------

def synthetic_message(batch: int) -> str:
    """One message: `batch` events stamped now (ns, real-time clock)."""
    event = "[" + str(time.time_ns()) + EVENT_TAIL
    return "[" + ",".join([event] * batch) + "]"


def synthetic_due(sub: Subscription, start: float, message_id: int) -> float:
    """When (time.monotonic()) message `message_id` is due; the subscription's
    first message is due at `start`."""
    return start if sub.rate == 0 else start + (message_id - sub.first) / sub.rate


def synthetic_ids(sub: Subscription) -> range | Iterator[int]:
    if sub.count:
        return range(sub.first, sub.count + 1)
    return _count_from(sub.first)


def _count_from(first: int) -> Iterator[int]:
    n = first
    while True:
        yield n
        n += 1


# --- changes --------------------------------------------------------------------

def watch_arguments(sub: Subscription) -> dict[str, Any]:
    arguments: dict[str, Any] = {"full_document": "updateLookup", "max_await_time_ms": 1000}
    if sub.last_event_id is not None:
        arguments["resume_after"] = {"_data": sub.last_event_id}
    return arguments


def change_message(change: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(id, message) of one change-stream document; None for a kind of change the
    feed does not carry; raises UNAVAILABLE for one that ends the stream."""
    kind = change.get("operationType")
    if kind not in CHANGE_TYPES:
        raise Unavailable(f"the change stream ended: {kind}")
    game_id = change["documentKey"]["_id"]
    document = change.get("fullDocument")
    game = None
    if CHANGE_TYPES[kind] != "deleted":
        if document is None:  # updated, then deleted before the lookup
            return None
        game = {"id": game_id, **{k: v for k, v in document.items() if k != "_id"}}
    return change["_id"]["_data"], {"type": CHANGE_TYPES[kind], "id": game_id, "game": game}


@contextmanager
def database_errors(resuming: bool) -> Iterator[None]:
    """A change stream's failures in the contract's terms."""
    try:
        yield
    except OperationFailure as exc:
        if exc.code == NOT_A_REPLICA_SET:
            raise Unavailable("the database cannot open a change stream (not a replica set)") from None
        if resuming:
            raise InvalidArgument(f"cannot resume the changes feed from that Last-Event-ID: {exc}") from None
        raise Unavailable(f"change stream failed: {exc}") from None
    except ConnectionFailure as exc:
        raise Unavailable(f"database unavailable: {exc}") from None
    except PyMongoError as exc:
        raise Unavailable(f"change stream failed: {exc}") from None


# --- WebSocket ------------------------------------------------------------------

class Connection:
    """One WebSocket connection: its sends serialized (replies, pushes and
    broadcasts come from several threads) and its subscriptions."""

    def __init__(self, send: Callable[[str], None]):
        self._send = send
        self._lock = threading.Lock()
        self.subscriptions: dict[str, threading.Event] = {}
        self.after_reply: list[threading.Thread] = []

    def send(self, text: str) -> None:
        with self._lock:
            self._send(text)

    def reply(self, text: str) -> None:
        """Send a reply; a subscription it opened starts pushing only after it."""
        self.send(text)
        while self.after_reply:
            self.after_reply.pop().start()


class WebSocketPush:
    """subscribe, unsubscribe, echo and broadcast for a threaded WebSocket
    server (ws-protocol.md). The app calls connect/disconnect around a
    connection's life and looks its extra operations up in `operations`."""

    OPTIONAL = frozenset({*SYNTHETIC_PARAMS, "last_event_id"})

    def __init__(self, collection: Callable[[], Any]):
        self.collection = collection  # the store's games collection, when a changes feed opens
        self.connections: set[Connection] = set()
        self.lock = threading.Lock()

    def connect(self, send: Callable[[str], None]) -> Connection:
        conn = Connection(send)
        with self.lock:
            self.connections.add(conn)
        return conn

    def disconnect(self, conn: Connection) -> None:
        with self.lock:
            self.connections.discard(conn)
        for stop in conn.subscriptions.values():
            stop.set()

    def operations(self, conn: Connection) -> dict[str, tuple[tuple[str, ...], Callable[[dict], Any]]]:
        return {
            "echo": (("payload",), lambda p: p["payload"]),
            "broadcast": (("payload",), lambda p: self.broadcast(conn, p["payload"])),
            "subscribe": (("feed", *SYNTHETIC_PARAMS, "last_event_id"), lambda p: self.subscribe(conn, p)),
            "unsubscribe": (("feed",), lambda p: self.unsubscribe(conn, p["feed"])),
        }

    def broadcast(self, sender: Connection, payload: Any) -> dict[str, int]:
        message = dumps({"event": "broadcast", "data": payload})
        with self.lock:
            receivers = [c for c in self.connections if c is not sender]
        delivered = 0
        for conn in receivers:
            try:
                conn.send(message)
                delivered += 1
            except Exception:  # closed meanwhile: skipped, not counted
                continue
        return {"delivered": delivered}

    def subscribe(self, conn: Connection, params: dict[str, Any]) -> dict[str, str]:
        sub = parse_subscription(params)
        if sub.feed in conn.subscriptions:
            raise InvalidArgument(f"already subscribed to {sub.feed}")
        stop = threading.Event()
        stream = None
        if sub.feed == "changes":  # opened before the reply: a change after it is delivered
            with database_errors(sub.last_event_id is not None):
                stream = self.collection().watch(**watch_arguments(sub))
        conn.subscriptions[sub.feed] = stop
        conn.after_reply.append(threading.Thread(target=self._run, args=(conn, sub, stop, stream),
                                                 daemon=True, name=f"push-{sub.feed}"))
        return {"feed": sub.feed}

    def unsubscribe(self, conn: Connection, feed: Any) -> None:
        stop = conn.subscriptions.pop(feed, None) if type(feed) is str else None
        if stop is None:
            raise InvalidArgument(f"not subscribed to {feed!r}")
        with conn._lock:  # no message of the feed after the reply
            stop.set()

    def _run(self, conn: Connection, sub: Subscription, stop: threading.Event, stream: Any) -> None:
        def push(text: str) -> None:
            with conn._lock:
                if stop.is_set():
                    raise _Stopped
                conn._send(text)
        try:
            if sub.feed == "synthetic":
                if self._synthetic(sub, stop, push):
                    self._finish(conn, sub, stop, {"event": "end", "feed": sub.feed,
                                                   "data": {"sent": sub.count - sub.first + 1}})
            else:
                self._changes(stream, stop, push)
        except _Stopped:
            return
        except ContractError as exc:
            self._finish(conn, sub, stop, {"event": "error", "feed": sub.feed,
                                           "data": {"code": exc.code, "message": exc.message}})
        except Exception:  # the connection went away
            stop.set()
        finally:
            if stream is not None:
                stream.close()

    @staticmethod
    def _finish(conn: Connection, sub: Subscription, stop: threading.Event, message: dict[str, Any]) -> None:
        """The feed's last message (end or error), sent once the subscription
        is gone: a client that subscribes again on reading it opens a new one
        (it used to be able to find the old one still there: "already
        subscribed"). Under the connection's lock, so that no reply to that
        subscribe goes out before it; not after an unsubscribe has stopped it."""
        with conn._lock:
            if stop.is_set():
                return
            if conn.subscriptions.get(sub.feed) is stop:
                del conn.subscriptions[sub.feed]
            stop.set()
            try:
                conn._send(dumps(message))
            except Exception:  # the connection went away
                pass

    def _synthetic(self, sub: Subscription, stop: threading.Event, push: Callable[[str], None]) -> bool:
        """Push the feed's messages; True when it reached its count."""
        start = time.monotonic()
        for message_id in synthetic_ids(sub):
            delay = synthetic_due(sub, start, message_id) - time.monotonic()
            if delay > 0:
                if stop.wait(delay):
                    return False
            elif message_id > sub.first:  # behind or unpaced: let the other connections run (gevent: a yield)
                time.sleep(0)
            push('{"event":"synthetic","id":"' + str(message_id) + '","data":' + synthetic_message(sub.batch) + "}")
        return True

    def _changes(self, stream: Any, stop: threading.Event, push: Callable[[str], None]) -> None:
        while not stop.is_set():
            with database_errors(False):
                change = stream.try_next()
            if change is None:
                continue
            found = change_message(change)
            if found is not None:
                event_id, message = found
                push(dumps({"event": "changes", "id": event_id, "data": message}))


class _Stopped(Exception):
    pass
