"""Record TCP traffic with tshark and count the bytes per direction and phase.

Recording::

    with Capture([port]) as cap:          # tshark on "lo", filter "tcp port P"
        ...workload...
    cap.packets                           # list[Packet], read back with tshark -r

`Capture(ports, interface="lo", snaplen=None, path=None, marker_host="127.0.0.1",
timeout=30.0)` starts `tshark -w FILE.pcapng` with the capture filter
`tcp port P or ...`.  It is *synchronised* at both ends with marker datagrams:
UDP packets carrying a unique token are sent through the captured interface
(the filter also admits their port) until tshark prints them back.  So
`__enter__` returns only once packets really reach the file (tshark's
"Capturing on" line comes ~0.2 s early), and `__exit__` stops tshark (SIGINT,
by PID) only after everything sent before the end marker has been written --
a bare SIGINT loses packets still sitting in libpcap's buffer.  The markers are
UDP over IPv4, sent to `marker_host`, which must be reached through
`interface` (127.0.0.1 for lo, `VethLink.ns_addr` for a veth); they are dropped
when reading.  Each sync costs ~0.5-1 s (libpcap's buffer timeout), and tshark
dissects packets live meanwhile, so do not time a benchmark while capturing.
After the block, `cap.packets` holds the TCP packets and
`cap.path` the pcapng (deleted afterwards unless `path` was given).

The workload must be quiet before the block ends: a connection's FIN/ACK
exchange or a delayed ACK still to come is not waited for.

Reading (`read_packets(path)`) uses `tshark -r -T fields`; nothing here parses
packets by hand.  Each `Packet` gets a `kind` from `classify`:

- `SETUP`: SYN, SYN-ACK and the handshake's final pure ACK;
- `DATA`: any packet with TCP payload (also a FIN that carries data);
- `ACK`: pure ACKs (window updates, delayed ACKs) while the connection is open;
- `TEARDOWN`: FIN and RST without payload, and every payload-less packet of
  the stream after its first FIN/RST.

Accounting: `tally(packets, server_port) -> Split` with `to_server` and
`to_client` `Tally(frames, frame_bytes, payload_bytes)`; `by_kind(...)` gives a
`Split` per kind (`Split.total`, `Split + Split`, `Tally.per(n)` for averages);
`streams(packets)` groups by `tcp.stream`; `between(packets,
t0, t1)` keeps packets stamped within two `time.time()` readings (same clock as
the capture's timestamps).  Per-operation costs: run N operations on one open
connection and divide the DATA+ACK split by N; or one connection per
operation and look at each stream.  Time slices are exact for payload but may
gain or lose a delayed pure ACK at their edges; slicing by stream is exact.

Frame bytes on Linux loopback: the MTU is 65,536 and every frame carries a fake
14-byte Ethernet header (LOOPBACK_LINK_HEADER), so frame bytes = TCP payload +
14 + IP header (20; 40 for IPv6) + TCP header (20 + options: 32 with
timestamps, 40 on SYNs; 20 on a RST answering a segment for a closed socket).
For real Ethernet segmentation see `lab.host.netns`.
"""

from __future__ import annotations

import bisect
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Self

from lab.host.tools import ToolMissing, apt_tool
from lab.processes import terminate

LOOPBACK_MTU = 65536
BUFFER_MIB = 128   # the capture buffer (tshark -B)
# Linux "lo" is DLT_EN10MB: each frame starts with a fake all-zero 14-byte
# Ethernet header that never exists on any wire.
LOOPBACK_LINK_HEADER = 14
ETHERNET_HEADER = 14
LOOPBACK_NOTE = (
    "Captured on Linux loopback: MTU 65,536 (large messages are not segmented "
    "as on Ethernet) and each frame carries a fake 14-byte Ethernet header."
)

SETUP, DATA, ACK, TEARDOWN = "setup", "data", "ack", "teardown"
KINDS = (SETUP, DATA, ACK, TEARDOWN)


class CaptureError(RuntimeError):
    pass


def ensure_tshark() -> str:
    """Path of tshark; installs Debian's package when missing and we are root (lab.host.tools.apt_tool)."""
    try:
        # Answer the one debconf question up front so the install never prompts.
        return apt_tool("tshark", "tshark", debconf=b"wireshark-common wireshark-common/install-setuid boolean false\n")
    except ToolMissing as exc:
        raise CaptureError(str(exc)) from None


