"""Fernando & Engel's echo and broadcast tests on the lab's Go load client
(load/messages.py, load/push-client -mode echo | broadcast), briefly, against
the real services that serve echo and broadcast, in both framings (the lab's
WebSocket protocol, socket.io's). What is asserted is what a run must record
to be trusted: every client connected and answered, every broadcast reached
every receiver, the client's own CPU beside its limit; and that a client
speaking the wrong framing is counted as failing, not as fast."""

from __future__ import annotations

import pytest

from lab.host import pinning
from lab.pytest_plugin.fixtures import implementations
from lab.registry import discover
from load import messages, push

PROTOCOL = {impl.name: impl.protocol for impl in discover()}


def test_every_protocol_that_serves_echo_and_broadcast_has_a_framing_of_the_go_client():
    names = [p.values[0] for p in implementations("broadcast") if p.values[0]]
    assert names
    for name in names:
        assert messages.framing(PROTOCOL[name]) in ("ws", "socketio")
    with pytest.raises(ValueError, match="no echo or broadcast framing"):
        messages.framing("rest")


@pytest.mark.parametrize("impl", implementations("echo"))
def test_echo_on_the_go_client_answers_every_client_and_counts_its_own_cpu(impl, lab):
    row = messages.echo(lab.endpoints[impl], PROTOCOL[impl], lab.pids[impl], 5, 0.5, 1.0, pinning.plan(False),
                        {"text": "x" * 20})
    assert row["valid"], row["invalid_reasons"]
    assert row["errors"] == {}
    assert row["connect_ms"]["count"] == 5 and row["connect_ms"]["mean"] > 0
    rtt = row["rtt_ms"]
    assert rtt["count"] > 0 and 0 < rtt["p50"] <= rtt["p99"] <= rtt["max"]
    # throughput is the replies counted in the window over the window
    assert row["messages_per_s"] == pytest.approx(rtt["count"] / row["window_s"], rel=0.01)
    assert row["client_cpu_percent"] > 0 and row["client_cpu_limit_percent"] == pytest.approx(
        100 * push.CLIENT_BOUND * row["client_cpus"])
    assert 0 < row["machine_cpu_percent"] <= 100


@pytest.mark.parametrize("impl", implementations("broadcast"))
def test_broadcast_on_the_go_client_reaches_every_receiver_once_per_broadcast(impl, lab):
    row = messages.broadcast(lab.endpoints[impl], PROTOCOL[impl], lab.pids[impl], 6, pinning.plan(False),
                             broadcasts=3, interval_ms=200)
    assert row["valid"], row["invalid_reasons"]
    assert row["broadcasts"] == 3 and row["lost"] == 0 and row["errors"] == {}
    assert [b["n"] for b in row["per_broadcast"]] == [1, 2, 3]
    assert all(b["received"] == 6 and b["delivered"] >= 6 for b in row["per_broadcast"])  # the session's others too
    lat = row["latency_ms"]
    assert lat["count"] == 18 and 0 < lat["min"] <= lat["median"] <= lat["max"]
    assert row["connect_ms"]["count"] == 6
    assert row["client_cpu_percent"] >= 0 and row["client_cpu_limit_percent"] > 0
    # the receivers' CPU is counted to the last receipt of each broadcast, not to the next send
    assert row["client_cpu_over"] == "the send to the last receipt"
    assert all(b["cpu_ms"] >= 0 and b["span_ms"] > 0 for b in row["per_broadcast"])


@pytest.mark.parametrize("impl", implementations("echo", where=lambda i: i.protocol == "ws")[:1])
def test_the_wrong_framing_is_an_invalid_run_not_a_fast_one(impl, lab):
    # socket.io's handshake against the lab's WebSocket protocol: no client ever opens
    row = messages.echo(lab.endpoints[impl].removesuffix("/ws") + "/socket.io/", "socketio", lab.pids[impl], 3, 0.3,
                        0.5, pinning.plan(False), 1)
    assert not row["valid"]
    assert row["rtt_ms"]["count"] == 0 and row["messages_per_s"] == 0
    assert row["errors"].get("connect") == 3
    assert any("never connected" in r for r in row["invalid_reasons"])


def test_the_machines_busy_share_counts_every_cpu_and_leaves_guest_time_out():
    from collections import namedtuple
    times = namedtuple("times", "user nice system idle iowait irq softirq steal guest guest_nice")
    before = times(100, 0, 50, 800, 50, 0, 0, 0, 0, 0)
    # 200 s of CPU time pass: 60 user (20 of it a guest's, already in user), 20 system, 110 idle, 10 iowait
    after = times(160, 0, 70, 910, 60, 0, 0, 0, 20, 0)
    assert push.busy_percent(before, after) == pytest.approx(100 * 80 / 200)
    assert push.busy_percent(before, before) == 0.0
