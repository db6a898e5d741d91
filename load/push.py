"""Push load (the one entry point for the push scenarios): Timeplus's and
Pathan's, over SSE, WebSocket push and HTTP polling, with the lab's push load
client (load/push-client, Go, built once into the lab's cache).

    python -m load.push [--scenario timeplus|pathan|all] [--quick] [--impl ...]

- Timeplus, test I: events/s as the batch size goes 1-400 at 10
  subscriptions; test II: events/s as subscriptions go 1-60 at batch 50; one
  message per ms per subscription (Timeplus's 1 ms interval); SSE over
  HTTP/2 (h2c: all subscriptions on one connection, as Timeplus's browser tab)
  and HTTP/1.1 (a connection each), and WebSocket push (a connection each).
  Default: the three languages' pairs (TIMEPLUS_DEFAULT); each run a 0.5 s
  warm-up (the subscriptions open) and a 2 s window.
- Pathan: latency (receive time - the server's send timestamp) at 10-1,000
  clients, one message per second each, batch 1, a 1 s warm-up and a 10 s
  window (the study's 10 s); WebSocket push, SSE (HTTP/1.1) and HTTP polling
  (each client in a loop: GET /events?feed=synthetic&count=1&rate=0 on the
  SSE service, kept alive, one request outstanding: Pathan's REST client).
  Default: Node.js, the study's runtime (PATHAN_DEFAULT).

The default run (both) is 132 runs, 458 s of warm-ups and windows: 520 s
(8.7 minutes) with the lab's start-up, measured on the lab's 2-core machine at
a load average of ~18 (each run records its time in context.push.seconds).
--quick (tests, a first look): 1 s Timeplus windows at
batch 1, 50, 400 and 1, 10, 60 subscriptions, 2 s Pathan windows at 10 and
100 clients; about 2 minutes. Runs are interleaved: each point on every
implementation in turn. Events, latency and CPU are counted over the window
(a message read after its end is not counted: the client's summary);
errors (a subscription not answered by the run's end is one) over the whole
run.

Client and server CPU over the window: the client's from the kernel's
account of the exited process (wait4) less its CPU at the window's start, the
server's process tree from lab.resources (100 % = one core); services and client on
disjoint CPUs (load/pinning.py) unless --no-pin. Raw samples (the load
instrument's CSV format) are kept with --keep-raw in results/load/push-raw/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import settings
from lab.context import run_context
from lab.host import pinning
from lab.resources import cpu_seconds, rss_bytes
from lab.stack import running_lab
from load.common import RESULTS, write

SOURCE = Path(__file__).parent / "push-client"
TIMEPLUS_BATCHES = (1, 10, 50, 100, 200, 400)
TIMEPLUS_CONCURRENCY = (1, 10, 20, 30, 40, 50, 60)
PATHAN_CLIENTS = (10, 50, 100, 500, 1000)
# Each language's SSE service beside its WebSocket service (Go: the same
# net/http server under both).
TIMEPLUS_DEFAULT = ("sse/python_hypercorn", "ws/python_simple_websocket", "sse/go_nethttp", "ws/go_gorilla",
                    "sse/node_http", "ws/node_ws")
PATHAN_DEFAULT = ("sse/node_http", "ws/node_ws")
# A client over this share of its CPUs is the bottleneck (Timeplus's was its tab).
CLIENT_BOUND = 0.9
TRANSPORTS = {"sse-h1": "SSE, HTTP/1.1", "sse-h2c": "SSE, HTTP/2 (h2c)", "ws": "WebSocket push",
              "poll": "HTTP polling (HTTP/1.1)"}
# The studies' own figures, beside the lab's. Timeplus: read from its text (its
# charts' other points are not in the text). Pathan: Tables 3 (latency, ms,
# mean ± sd over all messages) and 5 (CPU %, the testing container's
# systeminformation currentLoad: machine-wide, % of all logical cores).
TIMEPLUS = {"sse_batch400_c10_eps": 3_000_000, "sse_max_c60_b50_eps": 2_700_000, "ws_max_b50_eps": 2_400_000,
            "ws_b50_c30_eps": 1_350_000, "ws_b50_c30_tab_cpu_percent": 75,
            "setup": "Chrome 103 tab (EventSource / WebSocket), Apple M1 Pro 10 cores, 32 GB, macOS 12.4; "
                     "HTTP/2, 1 ms interval, no compression; the tab's CPU reached 100 % at SSE batch 400 "
                     "(c10) and at c60 (b50): the client was the bottleneck"}
PATHAN_MS = {"rest": {10: (1.67, 0.35), 50: (9.57, 1.63), 100: (16.78, 4.08), 500: (20.86, 2.24),
                      1000: (22.40, 3.21)},
             "ws": {10: (3.28, 6.21), 50: (0.99, 0.90), 100: (0.57, 0.16), 500: (0.53, 0.20), 1000: (0.60, 0.39)},
             "sse": {10: (3.56, 3.11), 50: (1.49, 1.15), 100: (0.88, 0.28), 500: (0.70, 0.28),
                     1000: (9.75, 49.06)}}
PATHAN_CPU = {"rest": {10: 43.58, 50: 44.27, 100: 46.59, 500: 50.08, 1000: 49.92},
              "ws": {10: 2.55, 50: 2.93, 100: 4.00, 500: 32.74, 1000: 40.11},
              "sse": {10: 2.66, 50: 2.52, 100: 3.15, 500: 26.90, 1000: 36.51}}
PATHAN_SETUP = ("Node.js 3 servers (Express REST, ws, SSE) in Docker Compose, a Node.js testing container; "
                "10 s per run, one run; CPU: the testing container's system-wide load sampled at client spawn")


@dataclass(frozen=True)
class Run:
    scenario: str            # timeplus-batch, timeplus-concurrency, pathan
    transport: str           # a key of TRANSPORTS
    clients: int
    batch: int
    rate: int
    seconds: float           # the measurement window
    warmup: float = 0.0      # before it: subscriptions open (setup apart)


@dataclass
class Plan:
    runs: dict[str, list[Run]] = field(default_factory=dict)   # implementation -> its runs

    def seconds(self) -> float:
        return sum(r.warmup + r.seconds for runs in self.runs.values() for r in runs)

    def ordered(self) -> list[tuple[str, Run]]:
        """Interleaved: each point of a scenario (batch, clients) on every
        implementation and transport in turn, so that the rows compared are
        measured minutes apart at most, under the same background load."""
        pairs = [(name, r) for name, runs in self.runs.items() for r in runs]
        rank = {"timeplus-batch": 0, "timeplus-concurrency": 1, "pathan": 2}
        return sorted(pairs, key=lambda p: (rank[p[1].scenario], p[1].clients, p[1].batch))  # stable


def push_client() -> Path:
    """The Go load client, built once per source into the lab's cache."""
    digest = hashlib.sha256()
    for path in sorted(SOURCE.glob("*")):
        digest.update(path.name.encode() + path.read_bytes())
    binary = settings.cache_dir() / "builds" / f"push-client-{digest.hexdigest()[:16]}" / "push-client"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=SOURCE, check=True, timeout=600)
    return binary


