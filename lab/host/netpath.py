"""A network path the lab's TCP connections really cross (lab.axes.NetworkPath):
loopback, a veth pair into a namespace, or that pair shaped. Measured before use.

    with network_path(NetworkPath.parse("rtt20ms_10mbit")) as link:   # Link
        db = subprocess.Popen(link.exec_args("mongod", "--bind_ip", link.ns_addr, ...))
        calibrate(link)          # connect RTT, bulk rate each way, loss counted
        link.describe()          # set values, measured values, mechanism: for a result's context

    python -m lab.host.netpath rtt1ms rtt20ms rtt100ms 10mbit 100mbit [--json FILE]

How a path is made:

- loopback: nothing; addresses 127.0.0.1, argv runs unchanged.
- every other path: a namespace joined by a veth pair at MTU 1,500
  (lab.host.netns.veth_namespace; addresses in 198.18.0.0/16). Services bind
  `link.ns_addr` inside the namespace (`link.exec_args`), clients on the host
  dial it.
- bandwidth: a token bucket (tbf, `tbf_params`) on the egress of both veth
  ends, so each direction is limited.
- delay (the round trip split evenly between the two directions) and loss
  (each direction): `tc netem` on both ends when the kernel has it (probed
  once in a throwaway namespace, the answer cached per kernel release). Where
  it has not (this lab's machines: no CONFIG_NET_SCH_NETEM), the lab's own
  packet-level emulator, lab/host/nfqdelay (Go): an iptables-legacy rule in
  each namespace's mangle PREROUTING sends the packets arriving over the veth
  to an NFQUEUE, and the emulator there holds each packet, SYN, SYN-ACK and
  ACKs alike, until its arrival plus the one-way delay, in arrival order, or
  drops it with the loss probability. Delaying at the receiving end, after
  the veth has taken the packet from its socket, keeps TCP Small Queues from
  mistaking the delay for a full device queue (as netem on the sender's own
  egress does).

Everything is removed on exit, also when the body raises, on Ctrl-C and on
SIGTERM: the iptables rules (matched only by the link's own interface and
addresses), the emulators (started with die-with-parent, stopped by pid), the
qdiscs, the veth pair and the namespace. What a run killed outright left
(its namespace, its host rules) is removed by the next path made
(`sweep_stale`: owners recorded in /run/protolab-netpath, by pid and start time). Needs root; raises NetnsUnavailable
when `ip netns add` is refused.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import re
import secrets
import shlex
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import settings
from lab.axes import NetworkPath
from lab.host.netns import NetnsUnavailable, veth_namespace
from lab.host.tools import go_build
from lab.processes import Process

__all__ = ["Link", "NetnsUnavailable", "calibrate", "network_path", "netem_available", "sweep_stale", "tbf_params"]

MTU = 1500
ETHERNET_HEADER = 14
EMULATOR_SOURCE = Path(__file__).resolve().parent / "nfqdelay"
EMULATOR_PRIORITY = 10         # SCHED_FIFO of the emulator's one packet thread (it sleeps between packets)
QUEUE_LATENCY_S = 0.05         # what the bandwidth limit's queue holds, in time at the set rate
RULE_COMMENT = "protolab-netpath"
CALIBRATION_SECONDS = 1.5      # a bulk transfer is sized to take this long at the set rate
UNLIMITED_BULK_BYTES = 32 << 20
BULK_TIME_LIMIT_S = 4.0        # and never runs longer (a lossy long path may be slow)
CONNECTS = 20


# --- pure parts ---------------------------------------------------------------------


@dataclass(frozen=True)
class TbfParams:
    rate_bit: int     # bit/s
    burst: int        # bytes: the bucket
    limit: int        # bytes: the queue in front of it

    def args(self) -> list[str]:
        return ["tbf", "rate", f"{self.rate_bit}bit", "burst", str(self.burst), "limit", str(self.limit)]


def tbf_params(rate_mbit: float, mtu: int = MTU) -> TbfParams:
    """A token bucket for `rate_mbit`: the bucket holds 1 ms at the rate but at
    least four full frames (a smaller one than a frame would stall the queue);
    the queue in front holds QUEUE_LATENCY_S at the rate, at least the bucket's
    size again."""
    rate_bit = round(rate_mbit * 1e6)
    frame = mtu + ETHERNET_HEADER
    burst = max(4 * frame, math.ceil(rate_bit / 8 * 0.001))
    limit = burst + max(burst, math.ceil(rate_bit / 8 * QUEUE_LATENCY_S))
    return TbfParams(rate_bit, burst, limit)


def one_way_delay_ms(path: NetworkPath) -> float:
    return path.rtt_ms / 2


def netem_args(path: NetworkPath) -> list[str]:
    """netem's arguments for one direction: half the round trip, the loss rate,
    and a queue long enough for 100 ms at 10 Gbit/s."""
    args = ["netem", "limit", "100000"]
    if path.rtt_ms:
        args += ["delay", f"{one_way_delay_ms(path):g}ms"]
    if path.loss_pct:
        args += ["loss", f"{path.loss_pct:g}%"]
    return args


def emulator_queue_length(rate_mbit: float | None, rtt_ms: float) -> int:
    """Packets the kernel's NFQUEUE may hold for the emulator: the one-way delay
    at the rate (10 Gbit/s, veth's order of magnitude, when none is set) in
    full frames, four times over, at least 8,192; never more than 1,048,576."""
    rate = (rate_mbit or 10_000) * 1e6 / 8
    packets = rate * max(rtt_ms / 2, 1.0) / 1000 / (MTU + ETHERNET_HEADER)
    return int(min(max(4 * packets, 8192), 1 << 20))


def used_queues(table: str) -> set[int]:
    """The NFQUEUE numbers bound in /proc/net/netfilter/nfnetlink_queue's text."""
    return {int(line.split()[0]) for line in table.splitlines() if line.split() and line.split()[0].isdigit()}


def qdisc_counts(tc_stats: str, kind: str) -> tuple[int, int] | None:
    """Packets sent and dropped by the first qdisc of `kind` in `tc -s qdisc show`'s text."""
    match = re.search(rf"qdisc {kind} .*?\n\s*Sent \d+ bytes (\d+) pkt \(dropped (\d+)", tc_stats)
    return (int(match.group(1)), int(match.group(2))) if match else None


def mechanism_name(path: NetworkPath, netem: bool) -> str:
    if not path.veth:
        return "loopback"
    if not path.shaped:
        return "veth"
    parts = ["tbf"] if path.rate_mbit else []
    if path.rtt_ms or path.loss_pct:
        parts.append("netem" if netem else "nfqueue-emulator")
    return "+".join(parts) + ("" if netem or not (path.rtt_ms or path.loss_pct) else " (netem missing)")


# --- the host's abilities -----------------------------------------------------------


def _run(argv: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {(done.stderr or done.stdout).strip()}")
    return done


@functools.cache
def netem_available() -> bool:
    """Whether this kernel has netem: `tc qdisc add dev lo root netem delay 1ms`
    in a throwaway namespace, once per kernel release (cached in the lab's cache)."""
    cached = settings.cache_dir() / f"netem-{platform.release()}"
    if cached.exists():
        return cached.read_text().strip() == "yes"
    ns = f"plprobe{secrets.token_hex(3)}"
    if _run(["ip", "netns", "add", ns], check=False).returncode:
        raise NetnsUnavailable(f"ip netns add {ns} was refused (root needed)")
    try:
        answer = _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay",
                       "1ms"], check=False).returncode == 0
    finally:
        _run(["ip", "netns", "del", ns], check=False)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text("yes\n" if answer else "no\n")
    return answer


