"""The lab's socket.io client (clients/socketio/client.py) over TLS 1.3, against the Node.js
service in a lab of this module's own: thousands of calls on one client
without a lost ack (python-engineio's threaded client read and wrote one TLS socket from two
threads at once and lost an ack at call 4,838 of 6,000: docs/notes/2026-12-03-socketio-tls.md),
a feed in order, every call bounded by the client's timeout, and the client's thread ended
by close() and by a failed connect. No timing is asserted."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from clients.socketio.client import LOOP_THREAD, SocketIOClient, ThreadedSocketIOClient
from contract.errors import Unavailable
from lab import dataset, tls
from lab.running import Lab
from lab.stack import running_lab

TLS = "socketio/node_socketio+tls13"
CALLS = 6000  # the latency suite's warm-up of a Node.js service


@pytest.fixture(scope="module")
def sio_lab() -> Iterator[Lab]:
    with running_lab([TLS], change_streams=False) as lab:
        yield lab


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == LOOP_THREAD]


def test_one_client_gets_every_ack_of_thousands_of_calls_over_tls(sio_lab: Lab) -> None:
    """6,000 calls in a row on one client over TLS 1.3, each answered by its own ack, and the
    client still connected (the threaded client lost an ack, then the namespace, at call 4,838
    of 6,000 on 2026-12-03, at call 30 in the reproduction that day; plain text it did not)."""
    client = sio_lab.client(TLS)
    try:
        created = client.create(dataset.games(1)[0])
        answered = 0
        for _ in range(CALLS):
            assert client.get(created["id"])["id"] == created["id"]
            answered += 1
        assert answered == CALLS and client.sio.connected
        assert client.echo("still serving") == "still serving"
    finally:
        client.close()


def test_a_feed_arrives_whole_and_in_order_over_tls(sio_lab: Lab) -> None:
    client = sio_lab.client(TLS)
    try:
        with client.subscribe("synthetic", rate=0, count=500) as stream:
            events = list(stream)
        assert [e.id for e in events[:-1]] == [str(n) for n in range(1, 501)]
        assert events[-1].event == "end" and events[-1].data["sent"] == 500
    finally:
        client.close()


def test_close_ends_the_clients_loop_thread(sio_lab: Lab) -> None:
    before = len(_loop_threads())
    client = sio_lab.client(TLS)
    assert len(_loop_threads()) == before + 1
    client.health()
    client.close()
    client.close()  # a second close does nothing
    assert len(_loop_threads()) == before
    with pytest.raises(Unavailable):
        client.health()


def test_a_refused_connect_says_so_and_leaves_no_thread(sio_lab: Lab) -> None:
    """A client trusting another CA: the contract's Unavailable, and its loop's thread ended."""
    before = len(_loop_threads())
    with pytest.raises(Unavailable) as refused:
        SocketIOClient(sio_lab.endpoints[TLS], timeout=3, ca_file=str(tls.wrong_authority_file()))
    assert refused.value.native == "connect"
    assert len(_loop_threads()) == before


def test_a_server_that_never_answers_times_the_connect_out() -> None:
    """A port that accepts the TCP connection and says nothing: the connect gives up within
    the client's timeout (and the loop's grace), as Unavailable, and leaves no thread."""
    before = len(_loop_threads())
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        with pytest.raises(Unavailable):
            SocketIOClient(f"http://127.0.0.1:{port}/socket.io/", timeout=1.0)
    assert len(_loop_threads()) == before


def test_the_threaded_client_is_for_plain_text_only() -> None:
    """The Locust user's client (python-engineio's threaded one) refuses a TLS endpoint."""
    with pytest.raises(ValueError, match="plain text"):
        ThreadedSocketIOClient("https://127.0.0.1:1/socket.io/")
