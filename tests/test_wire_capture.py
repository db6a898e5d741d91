"""The wire capture counts the real services' bytes right: checked against the
kernel's own per-socket counters (TCP_INFO: bytes acked/received, segments
out/in, read on the client's socket, independent of tshark), against the
messages the clients sent and received, and against RFC 6455 / HTTP/2 / gRPC
framing arithmetic.

Needs tshark and the right to capture on lo; skipped with the reason otherwise.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from capture.dissect import H2_DATA, H2_FRAME_HEADER, H2_HEADERS, dissect
from capture.tshark import (
    SETUP,
    Capture,
    CaptureError,
    between,
    distinct_payload,
    ensure_tshark,
    first_copies,
    streams,
    tally,
)
from capture.wire import app_payload, connection_phases, service_port
from capture.workload import wait_settled
from clients.grpc import GRPC_PREFIX
from contract import games_pb2 as pb
from contract.codec import dumpb, dumps
from lab import dataset, workload
from lab.registry import discover, missing_line
from lab.stack import Lab

N = 5
CAPTURE_RIGHTS = "run as root, or let dumpcap capture: setcap cap_net_raw,cap_net_admin+eip $(command -v dumpcap)"


def skip_unless_capturing() -> None:
    """Skip, saying why, without tshark or the right to capture on lo."""
    try:
        ensure_tshark()
    except CaptureError as exc:
        print(f"skipping: {exc}")
        pytest.skip(f"tshark unavailable: {exc}")
    probe = subprocess.run(["dumpcap", "-L", "-i", "lo"], check=False, capture_output=True,
                           text=True, timeout=30)
    if probe.returncode:
        why = f"cannot capture on lo ({probe.stderr.strip()}): {CAPTURE_RIGHTS}"
        print(f"skipping: {why}")
        pytest.skip(why)


@pytest.fixture(scope="module", autouse=True)
def tshark_usable() -> None:
    skip_unless_capturing()


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """The kernel's counters for one TCP socket (struct tcp_info, linux/tcp.h)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 144)
    acked, received, segs_out, segs_in = struct.unpack_from("<QQII", raw, 120)
    return {"bytes_acked": acked, "bytes_received": received, "segs_out": segs_out,
            "segs_in": segs_in}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


def name_of(lab: Lab, protocol: str) -> str:
    for impl in lab.implementations:
        if impl.protocol == protocol:
            return impl.name
    # Its implementations were left out: their toolchain is not installed.
    pytest.skip(f"no {protocol} implementation in the lab: "
                + "; ".join(missing_line(i) for i in discover() if i.protocol == protocol and i.missing()))


def http_socket(client: Any) -> socket.socket:
    """The one kept-alive socket of a requests-based client."""
    pools = client.session.get_adapter("http://").poolmanager.pools
    (pool,) = [pools[k] for k in pools.keys()]
    (conn,) = [c for c in pool.pool.queue if c is not None]
    return conn.sock


