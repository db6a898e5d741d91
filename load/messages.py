"""The echo and broadcast tests (a WebSocket library comparison's) on the lab's Go load client
(load/push-client -mode echo | broadcast), so that the receivers and echo
clients are one compiled process with a goroutine each, not greenlets in one
Python process: its own CPU is measured beside the limit that makes a run
invalid (CLIENT_BOUND of its CPUs, as the push instrument's).

The framing (the lab's WebSocket protocol or socket.io's) is the protocol
descriptor's `message_framing` (clients/protocols.py).

- echo: `clients` connections; once every one has connected (or its time to
  connect has passed), each a closed loop (send, wait for the echo, send
  again) for a warm-up and the window; the figures are over
  the window: round trips (ms: mean, sd, percentiles), messages/s, each
  connection's time to ready (ms), the client's, the service's and the
  machine's CPU.
- broadcast: `receivers` connections and one sender; BROADCASTS broadcasts
  INTERVAL_MS apart once every receiver has connected; latency = receive time
  − the send time in the payload (µs, one machine's clock). Only broadcasts
  delivered to every connected receiver count; the client's CPU is its
  busiest broadcast's (its CPU from the send to the last receipt over that
  span; `client_cpu_over` says so; before 2026-12-03 the CPU ran to the next
  send): at or over the limit, the receivers, not the server, set the latency.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from clients.protocols import get
from lab.host import pinning
from lab.resources import rss_bytes
from load import push

BROADCASTS = 10        # per run (the study: one every 3 s over 60 s)
INTERVAL_MS = 1000
CONNECT_S_PER_CLIENT = 0.02   # the time allowed for every receiver to connect, 10 s at least


def connect_allowance(clients: int) -> float:
    """The time each client has to connect (s): 10 s, or CONNECT_S_PER_CLIENT each beyond 500."""
    return max(10.0, CONNECT_S_PER_CLIENT * clients)


def framing(protocol: str) -> str:
    f = get(protocol).message_framing
    if not f:
        raise ValueError(f"{protocol}: the Go load client has no echo or broadcast framing for it "
                         "(its descriptor's message_framing)")
    return f


def _limit(x: push.Executed) -> float:
    return round(100 * push.CLIENT_BOUND * x.client_cores, 1)


def echo(endpoint: str, protocol: str, server_pid: int, clients: int, warmup: float, seconds: float,
         pins: pinning.Pinning, payload: Any) -> dict[str, Any]:
    """One echo run: the row a study's scenario keeps (ms, messages/s, CPU %)."""
    with tempfile.TemporaryDirectory(prefix="echo-raw-") as tmp:
        argv = [str(push.push_client()), "-url", endpoint, "-mode", "echo", "-framing", framing(protocol),
                "-clients", str(clients), "-seconds", str(seconds), "-warmup", str(warmup),
                "-connect-seconds", str(connect_allowance(clients)),
                "-payload", json.dumps(payload, separators=(",", ":")), "-out", str(Path(tmp) / "raw.csv")]
        load = os.getloadavg()[0]
        x = push.execute(argv, server_pid, pins, signalled=True)
    s = x.summary
    lat, con = s["latency_ms"], s["connect_ms"]
    reasons = []
    if s["errors"]:
        reasons.append(f"{s['errors']} errors {s['errors_by_kind']}" + (f": {x.causes[0]}" if x.causes else ""))
    if s["receiving_clients"] < clients:
        reasons.append(f"{clients - s['receiving_clients']} of {clients:,} clients got no echo")
    if con["count"] < clients:
        reasons.append(f"{clients - con['count']} of {clients:,} clients never connected")
    if x.client_bound:
        reasons.append(f"the echo clients used {x.client_cpu_percent:.0f} % CPU, at or over their limit "
                       f"{_limit(x):.0f} % ({push.CLIENT_BOUND:.0%} of {x.client_cores} CPUs): the client set the pace")
    return {"client": "go", "connect_ms": {"mean": con["mean"] if con["count"] else None, "p50": con["median"],
                                            "stddev": con["stddev"], "p99": con["p99"], "max": con["max"],
                                            "count": con["count"]},
            "rtt_ms": {"mean": lat["mean"] if s["messages"] else None, "p50": lat["p50"], "stddev": lat["sd"],
                       "p99": lat["p99"], "max": lat["max"], "count": s["messages"]},
            "messages_per_s": s["events_per_s"], "errors": s["errors_by_kind"], "valid": not reasons,
            "invalid_reasons": reasons, "window_s": seconds, "warmup_s": warmup,
            "service_cpu_percent": x.server_cpu_percent, "client_cpu_percent": x.client_cpu_percent,
            "client_cpu_limit_percent": _limit(x), "client_cpus": x.client_cores,
            "machine_cpu_percent": x.machine_cpu_percent, "service_rss_bytes": rss_bytes(server_pid),
            "load_average_1m": round(load, 2)}


