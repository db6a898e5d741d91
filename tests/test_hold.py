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
1,000 load clients or Docker build beside it, took longer than that to open a
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
from lab.pytest_plugin.fixtures import CRUD_CALLS
from lab.registry import select

TIMEOUT = 10.0
# One subject per service process (a subject varied only on the client's side is held by another's:
# lab/registry.py, served_by).
PROCESSES = [i for i in select() if i.served_by == i.name]
HOLDING = [i.name for i in PROCESSES if i.holds_idle_connections
           and i.serves(*CRUD_CALLS)]
NOT_HOLDING = sorted(i.name for i in PROCESSES if i.name not in HOLDING and i.serves(*CRUD_CALLS))
# One WebSocket per client: the WebSocket protocol and socket.io over its WebSocket transport.
WS_HOLDING = [n for n in HOLDING if n.startswith(("ws/", "socketio/"))]
# Each of the 1,000 connections stays open until HOLD_S after the clients began
# (--lab-hold-s in load/locustfile.py): they closed 4-8 s after their own opening,
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
        assert impl.holds_idle_connections is False
        assert impl.concurrency.startswith("gunicorn gthread")


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



@pytest.mark.alone  # a claim about the service, not about a machine shared with two test workers
@pytest.mark.parametrize("name", WS_HOLDING)
def test_a_thousand_websocket_clients_held_and_answered(lab, seeded, name):
    """1,000 Locust users, each on its own connection (the protocol's own client)
    with two requests 4 s apart, the first at a random moment within 4 s of the
    connection opening; the connection stays open until HOLD_S (8 s) after the
    clients began, or its last reply if later. The service holds all 1,000 at
    once and answers every request with its reply, none with an error.

    Why the first requests are spread: sent at once, 1,000 first requests arrived
    within about a second; in make test at 23:40 and 23:54 UTC on 2026-11-25, the
    machine at half its usual speed, socket.io and ws/node_ws, each pinned to one
    CPU beside the database, answered 340-561 of them DEADLINE_EXCEEDED, their 5 s
    database budget spent queueing: a burst limit this test does not ask about."""
    from lab.host import pinning
    from load import histograms
    from load.engine import LocustRun, Plan
    from load.runner import merge
    impl = lab.implementation(name)
    plan = Plan(name, impl.protocol, lab.endpoints[name], operation="fetch-one", users=1000, calls=2,
                duration_s=120, timeout_s=TIMEOUT)
    # Pinned as the load sweep is (lab/host/pinning.py): the service and the
    # database on one CPU, Locust's 1,000 connections on the other.
    pins = pinning.plan(True)
    if pins.enabled:
        for pid in (lab.pids[name], lab.database.pid):
            if pid:
                pinning.pin_tree(pid, pins.services)
    run = LocustRun(plan, workers=0, cpus=set(pins.generator) if pins.enabled else None,
                    extra=["--lab-think-ms", "4000", "--lab-first-spread-ms", "4000",
                           "--lab-hold-s", str(HOLD_S)]).start()
    _, port = address(lab.endpoints[name])
    peak = 0
    try:
        sample = 0.0  # the open connections counted every 0.25 s; Locust's exit seen within 0.1 s
        deadline = time.monotonic() + 180
        while any(p.poll() is None for p in run.processes) and time.monotonic() < deadline:
            if time.monotonic() >= sample:
                peak = max(peak, tcp_sockets(lab.pids[name], port, psutil.CONN_ESTABLISHED))
                sample = time.monotonic() + 0.25
            time.sleep(0.1)
        run.wait(timeout=30)
        assert not run.failures(), run.failures()
        m = merge(run.result())
    finally:
        run.stop()
        run.cleanup()
        if pins.enabled:  # back onto every CPU, for the tests after this one
            for pid in (lab.pids[name], lab.database.pid):
                if pid:
                    pinning.pin_tree(pid, pins.services | pins.generator)
    connect = m["connect"]
    errors = m["errors_total"]
    print(f"{name}: {peak} connections open at once; {m['ops_total']} requests answered; "
          f"errors {errors}; handshake p50 {connect.get_value_at_percentile(50) / 1e3:.0f} ms "
          f"max {connect.get_max_value() / 1e3:.0f} ms")
    # Held and answered: every request gets its reply. The one error allowed is the
    # contract's own answer to a database operation over its 5 s budget,
    # DEADLINE_EXCEEDED, and only rarely (a Node.js service pinned beside the
    # database on a machine at half speed answered 1 of ~3,500 so, 2026-11-26).
    others = {k: v for k, v in errors.items() if k != "DEADLINE_EXCEEDED"}
    assert others == {}, errors
    assert errors.get("DEADLINE_EXCEEDED", 0) <= m["ops_total"] // 100, errors
    assert connect.get_total_count() == 1000 and m["users_connected"] == 1000
    assert peak >= 1000
    # both requests of every client answered; the rare DEADLINE_EXCEEDED is an answer too
    assert m["ops_total"] + errors.get("DEADLINE_EXCEEDED", 0) == 2000
    assert histograms.latency_summary(m["latency"])["count"] == m["ops_total"]