@dataclass(frozen=True)
class Packet:
    number: int
    time: float          # epoch seconds, comparable with time.time()
    frame_len: int       # bytes on the link, link-layer header included
    stream: int          # tshark's tcp.stream index
    src_port: int
    dst_port: int
    payload: int         # tcp.len: TCP payload bytes
    ip_header: int
    tcp_header: int      # 20 + options
    syn: bool
    ack: bool
    fin: bool
    rst: bool
    kind: str = DATA
    seq: int = 0         # tcp.seq, relative: where this payload sits in its direction's byte stream

    @property
    def link_header(self) -> int:
        return self.frame_len - self.ip_header - self.tcp_header - self.payload


PACKET_FIELDS = ("frame.number", "frame.time_epoch", "frame.len", "tcp.stream", "tcp.srcport",
           "tcp.dstport", "tcp.len", "ip.hdr_len", "tcp.hdr_len", "tcp.flags.syn",
           "tcp.flags.ack", "tcp.flags.fin", "tcp.flags.reset", "tcp.seq")


def _flag(text: str) -> bool:
    return text in ("1", "True")  # tshark 4.0 prints 1/0, later versions True/False


def read_timeout(path: str | Path, floor_s: float = 300.0, per_mb_s: float = 4.0) -> float:
    """How long a reading of the file may take: 5 minutes, or 4 s a megabyte of it when it is larger
    (the payload axis' 1,000-game replies make captures of hundreds of megabytes)."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        return floor_s
    return max(floor_s, per_mb_s * size / 1e6)


def read_packets(path: str | Path) -> list[Packet]:
    """The TCP packets of a capture file, in capture order, classified."""
    argv = [ensure_tshark(), "-n", "-r", str(path), "-Y", "tcp && !icmp && !icmpv6",
            "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]
    for name in PACKET_FIELDS:
        argv += ["-e", name]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=read_timeout(path))
    if done.returncode:
        raise CaptureError(f"tshark -r {path} failed: {done.stderr.strip()}")
    return classify([packet(line.split("\t")) for line in done.stdout.splitlines()])


def packet(values: Sequence[str]) -> Packet:
    """A Packet from the values of PACKET_FIELDS as tshark printed them (each its first occurrence)."""
    (number, stamp, frame_len, stream, src, dst, payload, ip_hdr, tcp_hdr,
     syn, ack, fin, rst, seq) = values
    return Packet(number=int(number), time=float(stamp), frame_len=int(frame_len),
                  stream=int(stream), src_port=int(src), dst_port=int(dst), payload=int(payload),
                  ip_header=int(ip_hdr) if ip_hdr else 40,  # no ip.hdr_len: IPv6, fixed 40
                  tcp_header=int(tcp_hdr), syn=_flag(syn), ack=_flag(ack), fin=_flag(fin),
                  rst=_flag(rst), seq=int(seq or 0))


def classify(packets: Iterable[Packet]) -> list[Packet]:
    """Set each packet's kind (SETUP/DATA/ACK/TEARDOWN); needs whole streams in order."""
    handshake_ack_from: dict[int, int] = {}  # stream -> client port, until its ACK is seen
    closing: set[int] = set()
    out = []
    for p in packets:
        if p.syn:
            kind = SETUP
            if p.ack:  # SYN-ACK: the client's next pure ACK completes the handshake
                handshake_ack_from[p.stream] = p.dst_port
        elif p.payload:
            kind = DATA
            handshake_ack_from.pop(p.stream, None)
        elif p.fin or p.rst or p.stream in closing:
            kind = TEARDOWN
        elif handshake_ack_from.get(p.stream) == p.src_port:
            kind = SETUP
            del handshake_ack_from[p.stream]
        else:
            kind = ACK
        if p.fin or p.rst:
            closing.add(p.stream)
        out.append(replace(p, kind=kind))
    return out


@dataclass(frozen=True)
class Tally:
    frames: int = 0
    frame_bytes: int = 0
    payload_bytes: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.frames + other.frames, self.frame_bytes + other.frame_bytes,
                     self.payload_bytes + other.payload_bytes)

    def per(self, n: int) -> dict[str, float]:
        return {"frames": self.frames / n, "frame_bytes": self.frame_bytes / n,
                "payload_bytes": self.payload_bytes / n}


@dataclass(frozen=True)
class Split:
    to_server: Tally = Tally()
    to_client: Tally = Tally()

    @property
    def total(self) -> Tally:
        return self.to_server + self.to_client

    def __add__(self, other: Split) -> Split:
        return Split(self.to_server + other.to_server, self.to_client + other.to_client)


def _one(p: Packet) -> Tally:
    return Tally(1, p.frame_len, p.payload)


