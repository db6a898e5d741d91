"""The largest messages each protocol takes and gives (contract.json limits):
an answer that would exceed max_response_bytes is the contract's
RESOURCE_EXHAUSTED, not a reply some clients cannot read (gRPC clients refuse
more than 4 MiB by default); a WebSocket frame over max_frame_bytes closes the
connection with 1009, one between max_request_bytes and it is refused with an
error reply on an open connection. The services keep serving."""

from __future__ import annotations

import json

import pytest
from expect import expect
from simple_websocket import ConnectionClosed

from clients.ws.client import Connection
from contract.codec import dumps
from contract.errors import RESOURCE_EXHAUSTED
from contract.game import LIMITS, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from lab import dataset
from lab.pytest_plugin.fixtures import IMPLEMENTATIONS, implementations
from lab.registry import discover

PROTOCOL = {impl.name: impl.protocol for impl in discover()}
WS = implementations(where=lambda impl: impl.protocol == "ws")


@pytest.fixture
def large_games(seeding):
    """Games just under the request limit each, enough that one page of them
    is over the response limit."""
    base = dataset.games(1)[0]
    filler = MAX_REQUEST_BYTES - len(dumps(base).encode()) - 1024
    big = {**base, "description": "x" * filler}
    # a quarter over, so that every protocol's encoding of the page is over
    count = int(MAX_RESPONSE_BYTES * 1.25 / len(dumps(big).encode())) + 1
    documents = [{"_id": f"{n:012d}", **big} for n in range(count)]
    seeding.store.games.drop()
    seeding.store.games.insert_many(documents)
    yield count, len(dumps(big).encode())


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_page_over_the_response_limit_is_resource_exhausted(impl, client_of, large_games):
    count, size = large_games
    client = client_of(impl)
    assert count * size > MAX_RESPONSE_BYTES
    expect(PROTOCOL[impl], RESOURCE_EXHAUSTED, client.list, count, 0)
    page = client.list(MAX_RESPONSE_BYTES // size // 2, 0)  # a smaller page is answered
    assert len(page) == MAX_RESPONSE_BYTES // size // 2
    assert len(client.list(count, 0 + count - 3)) == 3


@pytest.mark.parametrize("impl", WS)
def test_ws_frames_over_the_frame_limit_close_with_1009(impl, lab, seeded):
    endpoint = lab.endpoints[impl]
    ws = Connection(endpoint)
    try:
        middle = json.dumps({"request_id": 1, "op": "get", "params": {"id": "730", "pad": "x" * MAX_REQUEST_BYTES}})
        ws.send(middle)
        reply = json.loads(ws.receive(10))
        assert reply["request_id"] == 1 and reply["error"]["code"] == RESOURCE_EXHAUSTED
        ws.send(json.dumps({"request_id": 2, "op": "get", "params": {"id": "730"}}))
        assert json.loads(ws.receive(10))["result"]["id"] == "730"  # the connection stays usable
        ws.send("x" * (LIMITS["max_frame_bytes"] + 1))
        with pytest.raises(ConnectionClosed):
            ws.receive(10)
            ws.receive(10)
        assert ws.close_reason == 1009
    finally:
        try:
            ws.close()
        except ConnectionClosed:
            pass
    again = Connection(endpoint)  # the service still serves
    again.send(json.dumps({"request_id": 3, "op": "get", "params": {"id": "730"}}))
    assert json.loads(again.receive(10))["result"]["id"] == "730"
    again.close()


@pytest.mark.parametrize("impl", WS)
def test_ws_a_client_close_is_answered_with_a_close_frame(impl, lab, seeded):
    """RFC 6455 §5.5.1: a peer that receives a Close answers with a Close before
    the TCP connection ends. 300 connections, three at a time, each closed after
    one reply, must each read the server's Close (not an EOF: a client reports
    1006, abnormal closure). The Python gthread service once lost ~2% of them."""
    from concurrent.futures import ThreadPoolExecutor

    from websocket import ABNF, create_connection

    def one(k: int) -> str | None:
        ws = create_connection(lab.endpoints[impl], timeout=10)
        try:
            ws.send(json.dumps({"request_id": k, "op": "get", "params": {"id": "730"}}))
            assert json.loads(ws.recv())["request_id"] == k
            ws.send_close()
            try:
                opcode, _ = ws.recv_data_frame(True)
            except Exception as exc:  # noqa: BLE001 - the EOF is what is counted
                return f"{type(exc).__name__}: {exc}"
            return None if opcode == ABNF.OPCODE_CLOSE else f"opcode {opcode}"
        finally:
            ws.shutdown()

    with ThreadPoolExecutor(3) as pool:
        missing = [why for why in pool.map(one, range(300)) if why]
    assert missing == [], f"{len(missing)} of 300 closes unanswered: {missing[:3]}"