def ensure_iptables() -> str:
    """iptables-legacy (NFQUEUE needs the legacy xtables target here: nft's queue
    expression may be missing from the kernel); Debian's iptables package is
    installed when missing and we are root."""
    found = shutil.which("iptables-legacy")
    if found:
        return found
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", "iptables"]
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(f"the delay emulator needs iptables-legacy; install it: {' '.join(cmd)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(cmd, capture_output=True, env=env, timeout=900, check=False).returncode:
        subprocess.run(["apt-get", "update"], capture_output=True, env=env, timeout=600, check=False)
        subprocess.run(cmd, capture_output=True, env=env, timeout=900, check=True)
    found = shutil.which("iptables-legacy")
    if not found:
        raise RuntimeError("iptables installed, but no iptables-legacy on PATH")
    return found


def emulator_binary() -> Path:
    return go_build(EMULATOR_SOURCE, "nfqdelay")


# --- the link -----------------------------------------------------------------------


@dataclass
class Emulator:
    """One nfqdelay process: the packets arriving in one namespace over the veth."""
    direction: str          # "host_to_ns" or "ns_to_host"
    process: Process
    stats_path: Path

    def counters(self) -> dict[str, Any]:
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return {}


@dataclass
class Link:
    path: NetworkPath
    host_addr: str                      # the host's end (loopback: 127.0.0.1)
    ns_addr: str                        # what services bind and clients dial
    namespace: str | None = None
    host_if: str | None = None
    ns_if: str | None = None
    mtu: int | None = None
    mechanism: str = "loopback"
    emulators: list[Emulator] = field(default_factory=list)
    base_rtt_ms: float | None = None    # the connect round trip over the bare veth, before shaping
    measured: dict[str, Any] | None = None
    workdir: Path | None = None
    _probe: Process | None = None
    _probe_port: int | None = None
    _cc: dict[str, str] | None = None

    def exec_args(self, *argv: str) -> list[str]:
        """argv prefixed to run where the services run (inside the namespace)."""
        return ["ip", "netns", "exec", self.namespace, *argv] if self.namespace else list(argv)

    def congestion_control(self) -> dict[str, str]:
        """TCP's congestion control on each side (it decides what loss costs: bbr hardly slows down)."""
        def read(*prefix: str) -> str:
            done = _run([*prefix, "cat", "/proc/sys/net/ipv4/tcp_congestion_control"], check=False)
            return done.stdout.strip() or "?"
        host = read()
        return {"host": host, "namespace": read(*self.exec_args()) if self.namespace else host}

    def describe(self) -> dict[str, Any]:
        return {"path": self.path.name, "mechanism": self.mechanism, "tcp_congestion_control": self._cc,
                "set": {"rtt_ms": self.path.rtt_ms, "rate_mbit": self.path.rate_mbit, "loss_pct": self.path.loss_pct},
                "measured": self.measured, "namespace": self.namespace, "host_addr": self.host_addr,
                "ns_addr": self.ns_addr, "mtu": self.mtu}


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises SystemExit in the main thread while the link exists, so
    the cleanup below runs (by default SIGTERM ends Python without it)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def network_path(path: NetworkPath) -> Iterator[Link]:
    with _sigterm_raises(), ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="protolab-netpath-"))
        stack.callback(shutil.rmtree, workdir, True)
        if not path.veth:
            link = Link(path, "127.0.0.1", "127.0.0.1", workdir=workdir)
            stack.callback(_stop_probe, link)
            yield link
            return
        netem = netem_available() if (path.rtt_ms or path.loss_pct) else False
        sweep_stale()
        veth = stack.enter_context(veth_namespace(mtu=MTU, prefix="plnet"))
        stack.enter_context(_owner_record(veth.namespace))
        link = Link(path, veth.host_addr, veth.ns_addr, veth.namespace, veth.host_if, veth.ns_if, veth.mtu,
                    mechanism_name(path, netem), workdir=workdir)
        stack.callback(_stop_probe, link)
        if path.shaped:
            link.base_rtt_ms = statistics.median(_connect_rtts(link, CONNECTS).kernel_ms)
            _shape(link, netem, stack)
        yield link