def tally(packets: Iterable[Packet], server_port: int) -> Split:
    """Frames, frame bytes and payload bytes per direction; other ports are ignored."""
    up, down = Tally(), Tally()
    for p in packets:
        if p.dst_port == server_port:
            up += _one(p)
        elif p.src_port == server_port:
            down += _one(p)
    return Split(up, down)


def distinct_payload(packets: Iterable[Packet], server_port: int) -> tuple[int, int]:
    """(to the server, to the client): payload bytes counted once per position in
    each connection's byte stream. A retransmitted segment is on the wire twice
    (tally counts it twice, as bytes on the wire); here it counts once."""
    spans: dict[tuple[int, bool], list[tuple[int, int]]] = {}
    for p in packets:
        if p.payload and server_port in (p.src_port, p.dst_port):
            spans.setdefault((p.stream, p.dst_port == server_port), []).append((p.seq, p.seq + p.payload))
    out = {True: 0, False: 0}
    for (_, up), ranges in spans.items():
        end = None
        for low, high in sorted(ranges):
            start = low if end is None else max(low, end)
            if high > start:
                out[up] += high - start
            end = high if end is None else max(end, high)
    return out[True], out[False]


def first_copies(packets: Iterable[Packet]) -> list[Packet]:
    """The packets less retransmissions: a segment whose sequence numbers (its
    payload, and a SYN's or FIN's one each) its sender had all sent before on
    that connection is the same bytes on the wire again, and is left out. Pure
    ACKs stay. Counted over what is left, each stream byte and each SYN and FIN
    is there once, as the connection's two ends count them."""
    sent: dict[tuple[int, int], list[tuple[int, int]]] = {}  # per direction: merged, sorted spans
    out = []
    for p in packets:
        span = p.payload + p.syn + p.fin
        if span:
            spans = sent.setdefault((p.stream, p.src_port), [])
            low, high = p.seq, p.seq + span
            if any(a <= low and high <= b for a, b in spans):
                continue
            merged = [(a, b) for a, b in spans if b < low or a > high]
            inside = [(a, b) for a, b in spans if not (b < low or a > high)]
            merged.append((min([low, *(a for a, _ in inside)]), max([high, *(b for _, b in inside)])))
            spans[:] = sorted(merged)
        out.append(p)
    return out


def by_kind(packets: Iterable[Packet], server_port: int) -> dict[str, Split]:
    """A Split for each of KINDS (zero when absent)."""
    packets = list(packets)
    return {k: tally([p for p in packets if p.kind == k], server_port) for k in KINDS}


def streams(packets: Iterable[Packet]) -> dict[int, list[Packet]]:
    """Packets grouped by TCP connection (tcp.stream), in capture order."""
    out: dict[int, list[Packet]] = {}
    for p in packets:
        out.setdefault(p.stream, []).append(p)
    return out


def missing_bytes(packets: Iterable[Packet]) -> int:
    """Payload bytes the capture lost: per connection and direction, the sequence span its data
    packets cover less the payload they carry (a retransmission counts twice, so a loss hidden by
    one is not seen; a gap is)."""
    spans: dict[tuple[int, int, int], list[int]] = {}
    for p in packets:
        if p.payload <= 0:
            continue
        key = (p.stream, p.src_port, p.dst_port)
        low, high, carried = spans.get(key, [p.seq, p.seq + p.payload, 0])
        spans[key] = [min(low, p.seq), max(high, p.seq + p.payload), carried + p.payload]
    return sum(max(0, high - low - carried) for low, high, carried in spans.values())


def between(packets: Iterable[Packet], start: float, end: float) -> list[Packet]:
    """Packets stamped within [start, end] (time.time() values)."""
    return [p for p in packets if start <= p.time <= end]


class Timeline:
    """`between` for many windows over one list of packets: the packets ordered by time once, each window
    found by bisection (a capture of ~700 windows over some 10^5 packets scanned them all per window),
    its packets returned in the list's order, as `between` returns them."""

    def __init__(self, packets: Sequence[Packet]):
        self.packets = packets
        self.order = sorted(range(len(packets)), key=lambda i: packets[i].time)
        self.times = [packets[i].time for i in self.order]

    def between(self, start: float, end: float) -> list[Packet]:
        lo, hi = bisect.bisect_left(self.times, start), bisect.bisect_right(self.times, end)
        return [self.packets[i] for i in sorted(self.order[lo:hi])]


