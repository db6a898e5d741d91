"""A new connection's setup, measured apart: TCP alone, TCP and a full TLS 1.3 handshake,
TCP and a full TLS 1.2 handshake, and each TLS version resumed (a session of the subject's
own from an earlier connection), per language's server:

    .venv/bin/python -m benchmarks.handshake [--connections 300] [--impl NAME ...]

The subjects are TLS variants (lab/axes.py, axis tls) of one implementation per language
(by default the first of each language that declares both versions; --impl names others,
their tls13 and tls12 variants are run). One lab runs them all; the connections are made
one at a time, interleaved: each round visits every (subject, kind) once, in a shuffled
order, so a moment of the shared machine lands on every kind alike. Each connection is
timed from connect() to the end of the handshake (for `tcp`: connect() alone, on the
tls13 subject's port), then closed; its bytes each way are the socket's own counters
(TCP_INFO tcpi_bytes_sent, tcpi_bytes_received: payload, no headers) at that moment,
so a TLS 1.3 server's session tickets, sent after its handshake, count where they have
arrived. Resumption: the session of a first, untimed connection, which has waited for
the server's tickets (a TLS 1.3 ticket arrives after the handshake), offered to every
`resumed` connection (its row counts those the server did resume).

Printed per subject and kind: the median in µs with its 95 % interval, and the median
bytes each way; written to results/handshake-<date>.json (kind "handshake"). With
SSLKEYLOGFILE set, the lab's Python clients (ssl.create_default_context) write every
connection's secrets there, for a wire capture to decrypt (tshark -o tls.keylog_file:...).
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import socket
import ssl
import struct
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from benchmarks.study import save
from lab import registry, settings, tls
from lab.running import Lab
from lab.stack import running_lab
from lab.stats.statistics import median_ci95, percentile

KINDS = ("tcp", "full", "resumed")
VALUES = ("tls13", "tls12")
# struct tcp_info (linux/tcp.h): tcpi_bytes_received at byte 128, tcpi_bytes_sent (Linux >= 4.19) at 200.
TCP_INFO_BYTES = 208
RECEIVED_AT, SENT_AT = 128, 200


def default_implementations() -> list[str]:
    """The first implementation of each language (registry order) declaring both TLS versions."""
    chosen = registry.first_of_each(
        (i for i in registry.bases() if set(VALUES) <= set(dict(i.supported).get("tls", ())) and not i.missing()
         and i.serves("health")),
        key=lambda i: i.language)
    return list(chosen.values())


def subjects(implementations: Sequence[str]) -> list[str]:
    return [f"{name}+{value}" for name in implementations for value in VALUES]


def counters(sock: socket.socket) -> tuple[int, int]:
    """(payload bytes sent, received) of the connection so far, from the kernel."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES)
    if len(info) < TCP_INFO_BYTES:
        return -1, -1
    (received,) = struct.unpack_from("Q", info, RECEIVED_AT)
    (sent,) = struct.unpack_from("Q", info, SENT_AT)
    return sent, received


class Dialer:
    """New connections to one subject: TCP alone, a full handshake, a resumed one."""

    def __init__(self, endpoint: str, alpn: str):
        parts = urlsplit(endpoint if "://" in endpoint else f"tcp://{endpoint}")
        assert parts.hostname and parts.port, endpoint
        self.host, self.port = parts.hostname, parts.port
        self.context = ssl.create_default_context(cafile=str(tls.ca_file()))
        self.context.set_alpn_protocols([alpn])
        self.session: ssl.SSLSession | None = None

    def one(self, kind: str, timeout: float = 10.0) -> dict[str, Any]:
        start = time.perf_counter()
        raw = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if kind == "tcp":
                elapsed = time.perf_counter() - start
                sent, received = counters(raw)
                return {"s": elapsed, "sent": sent, "received": received, "reused": False}
            session = self.session if kind == "resumed" else None
            wrapped = self.context.wrap_socket(raw, server_hostname=self.host, session=session)
        except BaseException:
            raw.close()
            raise
        with wrapped:
            elapsed = time.perf_counter() - start
            sent, received = counters(wrapped)
            row = {"s": elapsed, "sent": sent, "received": received, "reused": wrapped.session_reused,
                   "version": wrapped.version(), "cipher": wrapped.cipher()[0]}
            if self.session is None:
                self._keep_session(wrapped)
            return row

    def _keep_session(self, wrapped: ssl.SSLSocket) -> None:
        """Read one reply on the connection (a TLS 1.3 server sends its tickets after the
        handshake, OpenSSL takes them in as it reads), then keep its session."""
        try:
            wrapped.settimeout(0.3)
            wrapped.recv(1)  # nothing asked: times out, having read the tickets that came
        except (TimeoutError, ssl.SSLError, OSError):
            pass
        self.session = wrapped.session


