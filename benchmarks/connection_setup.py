"""A new connection's setup apart from the steady-state call, per protocol, across network paths:

    .venv/bin/python -m benchmarks.connection_setup [--paths veth,rtt1ms,rtt20ms,rtt100ms] [--impl NAME ...]
                                                    [--operation fetch-1] [--rounds 30]

The subjects: one implementation per protocol (lab.registry.one_per_protocol: the Go one where
there is one, as the sweep's), `--impl` names others. Each path in turn gets its own lab (the
database and the services beyond the path: lab/stack.py running_lab(path=...)), measured before
use; its set and measured round trip go into the result beside the figures. Per round every
subject is visited once for each of three kinds, in a shuffled order (a moment of the shared
machine lands on every kind alike):

- `tcp`: connect() alone to the service's port, then closed (the kernel's own round trip of that
  handshake, TCP_INFO tcpi_rtt, is kept beside it);
- `new`: the protocol's client made by its library (where the library sets its connection up
  then: a WebSocket upgrade, an HTTP/2 preface and SETTINGS, a messaging library's own
  handshake; an HTTP/1.1 client connects on its first call), then its first call (the
  operation); both timed apart and together; the client is then closed, untimed;
- `steady`: the same call on a client of the subject's kept open since the start and warmed.

Per subject and path: each kind's median with its 95 % interval (order statistics), and the
**setup** = new − steady and **beyond TCP** = new − steady − tcp, each the median of the per-round
differences (paired by round) with its 95 % interval; on a path with a round trip set, setup in
round trips of the measured one. Written to results/setup/connection-setup-<date>.json and
-latest.json (kind "connection-setup"). Nothing here knows a protocol: each client's library
does its own setup.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from lab import registry, settings, workload
from lab import results as lab_results
from lab.axes import NetworkPath
from lab.context import host_context
from lab.host.netpath import TCP_INFO_RTT
from lab.running import Lab
from lab.stack import running_lab
from lab.stats.statistics import median_ci95, percentile

KINDS = ("tcp", "new", "steady")
DEFAULT_PATHS = ("veth", "rtt1ms", "rtt20ms", "rtt100ms")
DEFAULT_OPERATION = "fetch-1"   # the sweep's path slice measures fetch-1 and fetch-100 steady
WARM_ROUNDS = 2                 # untimed rounds first: each kind's first connections warm caches
WARMUP_MAX_S = 10.0             # a kept client's warm-up calls (its manifest's count) take at most this
RESULTS = settings.RESULTS / "setup"
NAME = "connection-setup"


def host_port(endpoint: str) -> tuple[str, int]:
    """The host and port a client of `endpoint` dials ("http://h:p/x", "ws://h:p/x" or "h:p")."""
    parts = urlsplit(endpoint if "://" in endpoint else f"tcp://{endpoint}")
    if not parts.hostname or not parts.port:
        raise ValueError(f"no host and port in {endpoint!r}")
    return parts.hostname, parts.port


def connect_once(host: str, port: int, timeout: float = 10.0) -> tuple[float, float | None]:
    """One TCP connect: (seconds connect() took, the kernel's round trip of its handshake in ms or None)."""
    start = time.perf_counter()
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        took = time.perf_counter() - start
        rtt_us = TCP_INFO_RTT.unpack(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_RTT.size))[0]
        return took, (rtt_us / 1000 if rtt_us else None)
    finally:
        sock.close()


def new_connection(make: Callable[[], Any], operation: workload.Operation) -> tuple[float, float]:
    """A client made and its first call: (seconds to make it, seconds its first call took)."""
    start = time.perf_counter()
    client = make()
    try:
        made = time.perf_counter()
        result = operation.call(client)()
        done = time.perf_counter()
    finally:
        client.close()
    operation.check(result)
    return made - start, done - made


def steady_call(call: Callable[[], Any], operation: workload.Operation) -> float:
    start = time.perf_counter()
    result = call()
    took = time.perf_counter() - start
    operation.check(result)
    return took


