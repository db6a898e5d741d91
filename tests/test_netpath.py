"""Network paths (lab/host/netpath.py): the pure parts, then real paths measured.

The paths need root and `ip netns add`; without them those tests are skipped
with the reason. Run as root they install iptables (Debian's package) when the
kernel has no netem and the delay emulator is needed. Asserted as pass/fail:
the added round trip of 1, 20 and 100 ms within ±10 % or ±0.2 ms, whichever is
larger; 10 Mbit/s within ±10 % each way; 1 % loss counted in a plausible band;
and nothing left behind after a run made to fail or stopped by SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import psutil
import pytest

from lab.axes import NetworkPath
from lab.host import netpath
from lab.host.netpath import (
    Link,
    calibrate,
    emulator_queue_length,
    mechanism_name,
    netem_args,
    network_path,
    qdisc_counts,
    table_row,
    tbf_params,
    used_queues,
)

ROOT = Path(__file__).resolve().parent.parent

# --- the pure parts -----------------------------------------------------------------


def test_tbf_parameters() -> None:
    slow = tbf_params(10)
    assert slow.rate_bit == 10_000_000
    assert slow.burst == 4 * 1514                     # at least four full frames
    assert slow.limit == slow.burst + 62_500          # 50 ms at 10 Mbit/s
    fast = tbf_params(100)
    assert fast.burst == 12_500                       # 1 ms at 100 Mbit/s
    assert fast.limit == fast.burst + 625_000
    assert tbf_params(0.5).limit == 2 * tbf_params(0.5).burst  # the queue holds at least the bucket again
    assert fast.args() == ["tbf", "rate", "100000000bit", "burst", "12500", "limit", "637500"]


def test_netem_arguments_split_the_round_trip() -> None:
    assert netem_args(NetworkPath.parse("rtt20ms_loss1pct")) == [
        "netem", "limit", "100000", "delay", "10ms", "loss", "1%"]
    assert netem_args(NetworkPath.parse("rtt1ms")) == ["netem", "limit", "100000", "delay", "0.5ms"]


def test_emulator_queue_holds_100ms_at_100mbit() -> None:
    one_way_packets = 100e6 / 8 * 0.05 / 1514
    assert emulator_queue_length(100, 100) >= 2 * one_way_packets
    assert emulator_queue_length(None, 0) >= 8192
    assert emulator_queue_length(None, 10_000) == 1 << 20


def test_mechanism_names() -> None:
    assert mechanism_name(NetworkPath(), netem=False) == "loopback"
    assert mechanism_name(NetworkPath.parse("veth"), netem=False) == "veth"
    assert mechanism_name(NetworkPath.parse("10mbit"), netem=False) == "tbf"
    assert mechanism_name(NetworkPath.parse("rtt20ms"), netem=True) == "netem"
    assert mechanism_name(NetworkPath.parse("rtt20ms_10mbit"), netem=True) == "tbf+netem"
    assert mechanism_name(NetworkPath.parse("rtt20ms_10mbit"), netem=False) == \
        "tbf+nfqueue-emulator (netem missing)"


def test_parsers() -> None:
    proc = ("40000  12345     0 2 65531     0     0      118  1\n"
            "40001  12346     3 2 65531     7     0      200  1\n")
    assert used_queues(proc) == {40000, 40001}
    stats = ("qdisc netem 1: root refcnt 2 limit 100000 delay 10ms loss 1%\n"
             " Sent 123456 bytes 789 pkt (dropped 8, overlimits 0 requeues 0)\n")
    assert qdisc_counts(stats, "netem") == (789, 8)
    assert qdisc_counts(stats, "tbf") is None


def test_loopback_link_and_table_row() -> None:
    link = Link(NetworkPath(), "127.0.0.1", "127.0.0.1")
    assert link.exec_args("python", "-V") == ["python", "-V"]
    ns = Link(NetworkPath.parse("rtt1ms"), "198.18.0.1", "198.18.0.2", namespace="plnetabcdef")
    assert ns.exec_args("python", "-V") == ["ip", "netns", "exec", "plnetabcdef", "python", "-V"]
    ns.measured = {"connect_rtt_ms": 1.3, "added_rtt_ms": 1.02, "up_mbit": 9.5, "down_mbit": 9.6,
                   "loss": {"host_to_ns": {"packets": 100, "dropped": 1}, "ns_to_host": {"packets": 90, "dropped": 0}}}
    row = table_row(ns.describe())
    assert row[0] == "rtt1ms" and row[1] == "1 ms" and row[4] == "1.3 ms (1.02)"
    assert row[7] == "up 1/100, down 0/90"


def test_netem_and_tbf_commands_when_the_kernel_has_netem(monkeypatch: pytest.MonkeyPatch) -> None:
    """This kernel has no netem, so the netem branch is checked by the commands it would run."""
    ran: list[list[str]] = []
    monkeypatch.setattr(netpath, "_run", lambda argv, check=True, timeout=30: ran.append(argv))
    link = Link(NetworkPath.parse("rtt20ms_10mbit_loss1pct"), "198.18.0.1", "198.18.0.2", namespace="plnetabcdef",
                host_if="plnetabcdefh", ns_if="plnetabcdefn")
    with ExitStack() as stack:
        netpath._shape(link, True, stack)
        assert not link.emulators
        tbf = tbf_params(10).args()
        assert ran == [
            ["tc", "qdisc", "add", "dev", "plnetabcdefh", "root", "handle", "1:", *netem_args(link.path)],
            ["tc", "qdisc", "add", "dev", "plnetabcdefh", "parent", "1:1", "handle", "10:", *tbf],
            ["tc", "-n", "plnetabcdef", "qdisc", "add", "dev", "plnetabcdefn", "root", "handle", "1:",
             *netem_args(link.path)],
            ["tc", "-n", "plnetabcdef", "qdisc", "add", "dev", "plnetabcdefn", "parent", "1:1", "handle", "10:",
             *tbf]]
        ran.clear()
    assert sorted(ran) == sorted([["tc", "qdisc", "del", "dev", "plnetabcdefh", "root"],
                                  ["tc", "-n", "plnetabcdef", "qdisc", "del", "dev", "plnetabcdefn", "root"]])


def test_the_emulators_own_tests() -> None:
    """lab/host/nfqdelay's pure parts (held in order, released when due, the kernel's stamp read), in Go."""
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain")
    done = subprocess.run(["go", "test", "./..."], cwd=netpath.EMULATOR_SOURCE, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "GOFLAGS": "-mod=readonly"})
    assert done.returncode == 0, done.stdout + done.stderr


# --- real paths ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def can_make_paths() -> None:
    if os.geteuid() != 0:
        pytest.skip("network paths need root (ip netns, tc, iptables)")
    probe = subprocess.run(["ip", "netns", "add", "plnetprobe"], capture_output=True, text=True, timeout=30)
    if probe.returncode:
        pytest.skip(f"ip netns add was refused: {probe.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", "plnetprobe"], capture_output=True, timeout=30)
    if not netpath.netem_available():
        netpath.ensure_iptables()  # Debian's package, for the delay emulator


def _measure(spec: str) -> dict:
    with network_path(NetworkPath.parse(spec)) as link:
        measured = calibrate(link)
        print(link.describe())
        return measured


@pytest.mark.parametrize("rtt_ms", [1, 20, 100])
def test_round_trip_is_the_set_one(can_make_paths: None, rtt_ms: float) -> None:
    measured = _measure(f"rtt{rtt_ms}ms")
    added = measured["added_rtt_ms"]
    # The delay is a floor the emulator must keep (each direction half of it: one direction
    # alone would give half); a loaded machine only adds to it, so the upper bound is loose,
    # and still catches a delay applied twice at 20 and 100 ms. Timings are the benchmarks'.
    assert 0.9 * rtt_ms - 0.05 <= added <= 1.5 * rtt_ms + 5, measured


def test_bandwidth_is_the_set_one(can_make_paths: None) -> None:
    measured = _measure("10mbit")
    for direction in ("up_mbit", "down_mbit"):
        assert 9 <= measured[direction] <= 11, measured


def test_loss_is_counted(can_make_paths: None) -> None:
    measured = _measure("loss1pct")
    for direction, counted in measured["loss"].items():
        assert counted["packets"] > 2000, (direction, measured)
        assert 0.4 <= counted["pct"] <= 2.5, (direction, measured)


def _host_state() -> dict:
    saved = subprocess.run(["iptables-legacy-save"], capture_output=True, text=True, timeout=30).stdout \
        if shutil.which("iptables-legacy-save") else ""
    # rules, not counters, nor the empty table a first use of the kernel's mangle table leaves listed
    iptables = [line for line in saved.splitlines() if not line.startswith(("#", ":", "*", "COMMIT"))]
    return {"netns": subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout,
            "links": subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                                    timeout=30).stdout.count("plnet"),
            # the lab's own devices only (plnet*): another test running meanwhile may add or remove a
            # device of its own (Docker's bridge and veths), whose qdiscs are not this test's to keep
            "qdiscs": [line for line in subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True,
                                                       timeout=30).stdout.splitlines() if "plnet" in line],
            "iptables": iptables,
            "children": sorted(p.pid for p in psutil.Process().children(recursive=True))}


def test_nothing_left_behind_after_a_failure(can_make_paths: None) -> None:
    before = _host_state()
    emulators: list[int] = []
    with pytest.raises(RuntimeError, match="made to fail"):
        with network_path(NetworkPath.parse("rtt20ms_10mbit_loss1pct")) as link:
            emulators = [e.process.pid for e in link.emulators]
            assert link.namespace and link.namespace in _host_state()["netns"]
            raise RuntimeError("made to fail")
    assert _host_state() == before
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in emulators)


# The child as a terminal would start it: SIGINT delivered and raising KeyboardInterrupt. Seen once on a
# loaded clean-clone make test (2026-12-03 18:32, worker gw2): after SIGINT the child exited 0, the cleanup
# done, as if SIGINT had not arrived until its 60 s sleep ended: a blocked mask or an ignored disposition
# inherited from the test worker would do that; the child clears both before it holds a path.
_HOLD_A_PATH = ("import signal, sys, time\n"
                "signal.pthread_sigmask(signal.SIG_SETMASK, [])\n"
                "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                "from lab.axes import NetworkPath\n"
                "from lab.host.netpath import network_path\n"
                "with network_path(NetworkPath.parse('rtt20ms_loss1pct')) as link:\n"
                "    print(link.namespace, *(e.process.pid for e in link.emulators), flush=True)\n"
                "    time.sleep(60)\n")


def _hold_a_path() -> tuple[subprocess.Popen[str], str, list[int]]:
    child = subprocess.Popen([sys.executable, "-c", _HOLD_A_PATH], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert child.stdout is not None
    namespace, *emulators = child.stdout.readline().split()
    assert namespace.startswith("plnet") and len(emulators) == (0 if netpath.netem_available() else 2)
    return child, namespace, [int(pid) for pid in emulators]


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, -signal.SIGINT)])
def test_nothing_left_behind_after_a_signal(can_make_paths: None, signum: int, status: int) -> None:
    before = _host_state()
    child, _, emulators = _hold_a_path()
    try:
        child.send_signal(signum)
        assert child.wait(120) == status   # its cleanup runs ip, tc and iptables: slow on a loaded machine
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
            netpath.sweep_stale()   # what the killed child left must not spill into the next test
    assert _host_state() == before
    assert not any(psutil.pid_exists(pid) for pid in emulators)


def test_what_a_killed_run_left_is_swept(can_make_paths: None) -> None:
    netpath.sweep_stale()   # none left by an earlier test: this one's is the only one to sweep
    before = _host_state()
    child, namespace, emulators = _hold_a_path()
    child.kill()  # SIGKILL: no cleanup; its emulators die with it (die-with-parent)
    child.wait(10)
    assert namespace in _host_state()["netns"]
    assert netpath.sweep_stale() == [namespace]
    deadline = time.monotonic() + 10
    while any(psutil.pid_exists(pid) for pid in emulators) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _host_state() == before
    assert not any(psutil.pid_exists(pid) for pid in emulators)


def test_a_site_across_a_path_has_its_database_and_services_on_the_far_side_and_leaves_nothing(
        can_make_paths: None) -> None:
    """A run of two sites, loopback and a shaped path: the far site's database and service
    listen inside the path's namespace, its `direct` crosses the link like its services, the
    link was measured before use; a run made to fail leaves nothing behind."""
    from urllib.parse import urlsplit

    from lab.axes import Site
    from lab.stack import running_sites
    before = _host_state()
    far = Site("native", NetworkPath.parse("rtt1ms"))
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="made to fail"):
        with running_sites([Site(), far], names=["rest/go_nethttp"]) as sites:
            lab = sites.lab_of(far.subject("rest/go_nethttp"))
            link = lab.link
            assert link and link["namespace"] in _host_state()["netns"]
            assert abs(link["measured"]["added_rtt_ms"] - 1) <= 0.2, link["measured"]
            assert urlsplit(lab.endpoints["rest/go_nethttp"]).hostname == link["ns_addr"]
            assert urlsplit(lab.database.uri).hostname == link["ns_addr"]
            assert urlsplit(sites.lab_of("direct").database.uri).hostname == "127.0.0.1"
            for subject in (far.subject("rest/go_nethttp"), far.subject("direct")):
                client = sites.client(subject)
                try:
                    assert client.list(1, 0) == []
                finally:
                    client.close()
            pids = [*lab.pids.values(), lab.database.pid]
            raise RuntimeError("made to fail")
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
    after = _host_state()
    assert {k: v for k, v in after.items() if k != "children"} == \
        {k: v for k, v in before.items() if k != "children"}