def transports(impl: str) -> tuple[str, ...]:
    return ("ws",) if impl.startswith(("ws/", "socketio/")) else ("sse-h1", "sse-h2c")


def plan(scenario: str, quick: bool, names: list[str] | None) -> Plan:
    """Which runs on which implementation: Timeplus on its default pairs (or
    the implementations named), Pathan on its (or those named)."""
    p = Plan()
    if scenario in ("timeplus", "all"):
        seconds = 1.0 if quick else 2.0
        batches = (1, 50, 400) if quick else TIMEPLUS_BATCHES
        concurrency = (1, 10, 60) if quick else TIMEPLUS_CONCURRENCY
        for name in names or TIMEPLUS_DEFAULT:
            for transport in transports(name):
                p.runs.setdefault(name, []).extend(
                    [Run("timeplus-batch", transport, 10, b, 1000, seconds, 0.5) for b in batches] +
                    [Run("timeplus-concurrency", transport, c, 50, 1000, seconds, 0.5) for c in concurrency])
    if scenario in ("pathan", "all"):
        seconds = 2.0 if quick else 10.0
        counts = (10, 100) if quick else PATHAN_CLIENTS
        for name in names or PATHAN_DEFAULT:
            for transport in ("ws",) if name.startswith("ws/") else ("sse-h1", "poll"):
                p.runs.setdefault(name, []).extend(Run("pathan", transport, n, 1, 1, seconds, 1.0) for n in counts)
    return p


def run(binary: Path, endpoint: str, server_pid: int, r: Run, raw: Path, pins: pinning.Pinning) -> dict[str, Any]:
    mode = {"sse-h1": "sse", "sse-h2c": "sse", "ws": "ws", "poll": "poll"}[r.transport]
    argv = [str(binary), "-url", endpoint, "-mode", mode, "-clients", str(r.clients), "-batch", str(r.batch),
            "-rate", str(r.rate), "-seconds", str(r.seconds), "-warmup", str(r.warmup), "-out", str(raw)]
    argv += ["-h2"] if r.transport == "sse-h2c" else []
    generator = set(pins.generator) if pins.enabled else None
    load_before = os.getloadavg()[0]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=(lambda: os.sched_setaffinity(0, generator)) if generator else None)
    try:
        # CPU over the window: the client's and the server's from the warm-up's end
        time.sleep(r.warmup)
        started = time.monotonic()
        server_before, client_before = cpu_seconds(server_pid), cpu_seconds(process.pid)
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    server_cpu = cpu_seconds(server_pid) - server_before
    out, err = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    process.stdout.close()  # type: ignore[union-attr]
    process.stderr.close()  # type: ignore[union-attr]
    if process.returncode != 0:
        raise RuntimeError(f"push-client failed ({process.returncode}): {err.decode()[-500:]}")
    summary = json.loads(out.decode().strip().splitlines()[-1])
    client_cpu = 100 * (usage.ru_utime + usage.ru_stime - client_before) / wall
    client_cores = len(generator) if generator else os.cpu_count() or 1
    return {"scenario": r.scenario, "transport": r.transport, "transport_label": TRANSPORTS[r.transport],
            "clients": r.clients, "batch": r.batch, "rate": r.rate, "seconds": r.seconds, **summary,
            "error_causes": err.decode(errors="replace").strip().splitlines()[:10],
            "warmup_s": r.warmup, "wall_s": round(wall, 2), "client_cpu_percent": round(client_cpu, 1),
            "server_cpu_percent": round(100 * server_cpu / wall, 1),
            "server_rss_bytes": rss_bytes(server_pid),
            "client_bound": client_cpu >= 100 * CLIENT_BOUND * client_cores,
            "load_average_1m": round(load_before, 2)}