def interval_ms(values_s: Sequence[float]) -> dict[str, Any]:
    """The median in ms of per-round values in s, with its 95 % interval."""
    ordered = sorted(values_s)
    low, high = median_ci95(ordered)
    return {"median_ms": percentile(ordered, 0.5) * 1e3, "ci95_ms": [low * 1e3, high * 1e3], "n": len(ordered)}


def summarize(samples: dict[str, list[float]], rtt_ms: float | None) -> dict[str, Any]:
    """One subject's figures on one path from its per-round samples (s): each kind's median, the
    setup (new - steady) and what lies beyond TCP (new - steady - tcp), paired by round, and the
    setup in round trips of the path (`rtt_ms`, its measured round trip; None: not stated)."""
    new = [m + f for m, f in zip(samples["made"], samples["first"], strict=True)]
    setup = [n - s for n, s in zip(new, samples["steady"], strict=True)]
    beyond = [d - t for d, t in zip(setup, samples["tcp"], strict=True)]
    out = {"tcp": interval_ms(samples["tcp"]), "made": interval_ms(samples["made"]),
           "first_call": interval_ms(samples["first"]), "new": interval_ms(new),
           "steady": interval_ms(samples["steady"]), "setup": interval_ms(setup), "beyond_tcp": interval_ms(beyond)}
    kernel = [r for r in samples.get("kernel_rtt_ms", []) if r is not None]
    out["tcp_kernel_rtt_ms"] = percentile(sorted(kernel), 0.5) if kernel else None
    if rtt_ms:
        out["in_round_trips"] = {k: out[k]["median_ms"] / rtt_ms for k in ("tcp", "setup", "beyond_tcp", "steady",
                                                                           "new")}
    return out


def measure(lab: Lab, names: Sequence[str], operation: workload.Operation, rounds: int, seed: int = 1,
            warm_rounds: int = WARM_ROUNDS) -> dict[str, dict[str, list[float]]]:
    """`rounds` rounds over every subject in `names` and every kind, interleaved; per subject its
    per-round samples (s): tcp, made, first, steady, and the kernel's handshake round trips (ms)."""
    kept = {}
    try:
        for name in names:
            kept[name] = lab.client(name)
            impl = lab.implementation(name)
            workload.untimed_calls(operation.call(kept[name]), impl.warmup_calls or 30, WARMUP_MAX_S)
        calls = {name: operation.call(client) for name, client in kept.items()}
        dial = {name: host_port(lab.endpoints[name]) for name in names}
        samples = {name: {"tcp": [], "kernel_rtt_ms": [], "made": [], "first": [], "steady": []} for name in names}
        shuffle = random.Random(seed)
        plan = [(name, kind) for name in names for kind in KINDS]
        for index in range(warm_rounds + rounds):
            order = list(plan)
            shuffle.shuffle(order)
            for name, kind in order:
                if kind == "tcp":
                    took, rtt = connect_once(*dial[name])
                    found = {"tcp": took, "kernel_rtt_ms": rtt}
                elif kind == "new":
                    made, first = new_connection(lambda n=name: lab.client(n), operation)
                    found = {"made": made, "first": first}
                else:
                    found = {"steady": steady_call(calls[name], operation)}
                if index >= warm_rounds:
                    for key, value in found.items():
                        samples[name][key].append(value)
        return samples
    finally:
        for client in kept.values():
            client.close()


