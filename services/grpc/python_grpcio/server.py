"""gRPC: a grpcio server with the same thread budget as the HTTP services.

Requests are parsed here rather than by grpcio, so that a body that is not a
valid message, or that carries unknown or mistyped fields, is answered with
INVALID_ARGUMENT (grpcio itself would answer INTERNAL). A request over 64 KiB
is refused by grpcio with RESOURCE_EXHAUSTED.

Subscribe serves the push feeds (contract/push.md, "Over gRPC") as a server
stream. grpcio's synchronous server holds a pool thread for the whole life of
a stream, so the pool has PUSH_STREAMS threads beside the LAB_THREADS that
unary calls use (a semaphore keeps those to LAB_THREADS, as before): a
subscription beyond PUSH_STREAMS open at once is RESOURCE_EXHAUSTED.

The server also offers server reflection (grpcurl and other tools list and
call it without the .proto) and grpc.health.v1 (SERVING while the process
serves; the database's state is the Games service's own Health call).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from contract import games_pb2 as pb
from contract.errors import ContractError, InvalidArgument
from contract.game import DEFAULT_LIST_LIMIT, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from contract.grpc_codec import game_to_message, message_to_game, unknown_field_numbers
from services.common import tls
from services.common.feeds import (
    PUSH,
    SYNTHETIC_PARAMS,
    Subscription,
    change_message,
    database_errors,
    parse_subscription,
    synthetic_due,
    synthetic_ids,
    watch_arguments,
)
from services.common.store import Store

SERVICE = "protolab.games.v1.Games"
# Subscriptions open at once (a pool thread each): Timeplus's scenario holds 60.
PUSH_STREAMS = 128
# Fields 1..11 of the synthetic event (contract.json push.synthetic_event), as SyntheticEvent's fields.
EVENT_TAIL = {f"field_{i}": value for i, value in enumerate(PUSH["synthetic_event"][1:], 1)}


def _parse(message_type: type, data: bytes) -> Any:
    try:
        message = message_type.FromString(data)
    except DecodeError as exc:
        raise InvalidArgument(f"malformed {message_type.__name__} message: {exc}") from None
    unknown = unknown_field_numbers(message)
    if unknown:
        raise InvalidArgument(
            f"unknown or mistyped field number {unknown[0]} in {message_type.__name__}")
    return message


def _rpc(request_type: type, run: Callable[[Any], Any], slots: threading.Semaphore) -> grpc.RpcMethodHandler:
    def behaviour(data: bytes, context: grpc.ServicerContext) -> Any:
        with slots:  # LAB_THREADS calls at once; the rest wait, as in a pool of that size
            try:
                return run(_parse(request_type, data))
            except ContractError as exc:
                context.abort(getattr(grpc.StatusCode, exc.code), exc.message)
    return grpc.unary_unary_rpc_method_handler(
        behaviour, request_deserializer=None, response_serializer=lambda m: m.SerializeToString())


def _game(document: dict[str, Any]) -> pb.Game:
    return game_to_message(document, document["id"])


def _subscription(m: pb.SubscribeRequest) -> Subscription:
    """The request as push.md's subscription: the parameters it carries (absent: the defaults)."""
    params: dict[str, Any] = {"feed": m.feed}
    params.update({name: getattr(m, name) for name in SYNTHETIC_PARAMS if m.HasField(name)})
    return parse_subscription(params, m.last_event_id if m.HasField("last_event_id") else None)


def _synthetic(sub: Subscription, stop: threading.Event) -> Iterator[pb.PushMessage]:
    """The synthetic feed's messages, paced as push.md says; stops when `stop` is set."""
    start = time.monotonic()
    for message_id in synthetic_ids(sub):
        delay = synthetic_due(sub, start, message_id) - time.monotonic()
        if delay > 0 and stop.wait(delay):
            return
        if stop.is_set():
            return
        # stamped here; grpcio serializes the message as soon as it is yielded
        event = pb.SyntheticEvent(sent_ns=time.time_ns(), **EVENT_TAIL)
        yield pb.PushMessage(id=str(message_id), events=[event] * sub.batch)


def _changes(stream: Any, stop: threading.Event) -> Iterator[pb.PushMessage]:
    while not stop.is_set():
        with database_errors(False):
            change = stream.try_next()
        if change is None:
            continue
        found = change_message(change)
        if found is not None:
            token, message = found
            game = message["game"]
            yield pb.PushMessage(id=token, change=pb.Change(
                type=message["type"], id=message["id"], game=None if game is None else _game(game)))