# --- what a killed run left -----------------------------------------------------------
# A run killed outright (SIGKILL) cannot clean up; its emulators die with it
# (die-with-parent), but its namespace and its host iptables rules stay. Each
# path's namespace has an owner record here, and the next path made removes
# what belongs to owners no longer running, and nothing else.

OWNERS = Path("/run/protolab-netpath")


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@contextmanager
def _owner_record(namespace: str) -> Iterator[None]:
    OWNERS.mkdir(parents=True, exist_ok=True)
    record = OWNERS / namespace
    record.write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    try:
        yield
    finally:
        record.unlink(missing_ok=True)


def sweep_stale() -> list[str]:
    """Remove the namespaces, veth pairs and host iptables rules of paths whose
    owner is no longer running; the namespaces removed."""
    if not OWNERS.is_dir():
        return []
    removed = []
    for record in OWNERS.iterdir():
        try:
            pid, start = record.read_text().split()
        except (OSError, ValueError):
            continue
        if _start_time(int(pid)) == start:
            continue  # its owner still runs
        namespace = record.name
        iptables = shutil.which("iptables-legacy")
        if iptables:
            saved = _run([f"{iptables}-save", "-t", "mangle"], check=False).stdout
            for line in saved.splitlines():
                if line.startswith("-A ") and f"{RULE_COMMENT} {namespace}" in line:
                    _run([iptables, "-w", "10", "-t", "mangle", "-D", *shlex.split(line)[1:]], check=False)
        _run(["ip", "link", "del", f"{namespace}h"], check=False)
        _run(["ip", "netns", "del", namespace], check=False)
        record.unlink(missing_ok=True)
        removed.append(namespace)
    return removed