class Capture:
    """tshark recording TCP traffic on `ports` to a pcapng; see the module docstring."""

    def __init__(self, ports: Sequence[int], interface: str = "lo", *,
                 snaplen: int | None = None, path: str | Path | None = None,
                 marker_host: str = "127.0.0.1", timeout: float = 30.0, read: bool = True):
        if not ports:
            raise ValueError("Capture needs at least one port")
        self.ports = list(ports)
        self.interface = interface
        self.snaplen = snaplen
        self.marker_host = marker_host  # reached through `interface`
        self.timeout = timeout
        self.read = read  # False: stop() leaves the file to the caller (capture.dissect.read: one pass)
        self._tmpdir: str | None = None
        if path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="protolab-capture-")
            path = Path(self._tmpdir) / "capture.pcapng"
        self.path = Path(path)
        self.packets: list[Packet] = []
        self._proc: subprocess.Popen[str] | None = None
        self._marker: socket.socket | None = None
        self._lines: queue.Queue[str] = queue.Queue()
        self._stderr: list[str] = []
        self._token = uuid.uuid4().hex

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self._kill()
            self._remove_tmpdir()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.stop()
        else:
            self._kill()
            self._remove_tmpdir()

    def start(self) -> None:
        tshark = ensure_tshark()
        self._marker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._marker.bind(("127.0.0.1" if self.marker_host.startswith("127.") else "", 0))
        marker_port = self._marker.getsockname()[1]
        tcp = " or ".join(f"tcp port {int(p)}" for p in self.ports)
        argv = [tshark, "-n", "-i", self.interface, "-f", f"({tcp}) or udp port {marker_port}",
                "-w", str(self.path),
                # -P -l: also print each packet's UDP payload at once, to see markers.
                "-P", "-l", "-T", "fields", "-e", "udp.payload"]
        if self.snaplen:
            argv += ["-s", str(self.snaplen)]
        # The kernel's capture buffer: at its default (2 MiB) a loaded machine lost segments of the
        # payload axis' 1.7 MB replies on loopback (2026-12-03, load average 25-45; sequence gaps).
        argv += ["-B", str(BUFFER_MIB)]
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        started = threading.Event()
        threading.Thread(target=self._read_stdout, args=(self._proc,), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self._proc, started),
                         daemon=True).start()
        deadline = time.monotonic() + self.timeout
        while not started.wait(0.05):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise CaptureError(f"tshark did not start capturing: {self._why()}")
        self._sync("start", deadline)

    def stop(self) -> list[Packet]:
        """Wait until all earlier packets are written, stop tshark, read the file."""
        if self._proc is None:
            return self.packets
        try:
            self._sync("end", time.monotonic() + self.timeout)
            self._proc.send_signal(signal.SIGINT)  # tshark closes the file cleanly
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
                raise CaptureError(f"tshark did not stop on SIGINT: {self._why()}") from None
        finally:
            self._kill()
        try:
            if self.read:
                self.packets = read_packets(self.path)
        finally:
            if self.read:
                self._remove_tmpdir()
        return self.packets

    def _remove_tmpdir(self) -> None:
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _kill(self) -> None:
        """Stop our tshark (by PID) if still running; close the marker socket."""
        proc, self._proc = self._proc, None
        if proc is not None:
            terminate(proc, 5.0)
        if self._marker is not None:
            self._marker.close()
            self._marker = None

    def _sync(self, label: str, deadline: float) -> None:
        """Send a marker datagram until tshark reports it, i.e. it is in the file."""
        assert self._proc is not None and self._marker is not None
        token = f"protolab-capture {self._token} {label}".encode()
        want = token.hex()
        port = self._marker.getsockname()[1]
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise CaptureError(f"tshark exited: {self._why()}")
            self._marker.sendto(token, (self.marker_host, port))
            resend = time.monotonic() + 0.1
            while (left := resend - time.monotonic()) > 0:
                try:
                    if self._lines.get(timeout=left).strip() == want:
                        return
                except queue.Empty:
                    break
        raise CaptureError(f"tshark never saw its {label} marker on {self.interface}: "
                           f"{self._why()}")

    def _read_stdout(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip():  # TCP packets print empty lines
                self._lines.put(line)

    def _read_stderr(self, proc: subprocess.Popen[str], started: threading.Event) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr.append(line.rstrip())
            if "Capturing on" in line:
                started.set()

    def _why(self) -> str:
        code = self._proc.poll() if self._proc else None
        tail = "\n".join(self._stderr[-10:])
        return f"exit status {code}; stderr:\n{tail}" if code is not None else tail