def _subscribe(store: Store, streams: threading.Semaphore) -> grpc.RpcMethodHandler:
    def behaviour(data: bytes, context: grpc.ServicerContext) -> Iterator[pb.PushMessage]:
        try:
            sub = _subscription(_parse(pb.SubscribeRequest, data))
        except ContractError as exc:
            context.abort(getattr(grpc.StatusCode, exc.code), exc.message)
        if not streams.acquire(blocking=False):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"more than {PUSH_STREAMS} subscriptions open")
        stop = threading.Event()

        def ended() -> None:  # the call ended: cancelled, past its deadline, or done
            stop.set()
            streams.release()
        if not context.add_callback(ended):  # it ended already
            ended()
            return
        stream = None
        try:
            if sub.feed == "changes":  # opened before the headers: a change after them is delivered
                with database_errors(sub.last_event_id is not None):
                    stream = store.games.watch(**watch_arguments(sub))
            context.send_initial_metadata((("subscribed", sub.feed),))
            yield from _synthetic(sub, stop) if stream is None else _changes(stream, stop)
            if sub.feed == "synthetic" and not stop.is_set():
                context.set_trailing_metadata((("sent", str(sub.count - sub.first + 1)),))
        except ContractError as exc:
            context.abort(getattr(grpc.StatusCode, exc.code), exc.message)
        finally:
            if stream is not None:
                stream.close()
    return grpc.unary_stream_rpc_method_handler(
        behaviour, request_deserializer=None, response_serializer=lambda m: m.SerializeToString())


def handlers(store: Store, slots: threading.Semaphore) -> grpc.GenericRpcHandler:
    def create(m: pb.Game) -> pb.Game:
        if m.id:
            raise InvalidArgument("id must be empty in CreateGame: the server assigns it")
        return _game(store.create(message_to_game(m)))

    def update(m: pb.Game) -> pb.Game:
        return _game(store.update(m.id, message_to_game(m)))

    def delete(m: pb.GameId) -> pb.Empty:
        store.delete(m.id)
        return pb.Empty()

    def health(m: pb.Empty) -> pb.Empty:
        store.health()
        return pb.Empty()

    return grpc.method_handlers_generic_handler(SERVICE, {
        "CreateGame": _rpc(pb.Game, create, slots),
        "GetGame": _rpc(pb.GameId, lambda m: _game(store.get(m.id)), slots),
        "ListGames": _rpc(pb.ListGamesRequest, lambda m: pb.GameList(games=[
            _game(d) for d in store.list(m.limit or DEFAULT_LIST_LIMIT, m.offset)]), slots),
        "UpdateGame": _rpc(pb.Game, update, slots),
        "DeleteGame": _rpc(pb.GameId, delete, slots),
        "Health": _rpc(pb.Empty, health, slots),
        "Subscribe": _subscribe(store, threading.Semaphore(PUSH_STREAMS)),
    })


def secure_credentials() -> grpc.ServerCredentials:
    """The lab's certificate and key (services/common/tls.py) as grpcio's credentials. grpcio's
    TLS is its core's (BoringSSL), which takes no version from Python: it negotiates TLS 1.3
    with a client that offers it and would accept 1.2, so the manifest declares tls13 alone."""
    cert, key = tls.files()
    with open(cert, "rb") as chain, open(key, "rb") as private:
        return grpc.ssl_server_credentials([(private.read(), chain.read())])


def compression() -> grpc.Compression | None:
    """LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`): every reply in gzip
    (grpc-encoding: gzip) to a client that accepts it (grpc-accept-encoding, which
    grpcio's clients send by default); without it, replies go uncompressed. A gzip
    request is decoded either way (grpc core's own)."""
    value = os.environ.get("LAB_COMPRESSION", "identity") or "identity"
    if value not in ("identity", "gzip"):
        sys.exit(f"LAB_COMPRESSION={value!r}: expected identity or gzip")
    return grpc.Compression.Gzip if value == "gzip" else None


def serve() -> None:
    threads = int(os.environ.get("LAB_THREADS", "4"))
    address = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"
    store = Store()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads + PUSH_STREAMS),
        handlers=[handlers(store, threading.Semaphore(threads))],
        # grpcio answers RESOURCE_EXHAUSTED itself for a request over 64 KiB,
        # or an answer over 4 MiB (a page of large games: ask for fewer).
        options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
                 ("grpc.max_send_message_length", MAX_RESPONSE_BYTES)],
        compression=compression(),
    )
    health_servicer = health.HealthServicer()
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = (server.add_insecure_port(address) if tls.version() is None
            else server.add_secure_port(address, secure_credentials()))
    if port == 0:
        sys.exit(f"cannot listen on {address}")
    server.start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    health_servicer.enter_graceful_shutdown()
    server.stop(grace=2).wait(5)
    store.close()


if __name__ == "__main__":
    serve()
