"""The WebSocket client's connection (clients/ws/client.py, Connection): connect and
handshake bounded by a timeout of the connection's own, the process's default
socket timeout never touched, and an idle connection kept open."""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from clients.ws.client import Connection, WebSocketClient

SERVICE = "ws/go_coder"  # any WebSocket service: the client is what is tested


def test_clients_opened_side_by_side_leave_the_process_default_timeout_as_it_was(lab):
    """The lab's health checks open clients in threads side by side. Each once set
    the process-wide default around its connect and restored what it had read,
    which another thread had just set: the default stayed at 10 s (one lab start
    in three), and every socket opened later without a timeout of its own, as a
    bare simple-websocket Client's, dropped its connection after 10 s idle."""
    before = socket.getdefaulttimeout()
    endpoint = lab.endpoints[SERVICE]
    for _ in range(5):
        with ThreadPoolExecutor(16) as pool:
            clients = list(pool.map(lambda _: WebSocketClient(endpoint, timeout=7.5), range(16)))
        try:
            assert socket.getdefaulttimeout() == before
            for client in clients:
                client.health()
                assert client.ws.sock.gettimeout() is None  # the reader thread blocks; receive() bounds a call
        finally:
            for client in clients:
                client.close()


def test_a_connection_idle_longer_than_its_timeout_stays_open(lab):
    ws = Connection(lab.endpoints[SERVICE], timeout=0.2)
    try:
        time.sleep(1.0)
        assert ws.connected
        ws.send('{"request_id": 1, "op": "health", "params": {}}')
        assert json.loads(ws.receive(timeout=10)) == {"request_id": 1, "result": None}
    finally:
        ws.close()


def test_a_server_that_never_answers_the_handshake_times_the_connect_out():
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    try:
        with pytest.raises(TimeoutError):
            Connection(f"ws://127.0.0.1:{listener.getsockname()[1]}/ws", timeout=0.5)
    finally:
        thread.join(5)
        for sock in accepted:
            sock.close()
        listener.close()


def test_only_ws_urls():
    with pytest.raises(ValueError, match=r"not a ws:// or wss:// URL"):
        Connection("http://127.0.0.1:1/ws")