def capture_and_dissect(port: int, dissector: str,
                        body: Callable[[], Any]) -> tuple[Any, Any, Any]:
    """Run body() under a capture of `port`; packets and tshark's dissection of them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.pcapng"
        with Capture([port], path=path) as cap:
            result = body()
        layers = dissect(path, {port: dissector})
    return cap.packets, layers, result


def test_rest_insert_kept_alive_counts_equal_kernel_counters(lab: Lab, seeding: Any) -> None:
    name = name_of(lab, "rest")
    port = service_port(lab.endpoints[name])
    dataset.reset(seeding.store.games, [], indexes=False)
    client = lab.client(name)
    try:
        def body() -> dict[str, Any]:
            created = [client.create(workload.insert_game())]  # opens the connection, not timed
            sock = http_socket(client)
            info0, t0 = tcp_info(sock), time.time()
            created += [client.create(workload.insert_game()) for _ in range(N)]
            t1, info1 = time.time(), tcp_info(sock)
            return {"created": created, "t0": t0, "t1": t1, "kernel": delta(info0, info1)}
        packets, layers, r = capture_and_dissect(port, "http", body)
    finally:
        client.close()
    window = between(packets, r["t0"], r["t1"])
    split = tally(window, port)
    kernel = r["kernel"]
    print(f"\nREST {N} inserts, kept-alive: tshark {split}; kernel {kernel}")
    # A kept-alive request: one connection, no handshake.
    assert len({p.stream for p in window}) == 1
    assert not any(p.syn for p in window) and not any(p.kind == SETUP for p in window)
    # TCP payload per direction = what the kernel says the client's socket sent and got,
    # each byte of the stream once: a segment the sender sent again (on a loaded
    # machine a tail-loss probe fires on loopback too: in CI on 2026-11-26 one
    # 1,410-byte reply segment came twice) is on the wire twice, received once.
    assert distinct_payload(window, port) == (kernel["bytes_acked"], kernel["bytes_received"])
    assert split.to_server.frames == kernel["segs_out"]
    assert split.to_client.frames == kernel["segs_in"]
    # The body: exactly the JSON the client encoded, and the JSON it got back.
    up, down = app_payload(window, layers, port, "rest")
    assert up == N * len(dumpb(workload.insert_game()))
    assert down == sum(len(dumpb(g)) for g in r["created"][1:])
    # HTTP headers are the rest: the same size every time (same path, same length).
    assert distinct_payload(window, port)[0] % N == 0  # each byte once (in CI a 1,378-byte segment came twice)


def test_websocket_message_is_payload_plus_frame_header(lab: Lab, seeding: Any) -> None:
    name = name_of(lab, "ws")
    port = service_port(lab.endpoints[name])
    dataset.reset(seeding.store.games, dataset.fetch_games(), indexes=True)
    sent: list[int] = []
    received: list[int] = []

    def ws_frame(n: int, masked: bool) -> int:  # RFC 6455: 2 + extended length + mask key
        return 2 + (0 if n <= 125 else 2 if n <= 65535 else 8) + (4 if masked else 0) + n

    def body() -> dict[str, Any]:
        client = lab.client(name)
        ws = client.ws
        original_send, original_receive = ws.send, ws.receive

        def send(data: str | bytes) -> None:
            sent.append(len(data.encode() if isinstance(data, str) else data))
            original_send(data)

        def receive(timeout: float | None = None) -> Any:
            reply = original_receive(timeout)
            received.append(len(reply.encode() if isinstance(reply, str) else reply))
            return reply
        ws.send, ws.receive = send, receive
        try:
            info0, t0 = tcp_info(ws.sock), time.time()
            for _ in range(N):
                client.get(workload.fetch_id())
            client.list(dataset.FETCH_SET, 0)  # > 65,535 bytes: the 64-bit length form
            t1, info1 = time.time(), tcp_info(ws.sock)
        finally:
            client.close()
            wait_settled(port)
        return {"t0": t0, "t1": t1, "kernel": delta(info0, info1)}
    packets, layers, r = capture_and_dissect(port, "http", body)
    window = between(packets, r["t0"], r["t1"])
    split = tally(window, port)
    print(f"\nWebSocket: sent {sent}, received {received}; tshark {split}; kernel {r['kernel']}")
    # The requests are exactly the client's JSON (request ids 1..N, then N+1).
    assert sent[:N] == [len(dumps({"request_id": i, "op": "get", "params": {"id": workload.fetch_id()}})
                            .encode()) for i in range(1, N + 1)]
    assert max(received) > 65535
    up, down = distinct_payload(window, port)  # each byte once (a resent segment is on the wire twice)
    assert up == sum(ws_frame(n, True) for n in sent)
    assert down == sum(ws_frame(n, False) for n in received)
    assert app_payload(window, layers, port, "ws") == (sum(sent), sum(received))
    assert (up, down) == (r["kernel"]["bytes_acked"], r["kernel"]["bytes_received"])
    assert not any(p.syn for p in window)
    # The whole connection: upgrade, messages, close frames, FIN/ACK, by phase (each segment once: one
    # sent again is on the wire twice but dissected once, so its bytes would land in no phase of their own).
    once = first_copies(packets)
    (stream,) = streams(once).values()
    phases = connection_phases(stream, layers, port, "ws")
    assert phases["tcp_setup"].total.frames == 3
    assert phases["app_teardown"].to_server.payload_bytes == ws_frame(2, True)  # close, code
    assert phases["app_teardown"].to_client.payload_bytes == ws_frame(2, False)
    assert phases["operation"].to_server.payload_bytes == up
    upgrade = phases["app_setup"].to_server.payload_bytes
    assert upgrade > 0 and phases["app_setup"].to_client.payload_bytes > 0
    assert tally(stream, port).to_server.payload_bytes == upgrade + up + ws_frame(2, True)


def test_new_rest_connection_has_one_handshake_and_the_kernels_bytes(lab: Lab,
                                                                    seeding: Any) -> None:
    name = name_of(lab, "rest")
    port = service_port(lab.endpoints[name])
    dataset.reset(seeding.store.games, dataset.fetch_games(), indexes=True)

    def body() -> dict[str, int]:
        client = lab.client(name)
        try:
            game = client.get(workload.fetch_id())
            info = tcp_info(http_socket(client))
        finally:
            client.close()
        wait_settled(port)
        return {**info, "body": len(dumpb(game))}
    packets, layers, info = capture_and_dissect(port, "http", body)
    (stream,) = streams(first_copies(packets)).values()  # a SYN, FIN or segment sent again, once
    phases = connection_phases(stream, layers, port, "rest")
    total = tally(stream, port)
    print(f"\nREST new connection: {total}; kernel {info}")
    assert [p.syn for p in stream[:2]] == [True, True] and stream[2].kind == SETUP
    assert sum(p.syn for p in stream) == 2  # SYN and SYN-ACK, once
    assert phases["tcp_setup"].total.frames == 3
    assert phases["tcp_teardown"].total.frames >= 3  # FIN, FIN, ACK (maybe FIN+ACK merged)
    assert sum(p.fin for p in stream) == 2
    assert phases["app_setup"].total.frames == phases["app_teardown"].total.frames == 0
    # The kernel counts the SYN's one sequence number as acknowledged data.
    up, down = distinct_payload(stream, port)  # each byte once (a resent segment is on the wire twice)
    assert up + 1 == info["bytes_acked"]
    assert down == info["bytes_received"]
    assert app_payload(stream, layers, port, "rest") == (0, info["body"])


def test_grpc_payload_is_protobuf_plus_prefix_plus_http2_frames(lab: Lab, seeding: Any) -> None:
    name = name_of(lab, "grpc")
    port = service_port(lab.endpoints[name])
    dataset.reset(seeding.store.games, dataset.fetch_games(), indexes=True)
    request = len(pb.GameId(id=workload.fetch_id()).SerializeToString())

    def body() -> dict[str, Any]:
        client = lab.client(name)
        try:
            client.get(workload.fetch_id())  # warm: HPACK tables filled
            t0 = time.time()
            for _ in range(N):
                client.get(workload.fetch_id())
            t1 = time.time()
        finally:
            client.close()
        return {"t0": t0, "t1": t1}
    packets, layers, r = capture_and_dissect(port, "http2", body)
    window = between(packets, r["t0"], r["t1"])
    split = tally(window, port)
    up_frames = [f for p in window if p.dst_port == port and p.number in layers
                 for f in layers[p.number].h2]
    print(f"\ngRPC {N} gets: {split}; protobuf request {request} B; client frames "
          f"{[(f.type, f.length) for f in up_frames]}")
    assert not any(p.syn for p in window)
    up_app, _ = app_payload(window, layers, port, "grpc")
    assert up_app == N * request
    data = [f for f in up_frames if f.type == H2_DATA]
    assert [f.length for f in data] == [GRPC_PREFIX + request] * N
    assert sum(f.type == H2_HEADERS for f in up_frames) == N
    # Every client byte is an HTTP/2 frame: frame headers + payloads = TCP payload.
    # (each stream byte once: a segment sent again is on the wire twice, dissected once)
    up, _ = distinct_payload(window, port)
    assert up == sum(H2_FRAME_HEADER + f.length for f in up_frames)
    assert up >= N * (request + GRPC_PREFIX + 2 * H2_FRAME_HEADER)


# Over TLS, gRPC's and Connect's clients (grpcio, connect-python's pyqwest) log no TLS secrets: the
# services of TLS subjects append theirs to the capture's key log (lab/tls.py, keylog_environment), so
# that tshark reads the messages inside as in cleartext. grpcio's server logs none either (its Python API
# has no key log): grpc/python_grpcio+tls13 stays unread, and the capture says so.
THROUGH_TLS = ("grpc/node_grpcjs", "grpc/go_grpc", "connect/go_connect", "connect/python_connectrpc")
UNREAD = "grpc/python_grpcio+tls13"


def test_grpc_and_connect_payload_is_read_through_tls_as_in_cleartext() -> None:
    """capture.wire.measure on each implementation plain and +tls13: the application payload per call
    read inside TLS (through the key log) equals cleartext's, and is not nothing; the TLS subject's TCP
    payload is larger (its records' overhead). A subject neither of whose ends logs its keys is named as
    unread, with why, not left at 0 in silence."""
    from capture.wire import measure
    names = [*(n for base in THROUGH_TLS for n in (base, f"{base}+tls13")), UNREAD]
    found = measure(names=names, n=3, new_connections=0, database=False, operations=("insert", "fetch-one"),
                    progress=lambda line: None)
    steady = found["steady"]
    assert found["context"]["subject_framing"]["grpc/go_grpc+tls13"]["decrypted_with_key_log"] is True
    for base in THROUGH_TLS:
        for op in ("insert", "fetch-one"):
            plain, secure = steady[base][op], steady[f"{base}+tls13"][op]
            for way in ("to_server", "to_client"):
                assert secure[way]["app_payload"] == plain[way]["app_payload"], (base, op, way, secure, plain)
                assert secure[way]["payload_bytes"] > plain[way]["payload_bytes"], (base, op, way)
            assert secure["to_client"]["app_payload"] > 0, (base, op)
    assert list(found["unread"]) == [UNREAD] and "no key log line" in found["unread"][UNREAD]
    assert steady[UNREAD]["insert"]["total"]["app_payload"] == 0