def line(name: str, row: dict[str, Any]) -> str:
    lat = row["latency_ms"]
    return (f"{name:<28} {row['scenario']:<20} {row['transport']:<7} c={row['clients']:<4} b={row['batch']:<3} "
            f"{row['events_per_s']:>11,.0f} ev/s  p50 {lat['p50']:7.2f} p99 {lat['p99']:8.2f} ms  "
            f"client {row['client_cpu_percent']:5.1f} %  server {row['server_cpu_percent']:5.1f} %  "
            f"errors {row['errors']}" + ("  (client-bound)" if row["client_bound"] else ""))


@dataclass
class Raw:
    """Where a run's raw samples go: kept under results/ or a temporary file."""
    keep: Path | None

    def __post_init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="push-raw-") if self.keep is None else None

    def path(self, name: str) -> Path:
        base = self.keep if self.keep is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        base.mkdir(parents=True, exist_ok=True)
        return base / name

    def discard(self, path: Path) -> None:
        if self.keep is None:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def measure(p: Plan, *, pin: bool = True, keep_raw: Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yields (implementation, row) per run, then ("", context)."""
    binary = push_client()
    pins = pinning.plan(pin)
    raw = Raw(keep_raw)
    began = time.monotonic()
    load_start = os.getloadavg()
    try:
        with running_lab(list(p.runs), "native") as lab:
            if pins.enabled:
                for name in p.runs:
                    pinning.pin_tree(lab.pids[name], pins.services)
            for i, (name, r) in enumerate(p.ordered()):
                path = raw.path(f"{i:03d}-{name.replace('/', '-')}-{r.scenario}-{r.transport}.csv")
                row = run(binary, lab.endpoints[name], lab.pids[name], r, path, pins)
                if keep_raw is not None:
                    row["raw"] = str(path)
                raw.discard(path)
                yield name, row
            context = run_context(lab.mode, lab.database, lab.implementations)
    finally:
        raw.close()
    context["push"] = {
        "client": "load/push-client (Go, net/http and gorilla/websocket v1.5.3)",
        "seconds": round(time.monotonic() - began, 1), "planned_window_seconds": p.seconds(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "pinning": pins.describe(), "client_bound_share": CLIENT_BOUND,
        "cpu": "over the window (from the warm-up's end to the client's exit): the client's wait4 rusage less "
               "its CPU at the window's start; the server's process tree (lab.resources); 100 % = one core",
        "polling": "GET /events?feed=synthetic&count=1&rate=0 on the SSE service, HTTP/1.1 kept alive, "
                   "one request outstanding per client",
        "implementations": {name: sorted({r.scenario for r in runs}) for name, runs in p.runs.items()}}
    yield "", context


def studies() -> dict[str, Any]:
    return {"timeplus": TIMEPLUS,
            "pathan": {"latency_ms": {k: {str(n): v for n, v in d.items()} for k, d in PATHAN_MS.items()},
                       "cpu_percent": {k: {str(n): v for n, v in d.items()} for k, d in PATHAN_CPU.items()},
                       "setup": PATHAN_SETUP}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m load.push", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("timeplus", "pathan", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="short runs (tests, a first look)")
    parser.add_argument("--impl", nargs="*", default=None,
                        help="SSE and WebSocket implementations (default: per scenario, see above)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin services and client to disjoint CPUs")
    parser.add_argument("--keep-raw", action="store_true", help="keep the raw samples in results/load/push-raw/")
    parser.add_argument("--out", default=None, help="results directory (default results/load)")
    args = parser.parse_args(argv)
    settings.measuring()
    out = Path(args.out) if args.out else RESULTS
    p = plan(args.scenario, args.quick, args.impl)
    print(f"push: {sum(len(r) for r in p.runs.values())} runs, {p.seconds():.0f} s of windows", flush=True)
    rows: list[dict[str, Any]] = []
    keep = out / "push-raw" / time.strftime("%Y%m%d-%H%M%S") if args.keep_raw else None
    context: dict[str, Any] = {}
    for name, row in measure(p, pin=not args.no_pin, keep_raw=keep):
        if not name:
            context = row
            continue
        rows.append({"implementation": name, **row})
        print(line(name, row), flush=True)
    context["push"].update(scenario=args.scenario, quick=args.quick)
    path = write("push", {"context": context, "rows": rows, "studies": studies()}, out, kind="push")
    print(f"push: {context['push']['seconds']:.0f} s; results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