def _tc(link: Link, inside: bool, *args: str) -> None:
    _run(["tc", *(["-n", link.namespace] if inside and link.namespace else []), *args])


def _shape(link: Link, netem: bool, stack: ExitStack) -> None:
    path = link.path
    ends = ((False, link.host_if), (True, link.ns_if))  # each end's egress: host->ns, ns->host
    tbf = tbf_params(path.rate_mbit, MTU) if path.rate_mbit else None
    delay_or_loss = bool(path.rtt_ms or path.loss_pct)
    for inside, dev in ends:
        assert dev is not None
        stack.callback(_run, ["tc", *(["-n", link.namespace] if inside else []), "qdisc", "del", "dev", dev,
                              "root"], False)
        if netem and delay_or_loss:
            _tc(link, inside, "qdisc", "add", "dev", dev, "root", "handle", "1:", *netem_args(path))
            if tbf:
                _tc(link, inside, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf.args())
        elif tbf:
            _tc(link, inside, "qdisc", "add", "dev", dev, "root", "handle", "1:", *tbf.args())
    if delay_or_loss and not netem:
        _start_emulators(link, stack)


def _free_queue() -> int:
    try:
        used = used_queues(Path("/proc/net/netfilter/nfnetlink_queue").read_text())
    except OSError:
        used = set()
    while True:
        number = 10_000 + secrets.randbelow(50_000)
        if number not in used and number + 1 not in used:
            return number