def measure_path(path: NetworkPath, names: Sequence[str], operation: str, rounds: int, seed: int,
                 progress: Callable[[str], None] = print) -> dict[str, Any]:
    """One path: its lab up (the path measured before use), the rounds, its figures."""
    op = workload.get(operation)
    began = time.monotonic()
    with running_lab(names, path=path) as lab:
        store = lab.store()
        try:
            workload.prepare(store.games, op)
        finally:
            store.close()
        progress(f"{path.name}: lab up in {time.monotonic() - began:.0f} s; {rounds} rounds of {len(names)} subjects")
        load_before = os.getloadavg()
        samples = measure(lab, names, op, rounds, seed)
        link = lab.link
    measured = (link or {}).get("measured") or {}
    rtt_ms = measured.get("connect_rtt_ms") if path.rtt_ms else None
    return {"path": path.name, "set": path.describe(), "link": link, "rtt_ms": rtt_ms,
            "load_before": list(load_before), "load_after": list(os.getloadavg()),
            "seconds": round(time.monotonic() - began, 1),
            "subjects": {name: {**summarize(s, rtt_ms), "samples_s": s} for name, s in samples.items()}}


def _ms(cell: dict[str, Any]) -> str:
    return f"{cell['median_ms']:.2f} [{cell['ci95_ms'][0]:.2f}–{cell['ci95_ms'][1]:.2f}]"


HEAD = ("path", "measured rtt ms", "subject", "tcp connect ms", "made ms", "first call ms", "steady call ms",
        "setup ms (new − steady)", "beyond TCP ms", "setup in rtts")


def rows(found: dict[str, Any]) -> list[list[str]]:
    out = []
    for p in found["paths"]:
        measured = ((p.get("link") or {}).get("measured") or {}).get("connect_rtt_ms")
        for name, s in p["subjects"].items():
            trips = s.get("in_round_trips", {}).get("setup")
            out.append([p["path"], f"{measured:.3f}" if measured is not None else "–", name, _ms(s["tcp"]),
                        f"{s['made']['median_ms']:.2f}", f"{s['first_call']['median_ms']:.2f}", _ms(s["steady"]),
                        _ms(s["setup"]), _ms(s["beyond_tcp"]), f"{trips:.2f}" if trips is not None else "–"])
    return out


def table(found: dict[str, Any]) -> str:
    body = [list(HEAD), *rows(found)]
    widths = [max(len(r[i]) for r in body) for i in range(len(HEAD))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in body)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.connection_setup", description=__doc__.splitlines()[0])
    p.add_argument("--paths", default=",".join(DEFAULT_PATHS),
                   help="network paths, a comma list (lab/axes.py; default %(default)s; all but loopback need root)")
    p.add_argument("--impl", nargs="+", metavar="NAME",
                   help="implementations (default: one per protocol, lab.registry.one_per_protocol)")
    p.add_argument("--operation", default=DEFAULT_OPERATION, help="the call made (default %(default)s)")
    p.add_argument("--rounds", type=int, default=30, help="timed rounds per path (default %(default)s)")
    p.add_argument("--seed", type=int, default=1)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        paths = [NetworkPath.parse(p) for p in args.paths.split(",") if p.strip()]
        op = workload.get(args.operation)
    except ValueError as exc:
        parser().error(str(exc))
    if args.rounds < 3:
        parser().error("--rounds: at least 3 (a median's interval needs them)")
    if settings.mode() != "native":
        parser().error("native mode only (a network path is native: lab/stack.py)")
    names = args.impl or registry.one_per_protocol(serving=(op.contract_op,))
    for impl in registry.select(names):
        if not impl.serves(op.contract_op):
            parser().error(f"{impl.name} does not serve {op.contract_op!r}")
    settings.measuring()
    found: dict[str, Any] = {"operation": args.operation, "rounds": args.rounds, "seed": args.seed,
                             "subjects": list(names), "kinds": list(KINDS), "paths": []}
    for path in paths:
        found["paths"].append(measure_path(path, names, args.operation, args.rounds, args.seed,
                                           lambda m: print(f"connection-setup: {m}", flush=True)))
        print(table({"paths": found["paths"][-1:]}), flush=True)
    print("\n" + table(found))
    written = lab_results.write("connection-setup", NAME, host_context(), found, RESULTS)
    print(f"\nwritten to {written.relative_to(settings.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
