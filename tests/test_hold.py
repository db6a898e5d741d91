"""Services that hold load (issue 10 item 6, issue 13 item 7): 1,000 open
WebSocket clients are all answered; 1,000 idle TCP connections and clients
that send their request one byte per second do not keep anyone else from
being answered.

"Answered" means within a client timeout (10 s, thousands of times a
request's time here), which is behaviour, not a measurement: a configuration
that parks a thread on every idle connection (the *_gthread implementations,
kept as the former single-client configuration; their manifests say so)
waits minutes, and a slow client below keeps its connection for 23-35 s. (It
was 2 s until a CI run under `make test`'s three workers, another worker's
1,000 k6 clients or Docker build beside it, took longer than that to open a
fresh gRPC channel to grpc/node_grpcjs beside 1,000 idle connections; alone,
with three CPU-bound processes beside it, the same call takes 2-6 ms.) The
delays are printed, never asserted.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import ExitStack
from urllib.parse import urlsplit

import psutil
import pytest

from clients.protocols import get as protocol
from lab import dataset
from lab.processes import tcp_sockets
from lab.pytest_plugin.fixtures import CRUD_OPERATIONS
from lab.registry import select

TIMEOUT = 10.0
HOLDING = [i.name for i in select() if i.manifest.get("load", {}).get("holds_idle_connections", True)
           and i.serves(*CRUD_OPERATIONS)]
NOT_HOLDING = sorted(i.name for i in select() if i.name not in HOLDING and i.serves(*CRUD_OPERATIONS))
# One WebSocket per client: the WebSocket protocol and socket.io over its WebSocket transport.
WS_HOLDING = [n for n in HOLDING if n.startswith(("ws/", "socketio/"))]
# Each of the 1,000 connections stays open until HOLD_S after the clients began
# (load/scripts/ws.js, plan.hold_s): they closed 4-8 s after their own opening,
# and on a slow machine (CI, 2026-11-28 ~15:56 UTC, calibration ~120 µs against
# ~60) socket.io's handshakes spread over 4.6 s, so the first had closed before
# the last opened: 995 at once, a figure of the test's timing, not the service's.
HOLD_S = 8
FIRST_BYTES = {  # what a client sends first, per protocol
    "grpc": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "ws": b"GET /ws HTTP/1.1\r\nHost: lab\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
}
HTTP_FIRST = b"GET /health HTTP/1.1\r\nHost: lab\r\n\r\n"


def address(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint if "://" in endpoint else "//" + endpoint)
    return parts.hostname, parts.port


def timed_calls(lab, name: str, calls: int = 5) -> list[float]:
    """Fresh client with a TIMEOUT s timeout; the seconds each fetch-one took."""
    impl = lab.implementation(name)
    fetch_id = dataset.fetch_id()
    client = protocol(impl.protocol).client_class()(lab.endpoints[name], timeout=TIMEOUT)
    try:
        took = []
        for _ in range(calls):
            t = time.perf_counter()
            assert client.get(fetch_id)["id"] == fetch_id
            took.append(time.perf_counter() - t)
        return took
    finally:
        client.close()


def wait_until_held(pid: int, port: int, count: int, limit_s: float = 60.0) -> int:
    """How many connections on `port` the service holds, once it holds `count`
    or `limit_s` has passed. The kernel completes a TCP handshake before the
    service accepts it: a service that is behind on its accept queue (1,000
    handshakes, each a new HTTP/2 session for a gRPC server, on a loaded
    machine) is still holding them, and a new client waits in that queue
    behind them. What the test asks is whether the service stalls once it
    holds them, so it waits for that first."""
    deadline = time.monotonic() + limit_s
    while True:
        held = tcp_sockets(pid, port, psutil.CONN_ESTABLISHED)
        if held >= count or time.monotonic() > deadline:
            return held
        time.sleep(0.1)


def test_the_former_configuration_is_named():
    """The implementations left out below are exactly those whose manifest
    says they park a thread per connection."""
    for name in NOT_HOLDING:
        impl = next(i for i in select() if i.name == name)
        assert impl.manifest["load"]["holds_idle_connections"] is False
        assert impl.manifest["concurrency"].startswith("gunicorn gthread")


@pytest.mark.parametrize("name", HOLDING)
def test_idle_connections_do_not_stall_a_service(lab, seeded, name):
    before = timed_calls(lab, name)
    with ExitStack() as stack:
        host, port = address(lab.endpoints[name])
        for _ in range(1000):
            stack.enter_context(socket.create_connection((host, port), timeout=5))
        opened = time.monotonic()
        held = wait_until_held(lab.pids[name], port, 1000)
        accepted_s = time.monotonic() - opened
        assert held >= 1000, f"{name} holds {held} of the 1,000 idle connections after {accepted_s:.0f} s"
        during = timed_calls(lab, name)
    print(f"{name}: fetch-one median {1e3 * sorted(before)[2]:.1f} ms alone, "
          f"{1e3 * sorted(during)[2]:.1f} ms beside 1,000 idle connections "
          f"(all accepted {accepted_s:.2f} s after the last connected)")


@pytest.mark.parametrize("name", HOLDING)
def test_a_client_sending_one_byte_per_second_blocks_no_one(lab, seeded, name):
    impl = lab.implementation(name)
    first = FIRST_BYTES.get(impl.protocol, HTTP_FIRST)
    host, port = address(lab.endpoints[name])
    stop = threading.Event()
    slow = [socket.create_connection((host, port), timeout=5) for _ in range(8)]  # > the 4 threads

    def trickle(sock: socket.socket) -> None:
        for byte in first[:-1]:  # never completes its request
            if stop.wait(1.0):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return
    threads = [threading.Thread(target=trickle, args=(s,), daemon=True) for s in slow]
    try:
        for t in threads:
            t.start()
        time.sleep(1.5)  # every slow client is mid-request
        took = timed_calls(lab, name)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
        for s in slow:
            s.close()
    print(f"{name}: fetch-one median {1e3 * sorted(took)[2]:.1f} ms beside 8 clients sending 1 byte/s")


@pytest.fixture(scope="module")
def k6_binary():
    from lab.host import tools
    try:
        return tools.k6()
    except SystemExit as exc:
        pytest.skip(str(exc))


@pytest.mark.alone  # a claim about the service, not about a machine shared with two test workers
@pytest.mark.parametrize("name", WS_HOLDING)
def test_a_thousand_websocket_clients_held_and_answered(lab, seeded, k6_binary, name):
    """1,000 k6 WebSocket clients, each on its own connection with two requests 4 s
    apart, the first at a random moment within 4 s of the connection opening (one
    request only when its reply comes 4 s or more after the opening: 1 of 1,000 in
    a run); the connection stays open until HOLD_S (8 s) after the clients began, or
    its last reply if later (4-8 s after it opened). The service
    holds all 1,000 at once (the handshakes of all 1,000 spread over at most 1 s
    in the runs of 2026-11-25/26) and answers every request with its reply, none
    with an error. (Until 2026-11-28 each stayed 10 s, three or four requests, and
    the five of these tests held make test's other workers ~80 s.)

    Why the first requests are spread: sent at once, 1,000 first requests arrived
    within about a second; in make test at 23:40 and 23:54 UTC on 2026-11-25, the
    machine at half its usual speed, socket.io and ws/node_ws, each pinned to one
    CPU beside the database, answered 340-561 of them DEADLINE_EXCEEDED, their 5 s
    database budget spent queueing: a burst limit this test does not ask about.
    (k6 gives up on a handshake not answered within 60 s: "i/o timeout", a
    ws_error; a single-threaded server on a machine loaded far past its cores can
    be that slow to accept 1,000.)"""
    from load import k6, operations
    protocol = lab.implementation(name).protocol
    plan = {"target": lab.endpoints[name], "request": operations.request(protocol, lab.endpoints[name], "fetch-one"),
            "executor": {"executor": "per-vu-iterations", "vus": 1000, "iterations": 1,
                         "maxDuration": "120s"},
            "duration_s": 4, "think_ms": 4_000, "first_spread_ms": 4_000, "hold_s": HOLD_S,
            "timeout": "10s"}
    # Pinned as the load sweep is (load/pinning.py): the service and the
    # database on one CPU, k6's 1,000 connections on the other.
    from load import pinning
    pins = pinning.plan(True)
    if pins.enabled:
        for pid in (lab.pids[name], lab.database.pid):
            if pid:
                pinning.pin_tree(pid, pins.services)
    run = k6.K6Run(protocol, plan, cpus=set(pins.generator) if pins.enabled else None).start()
    _, port = address(lab.endpoints[name])
    peak = 0
    try:
        sample = 0.0  # the open connections counted every 0.25 s; k6's exit seen within 0.1 s
        while run.poll() is None:
            if time.monotonic() >= sample:
                peak = max(peak, tcp_sockets(lab.pids[name], port, psutil.CONN_ESTABLISHED))
                sample = time.monotonic() + 0.25
            time.sleep(0.1)
        run.wait(timeout=130)
    finally:
        run.stop()
        if pins.enabled:  # back onto every CPU, for the tests after this one
            for pid in (lab.pids[name], lab.database.pid):
                if pid:
                    pinning.pin_tree(pid, pins.services | pins.generator)
    samples = k6.read_samples(run.check_output(), protocol, (0, 2 ** 62))
    run.cleanup()
    print(f"{name}: {peak} connections open at once; {samples.ops_total} requests answered; "
          f"errors {dict(samples.errors)}; handshake p50 {samples.connect.get_value_at_percentile(50) / 1e3:.0f} ms "
          f"max {samples.connect.get_max_value() / 1e3:.0f} ms")
    # Held and answered: every request gets its reply. The one error allowed is the
    # contract's own answer to a database operation over its 5 s budget,
    # DEADLINE_EXCEEDED, and only rarely: a Node.js service pinned beside the
    # database on a machine at half speed answered 1 of ~3,500 so in make test
    # (2026-11-26 00:20 UTC, before this test ran `alone`; beside two other
    # workers it later answered 109 of 1,936 so and held only 868 clients at once).
    others = {k: v for k, v in samples.errors.items() if k != "DEADLINE_EXCEEDED"}
    assert others == {}, samples.errors
    assert samples.errors.get("DEADLINE_EXCEEDED", 0) <= samples.ops_total // 100, samples.errors
    assert samples.connect.get_total_count() == 1000
    assert peak >= 1000
    # every client's requests answered (an unanswered one is an error above, "unanswered"),
    # at least one each; the rare DEADLINE_EXCEEDED is an answer too
    assert samples.ops_total + samples.errors.get("DEADLINE_EXCEEDED", 0) >= 1000