def _start_emulators(link: Link, stack: ExitStack) -> None:
    """One emulator per namespace, each for the packets arriving there over the
    veth: the host's for ns->host, the namespace's for host->ns."""
    assert link.namespace and link.workdir and link.host_if and link.ns_if
    iptables = ensure_iptables()
    binary = emulator_binary()
    queue = _free_queue()
    path = link.path
    maxlen = emulator_queue_length(path.rate_mbit, path.rtt_ms)
    ends = (("ns_to_host", False, link.host_if, link.ns_addr, link.host_addr, queue),
            ("host_to_ns", True, link.ns_if, link.host_addr, link.ns_addr, queue + 1))
    for direction, inside, dev, src, dst, number in ends:
        stats = link.workdir / f"{direction}.json"
        argv = [str(binary), "-queue", str(number), "-delay", f"{one_way_delay_ms(path) * 1e6:.0f}ns",
                "-loss", f"{path.loss_pct / 100:g}", "-maxlen", str(maxlen), "-stats", str(stats),
                "-realtime", str(EMULATOR_PRIORITY)]
        process = Process(f"nfqdelay {direction}", link.exec_args(*argv) if inside else argv,
                          link.workdir / f"{direction}.log")
        stack.callback(process.stop)
        process.wait_until(stats.exists, timeout=10, what="bound to its queue")
        link.emulators.append(Emulator(direction, process, stats))
        rule = ["-t", "mangle", "PREROUTING", "-i", dev, "-s", src, "-d", dst, "-m", "comment", "--comment",
                f"{RULE_COMMENT} {link.namespace}", "-j", "NFQUEUE", "--queue-num", str(number)]
        prefix = link.exec_args() if inside else []
        # Removed before the emulator stops (callbacks run last first): no packet
        # is sent to a queue nobody reads.
        stack.callback(_run, [*prefix, iptables, "-w", "10", *rule[:2], "-D", *rule[2:]], False)
        _run([*prefix, iptables, "-w", "10", *rule[:2], "-A", *rule[2:]])


# --- calibration --------------------------------------------------------------------