def _alpn(subject: str) -> str:
    # the same ALPN the lab's own client of that protocol offers: h2 where the protocol runs on HTTP/2
    return "h2" if registry.variant(subject).endpoint == "{host}:{port}" else "http/1.1"


def measure(lab: Lab, names: Sequence[str], connections: int, seed: int = 1) -> dict[str, Any]:
    """`connections` of every kind to every subject in `names`, interleaved."""
    dialers = {name: Dialer(lab.endpoints[name], _alpn(name)) for name in names}
    for dialer in dialers.values():  # a session to resume from, and one untimed connection of each kind
        for kind in ("full", *KINDS):
            dialer.one(kind)
    plan = [(name, kind) for name in names for kind in KINDS if kind != "tcp" or name.endswith("+tls13")]
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {p: [] for p in plan}
    shuffle = random.Random(seed)
    for _ in range(connections):
        order = list(plan)
        shuffle.shuffle(order)
        for name, kind in order:
            rows[(name, kind)].append(dialers[name].one(kind))
    out = []
    for (name, kind), found in rows.items():
        times = sorted(r["s"] for r in found)
        low, high = median_ci95(times)
        impl = lab.implementation(name)
        out.append({
            "subject": name, "base": impl.base, "language": impl.language, "server": impl.server,
            "tls": dict(impl.values)["tls"], "kind": kind if kind == "tcp" else f"{dict(impl.values)['tls']}-{kind}",
            "connections": len(found), "median_us": percentile(times, 0.5) * 1e6,
            "median_ci95_us": [low * 1e6, high * 1e6], "p95_us": percentile(times, 0.95) * 1e6,
            "bytes_sent": percentile(sorted(r["sent"] for r in found), 0.5),
            "bytes_received": percentile(sorted(r["received"] for r in found), 0.5),
            "reused": sum(1 for r in found if r["reused"]),
            "versions": sorted({r["version"] for r in found if "version" in r}),
            "ciphers": sorted({r["cipher"] for r in found if "cipher" in r})})
    return {"connections": connections, "seed": seed, "rows": out}


def table(found: dict[str, Any]) -> str:
    lines = [f"{'subject':<28} {'kind':<14} {'median µs':>10} {'95 % interval':>18} {'sent B':>8} {'recv B':>8}"
             f" {'resumed':>8}"]
    for r in found["rows"]:
        low, high = r["median_ci95_us"]
        lines.append(f"{r['subject']:<28} {r['kind']:<14} {r['median_us']:>10.0f} {low:>8.0f} – {high:<7.0f}"
                     f" {r['bytes_sent']:>8.0f} {r['bytes_received']:>8.0f} {r['reused']:>4}/{r['connections']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.handshake", description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=300, help="of each kind to each subject")
    parser.add_argument("--impl", nargs="+", metavar="NAME",
                        help="implementations whose tls13 and tls12 variants are measured "
                             "(default: the first of each language that declares both)")
    args = parser.parse_args(argv)
    if settings.mode() != "native":
        parser.error("native mode only (Docker mode leaves the TLS subjects out: lab/axes.py)")
    names = subjects(args.impl or default_implementations())
    settings.measuring()
    out: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "subjects": names, "load_before": os.getloadavg()}
    with running_lab(names) as lab:
        out.update(measure(lab, names, args.connections))
    out["load_after"] = os.getloadavg()
    print(table(out))
    save("handshake", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