def broadcast(endpoint: str, protocol: str, server_pid: int, receivers: int, pins: pinning.Pinning,
              broadcasts: int = BROADCASTS, interval_ms: int = INTERVAL_MS) -> dict[str, Any]:
    """One broadcast run: latency (ms: count, mean, median, σ, min, max), connection time, lost
    receipts, per broadcast its delivery and the receivers' CPU."""
    allowance = connect_allowance(receivers)
    with tempfile.TemporaryDirectory(prefix="broadcast-raw-") as tmp:
        argv = [str(push.push_client()), "-url", endpoint, "-mode", "broadcast", "-framing", framing(protocol),
                "-clients", str(receivers), "-broadcasts", str(broadcasts), "-interval-ms", str(interval_ms),
                "-warmup", str(allowance), "-out", str(Path(tmp) / "raw.csv")]
        load = os.getloadavg()[0]
        started = time.monotonic()
        x = push.execute(argv, server_pid, pins)
    s = x.summary
    sent = s["broadcasts"]
    full = [b for b in sent if b["delivered"] >= s["connected"]]
    busiest = s["client_cpu_percent"]
    limit = _limit(x)
    reasons = []
    if s["connected"] < receivers:
        reasons.append(f"{receivers - s['connected']} of {receivers:,} receivers never connected")
    if len(full) < broadcasts:
        reasons.append(f"{len(full)} of {broadcasts} broadcasts reached every receiver "
                       f"(delivered: {[b['delivered'] for b in sent]})")
    if s["lost"]:
        reasons.append(f"{s['lost']} receipts of delivered broadcasts missing")
    if s["errors"]:
        reasons.append(f"{s['errors']} errors {s['errors_by_kind']}" + (f": {x.causes[0]}" if x.causes else ""))
    if busiest >= limit:
        reasons.append(f"the receivers used {busiest:.0f} % CPU while a broadcast was delivered, at or over their "
                       f"limit {limit:.0f} %: the receivers set the latency")
    lat = s["latency_ms"]
    return {"client": "go", "broadcasts": len(full), "per_broadcast": sent,
            "latency_ms": {k: (lat[k] if lat["count"] else None) for k in
                           ("count", "mean", "median", "stddev", "min", "p99", "max")} | {"count": lat["count"]},
            "connect_ms": s["connect_ms"], "lost": s["lost"], "errors": s["errors_by_kind"],
            "valid": not reasons, "invalid_reasons": reasons, "receivers": receivers, "senders": 1,
            "interval_ms": interval_ms, "wall_s": round(time.monotonic() - started, 2),
            "client_cpu_percent": busiest, "client_cpu_limit_percent": limit, "client_cpus": x.client_cores,
            "client_cpu_over": s.get("client_cpu_over", "the send to the next send"),
            "client_cpu_percent_run": x.client_cpu_percent, "service_cpu_percent": x.server_cpu_percent,
            "machine_cpu_percent": x.machine_cpu_percent, "service_rss_bytes": rss_bytes(server_pid),
            "load_average_1m": round(load, 2)}