# The probe: a listener inside the namespace. A connection that sends nothing is
# closed (the connect round trip); "d" + size + time limit: it sends that many
# bytes and closes; "u": it reads to the end and answers with the bytes and the
# time from the first to the last.
PROBE = r"""
import socket, struct, sys, threading, time
def recv_exact(c, n):
    b = b""
    while len(b) < n:
        part = c.recv(n - len(b))
        if not part:
            raise EOFError
        b += part
    return b
def handle(c):
    try:
        c.settimeout(60)
        op = c.recv(1)
        if op == b"d":
            size, limit_ms = struct.unpack("!QI", recv_exact(c, 12))
            chunk, sent, end = b"\0" * 65536, 0, time.monotonic() + limit_ms / 1000
            while sent < size and time.monotonic() < end:
                sent += c.send(chunk[:min(65536, size - sent)])
        elif op == b"u":
            got, first, last = 0, None, None
            while True:
                part = c.recv(262144)
                if not part:
                    break
                now = time.monotonic()
                first = first or now
                last, got = now, got + len(part)
            c.sendall(struct.pack("!Qd", got, (last - first) if first else 0.0))
    except Exception:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0))
s.listen(256)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""


def _probe_port(link: Link) -> int:
    if link._probe is None or link._probe.popen.poll() is not None:
        assert link.workdir is not None
        log = link.workdir / "probe.log"
        link._probe = Process("netpath probe", link.exec_args(sys.executable, "-c", PROBE, link.ns_addr), log)

        def port() -> int | None:
            text = log.read_text().strip()
            return int(text.splitlines()[0]) if text else None
        link._probe_port = int(link._probe.wait_until(port, timeout=15, what="listening"))  # type: ignore[arg-type]
    assert link._probe_port is not None
    return link._probe_port


def _stop_probe(link: Link) -> None:
    if link._probe is not None:
        link._probe.stop()
        link._probe = None


TCP_INFO_RTT = struct.Struct("=68xI")  # struct tcp_info up to tcpi_rtt (microseconds)


@dataclass(frozen=True)
class Connects:
    kernel_ms: list[float]   # the kernel's own round trip of each handshake (TCP_INFO tcpi_rtt: SYN to SYN-ACK)
    app_ms: list[float]      # how long each connect() took as the program saw it (its wake-up included)


def _connect_rtts(link: Link, count: int, warmup: int = 5) -> Connects:
    """`count` TCP connects host -> where the services run, after `warmup`
    connects left out (the first ones are slower: caches, the probe's first
    accept). The kernel measures each handshake's round trip from the SYN it
    sent to the SYN-ACK it received (Karn: a retransmitted SYN gives none), so
    the client's own wake-up is not in it; the program's view is kept beside."""
    port = _probe_port(link)
    kernel: list[float] = []
    app: list[float] = []
    for i in range(warmup + count):
        sock = socket.socket()
        sock.settimeout(10)
        try:
            start = time.perf_counter()
            sock.connect((link.ns_addr, port))
            took = (time.perf_counter() - start) * 1000
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_RTT.size)
            rtt_us = TCP_INFO_RTT.unpack(info)[0]
            if i >= warmup:
                app.append(took)
                if rtt_us:  # none when the SYN was sent again
                    kernel.append(rtt_us / 1000)
        finally:
            sock.close()
        time.sleep(0.01)
    return Connects(kernel, app)


def bulk_bytes(path: NetworkPath, seconds: float = CALIBRATION_SECONDS) -> int:
    """A transfer that takes `seconds` at the set rate (fixed when none is set)."""
    return int(path.rate_mbit * 1e6 / 8 * seconds) if path.rate_mbit else UNLIMITED_BULK_BYTES


def _download(link: Link, size: int) -> tuple[int, float]:
    """Bytes received from the namespace and seconds from the first to the last."""
    with socket.create_connection((link.ns_addr, _probe_port(link)), timeout=30) as sock:
        sock.sendall(b"d" + struct.pack("!QI", size, int(BULK_TIME_LIMIT_S * 1000)))
        got, first, last = 0, 0.0, 0.0
        while True:
            part = sock.recv(262144)
            if not part:
                break
            now = time.perf_counter()
            first = first or now
            last, got = now, got + len(part)
    return got, last - first


def _upload(link: Link, size: int) -> tuple[int, float]:
    """Bytes the namespace received and its seconds from the first to the last."""
    with socket.create_connection((link.ns_addr, _probe_port(link)), timeout=30) as sock:
        sock.sendall(b"u")
        chunk, sent, end = b"\0" * 65536, 0, time.monotonic() + BULK_TIME_LIMIT_S
        while sent < size and time.monotonic() < end:
            sent += sock.send(chunk[:min(65536, size - sent)])
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while len(answer) < 16:
            part = sock.recv(16 - len(answer))
            if not part:
                raise RuntimeError("the probe closed without an answer")
            answer += part
    got, seconds = struct.unpack("!Qd", answer)
    return got, seconds


def _mbit(transfer: tuple[int, float]) -> float | None:
    got, seconds = transfer
    return round(got * 8 / seconds / 1e6, 2) if seconds > 0 else None


def _loss_counters(link: Link) -> dict[str, tuple[int, int]]:
    """Per direction: packets seen and dropped for loss, from the emulators or netem's qdiscs."""
    if link.emulators:
        counters = {e.direction: e.counters() for e in link.emulators}
        return {d: (int(c.get("received", 0)), int(c.get("dropped_loss", 0))) for d, c in counters.items()}
    if link.mechanism.startswith("netem") or "+netem" in link.mechanism:
        out = {}
        for direction, inside, dev in (("host_to_ns", False, link.host_if), ("ns_to_host", True, link.ns_if)):
            prefix = ["-n", link.namespace] if inside and link.namespace else []
            counts = qdisc_counts(_run(["tc", *prefix, "-s", "qdisc", "show", "dev", str(dev)]).stdout, "netem")
            if counts:
                out[direction] = (counts[0] + counts[1], counts[1])
        return out
    return {}


def _retransmits(link: Link) -> int | None:
    """TCP segments the namespace's side retransmitted (its own /proc/net/snmp)."""
    if link._probe is None:
        return None
    try:
        lines = [line.split() for line in Path(f"/proc/{link._probe.pid}/net/snmp").read_text().splitlines()
                 if line.startswith("Tcp:")]
        return int(lines[1][lines[0].index("RetransSegs")])
    except (OSError, ValueError, IndexError):
        return None


def calibrate(link: Link, connects: int = CONNECTS) -> dict[str, Any]:
    """Measure the path: the median of `connects` TCP connect round trips from
    the host to a listener where the services run (the kernel's measure of
    each handshake; `added_rtt_ms` less the bare veth's, measured before the
    shaping; `connect_app_ms` as the program saw it), a bulk transfer each way
    (goodput: payload bytes, from the first byte received to the last), and the
    packets dropped for loss. Kept in link.measured and returned."""
    link._cc = link.congestion_control()
    before, retrans_before = _loss_counters(link), None
    _probe_port(link)
    retrans_before = _retransmits(link)
    rtts = _connect_rtts(link, connects)
    size = bulk_bytes(link.path)
    up, down = _upload(link, size), _download(link, size)
    time.sleep(0.3)  # the emulators write their counters every 100 ms
    after, retrans_after = _loss_counters(link), _retransmits(link)
    median = statistics.median(rtts.kernel_ms)
    loss = {}
    for direction, (seen, dropped) in after.items():
        seen0, dropped0 = before.get(direction, (0, 0))
        packets, lost = seen - seen0, dropped - dropped0
        loss[direction] = {"packets": packets, "dropped": lost,
                           "pct": round(100 * lost / packets, 3) if packets else None}
    link.measured = {
        "connect_rtt_ms": round(median, 3),
        "connect_rtt_min_ms": round(min(rtts.kernel_ms), 3),
        "connect_app_ms": round(statistics.median(rtts.app_ms), 3),
        "base_rtt_ms": None if link.base_rtt_ms is None else round(link.base_rtt_ms, 3),
        "added_rtt_ms": None if link.base_rtt_ms is None else round(median - link.base_rtt_ms, 3),
        "up_mbit": _mbit(up), "down_mbit": _mbit(down), "bulk_bytes": {"up": up[0], "down": down[0]},
        "loss": loss,
        "retransmits_ns": None if retrans_before is None or retrans_after is None
        else retrans_after - retrans_before,
        "connects": connects, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return link.measured


# --- the command --------------------------------------------------------------------

COLUMNS = ("path", "set rtt", "set rate", "set loss", "connect rtt (added)", "up Mbit/s", "down Mbit/s",
           "loss counted", "mechanism")


def _cell(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}"


def table_row(described: dict[str, Any]) -> list[str]:
    s, m = described["set"], described["measured"] or {}
    rtt = _cell(m.get("connect_rtt_ms"), " ms")
    if m.get("added_rtt_ms") is not None:
        rtt += f" ({m['added_rtt_ms']:g})"
    loss = m.get("loss") or {}
    counted = ", ".join(f"{arrow} {loss[d]['dropped']}/{loss[d]['packets']}"
                        for d, arrow in (("host_to_ns", "up"), ("ns_to_host", "down"))
                        if d in loss and loss[d].get("packets")) or "-"
    return [described["path"], _cell(s["rtt_ms"] or None, " ms"), _cell(s["rate_mbit"], " Mbit/s"),
            _cell(s["loss_pct"] or None, " %"), rtt, _cell(m.get("up_mbit")), _cell(m.get("down_mbit")), counted,
            described["mechanism"]]


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(c) for c in column) for column in zip(COLUMNS, *rows, strict=False)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in (list(COLUMNS), *rows)]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.host.netpath",
                                     description="Set up each network path in turn, measure it, print a table.")
    parser.add_argument("paths", nargs="+", help="loopback, veth, or rtt<N>ms, <N>mbit, loss<N>pct joined by _")
    parser.add_argument("--json", type=Path, help="save the set and measured values here")
    parser.add_argument("--connects", type=int, default=CONNECTS, help="connects per round-trip median")
    args = parser.parse_args(argv)
    paths = [NetworkPath.parse(p) for p in args.paths]
    described = []
    for path in paths:
        with network_path(path) as link:
            calibrate(link, args.connects)
            described.append(link.describe())
        print(format_table([table_row(d) for d in described[-1:]]).splitlines()[-1], flush=True)
    print()
    print(format_table([table_row(d) for d in described]))
    if args.json:
        try:
            netem: bool | None = netem_available()
        except NetnsUnavailable:
            netem = None  # not root: loopback alone was measured
        args.json.write_text(json.dumps({"kernel": platform.release(), "netem": netem,
                                         "paths": described}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
