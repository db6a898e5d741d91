"""Push load, the instrument: N clients subscribed to a push feed, each way
a protocol carries one (its descriptor's `push`: clients/protocols.py
PushWay), driven by the lab's push load client (load/push-client, Go, built
once into the lab's cache), events/s, latency (receive time - the server's
send timestamp) and CPU per run.

What to run comes from the studies that use it (studies/<name>/scenario.py
with INSTRUMENT = "push": their runs and figures); the command is

    python -m studies push [--scenario NAME|all] [--quick] [--impl ...]

Runs are interleaved: each point of a scenario on every implementation in
turn. Events, latency and CPU are counted over the window (a message read
after its end is not counted: the client's summary); errors (a subscription
not answered by the run's end is one) over the whole run.

Client and server CPU over the window: the client's from the kernel's
account of the exited process (wait4) less its CPU at the window's start, the
server's process tree from lab.resources (100 % = one core), and the whole
machine's busy share (psutil; 100 % = every CPU, what a machine-wide monitor
reports); the service's resident memory per process at the run's end
(server_processes); services and client on
disjoint CPUs (lab/host/pinning.py) unless --no-pin. Raw samples (the load
instrument's CSV format) are kept with --keep-raw in results/load/push-raw/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import psutil

from clients.protocols import get, push_way, push_ways
from lab import settings
from lab.context import run_context
from lab.environment import client_options
from lab.host import pinning
from lab.registry import discover, variant
from lab.resources import cpu_seconds, rss_bytes
from lab.stack import running_lab
from load.common import RESULTS, write

SOURCE = Path(__file__).parent / "push-client"
# A client over this share of its CPUs is the bottleneck (a browser tab's was, in one study).
CLIENT_BOUND = 0.9


@dataclass(frozen=True)
class Run:
    scenario: str            # the study's test, e.g. <study>-batch: the rows' "scenario"
    transport: str           # a push way's key (clients.protocols.PushWay.key): the rows' "transport"
    clients: int
    batch: int
    rate: int
    seconds: float           # the measurement window
    warmup: float = 0.0      # before it: subscriptions open (setup apart)


@dataclass
class Plan:
    runs: dict[str, list[Run]] = field(default_factory=dict)   # implementation -> its runs
    scenarios: list[str] = field(default_factory=list)          # in the order they were added

    def add(self, runs: dict[str, list[Run]]) -> None:
        for name, those in runs.items():
            self.runs.setdefault(name, []).extend(those)
            self.scenarios += [r.scenario for r in those if r.scenario not in self.scenarios]

    def seconds(self) -> float:
        return sum(r.warmup + r.seconds for runs in self.runs.values() for r in runs)

    def ordered(self) -> list[tuple[str, Run]]:
        """Interleaved: each point of a scenario (batch, clients) on every
        implementation and transport in turn, so that the rows compared are
        measured minutes apart at most, under the same background load."""
        pairs = [(name, r) for name, runs in self.runs.items() for r in runs]
        rank = {s: i for i, s in enumerate(self.scenarios)}
        return sorted(pairs, key=lambda p: (rank.get(p[1].scenario, len(rank)), p[1].clients, p[1].batch))  # stable


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


def client_libraries() -> str:
    """What the push client is built on: Go's net/http and its go.mod's direct requirements."""
    text = (SOURCE / "go.mod").read_text()
    required = re.findall(r"^\s*(?:require\s+)?([\w./-]+) (v[\w.+-]+)\s*$", text, re.MULTILINE)
    return "Go; net/http, " + ", ".join(f"{module} {version}" for module, version in required)


@cache
def _protocols() -> dict[str, str]:
    return {i.name: i.protocol for i in discover()}


def _protocol(impl: str) -> str:
    if impl in _protocols():
        return _protocols()[impl]
    try:
        return variant(impl).protocol
    except ValueError:
        raise ValueError(f"no implementation {impl!r} (services/<protocol>/<name>/manifest.toml)") from None


def transports(impl: str) -> tuple[str, ...]:
    """The push ways every scenario measures on `impl`: its protocol's default ones
    (a way that is not, polling, only where a study names it), those its manifest's
    variants allow (a way on a variant: the service's [variants] must list it)."""
    protocol = get(_protocol(impl))
    return tuple(w.key for w in protocol.push if w.default and (not w.variant or supports(impl, w.variant)))


def supports(impl: str, value: str) -> bool:
    """Whether the implementation's manifest lists `value` among its variants."""
    try:
        return any(value in values for _, values in variant(impl).supported)
    except ValueError:
        return False


def subject(impl: str, transport: str) -> str:
    """The subject a way is measured on: the implementation, or its variant the way needs."""
    way = push_way(transport)
    return f"{impl}+{way.variant}" if way.variant else impl


class Scenario(Protocol):
    """What a study's scenario module gives the push instrument."""
    def runs(self, quick: bool, names: list[str] | None) -> dict[str, list[Run]]: ...
    def figures(self) -> dict[str, Any]: ...


def plan(scenarios: dict[str, Scenario], chosen: str, quick: bool, names: list[str] | None) -> Plan:
    """Which runs on which implementation: each chosen study's on its default
    implementations (or on those named)."""
    p = Plan()
    for name, scenario in scenarios.items():
        if chosen in (name, "all"):
            p.add(scenario.runs(quick, names))
    return p


@dataclass
class Executed:
    """One run of the push client: its summary line, the first lines of its stderr, and CPU
    over the window (100 % = one core)."""
    summary: dict[str, Any]
    causes: list[str]
    wall_s: float
    client_cpu_percent: float
    server_cpu_percent: float
    client_cores: int
    machine_cpu_percent: float = 0.0   # the whole machine's busy share over the window (100 % = every CPU)

    @property
    def client_bound(self) -> bool:
        return self.client_cpu_percent >= 100 * CLIENT_BOUND * self.client_cores


def execute(argv: list[str], server_pid: int, pins: pinning.Pinning, warmup: float = 0.0,
            signalled: bool = False) -> Executed:
    """Runs the push client (argv) on the generator's CPUs; CPU is counted from `warmup`
    seconds after its start (`signalled`: from the line "window" on its stdout, which the
    echo mode prints as its window opens) to its exit: its own (wait4), the server's process
    tree (lab.resources) and the whole machine's (psutil.cpu_times)."""
    generator = set(pins.generator) if pins.enabled else None
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=(lambda: os.sched_setaffinity(0, generator)) if generator else None)
    try:
        # CPU over the window: the client's and the server's from the warm-up's end
        if signalled:
            process.stdout.readline()  # type: ignore[union-attr]  # "window" (or "" if it ended first)
        else:
            time.sleep(warmup)
        started = time.monotonic()
        server_before, client_before = cpu_seconds(server_pid), cpu_seconds(process.pid)
        machine_before = psutil.cpu_times()
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    server_cpu = cpu_seconds(server_pid) - server_before
    machine = busy_percent(machine_before, psutil.cpu_times())
    out, err = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    process.stdout.close()  # type: ignore[union-attr]
    process.stderr.close()  # type: ignore[union-attr]
    if process.returncode != 0:
        raise RuntimeError(f"push-client failed ({process.returncode}): {err.decode()[-500:]}")
    summary = json.loads(out.decode().strip().splitlines()[-1])
    client_cpu = 100 * (usage.ru_utime + usage.ru_stime - client_before) / wall
    return Executed(summary, err.decode(errors="replace").strip().splitlines()[:10], wall, round(client_cpu, 1),
                    round(100 * server_cpu / wall, 1), len(generator) if generator else os.cpu_count() or 1,
                    round(machine, 1))


def busy_percent(before: Any, after: Any) -> float:
    """The whole machine's busy share between two psutil.cpu_times() (100 % = every CPU busy):
    what a machine-wide monitor (a Node.js systeminformation currentLoad) reports."""
    def total(t: Any) -> float:  # as psutil.cpu_percent counts: guest time is already in user and nice
        return sum(t) - getattr(t, "guest", 0) - getattr(t, "guest_nice", 0)

    def spare(t: Any) -> float:
        return getattr(t, "idle", 0) + getattr(t, "iowait", 0)
    span = total(after) - total(before)
    return max(0.0, min(100.0, 100 * (span - (spare(after) - spare(before))) / span)) if span > 0 else 0.0


def process_memory(pid: int) -> list[dict[str, Any]]:
    """The service's processes (its tree), each with its resident memory: the study's
    Table 6 counted a container's."""
    out = []
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return out
    for proc in procs:
        try:
            out.append({"pid": proc.pid, "name": proc.name(), "rss_bytes": proc.memory_info().rss})
        except psutil.NoSuchProcess:
            continue
    return out


def memory(server_pid: int) -> dict[str, Any]:
    """The service's resident memory at a run's end: its tree's total (bytes, MB) and each process's."""
    total = rss_bytes(server_pid)
    return {"server_rss_bytes": total, "server_rss_mb": round(total / 2**20, 1),
            "server_processes": process_memory(server_pid)}


def run(binary: Path, endpoint: str, server_pid: int, r: Run, raw: Path, pins: pinning.Pinning,
        ca_file: str | None = None) -> dict[str, Any]:
    way = push_way(r.transport)
    argv = [str(binary), "-url", endpoint, "-mode", way.mode, "-clients", str(r.clients), "-batch", str(r.batch),
            "-rate", str(r.rate), "-seconds", str(r.seconds), "-warmup", str(r.warmup), "-out", str(raw)]
    argv += ["-h2"] if way.h2 else []
    argv += ["-ca", ca_file] if ca_file else []
    load_before = os.getloadavg()[0]
    x = execute(argv, server_pid, pins, r.warmup)
    return {"scenario": r.scenario, "transport": r.transport, "transport_label": way.label,
            "clients": r.clients, "batch": r.batch, "rate": r.rate, "seconds": r.seconds, **x.summary,
            "error_causes": x.causes,
            "warmup_s": r.warmup, "wall_s": round(x.wall_s, 2), "client_cpu_percent": x.client_cpu_percent,
            "server_cpu_percent": x.server_cpu_percent, "machine_cpu_percent": x.machine_cpu_percent,
            "machine_cpus": psutil.cpu_count(),
            **memory(server_pid),
            "client_bound": x.client_bound,
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
            by_name = {impl.name: impl for impl in lab.implementations}
            for i, (name, r) in enumerate(p.ordered()):
                path = raw.path(f"{i:03d}-{name.replace('/', '-')}-{r.scenario}-{r.transport}.csv")
                ca = client_options(by_name[name]).get("ca_file") if name in by_name else None
                row = run(binary, lab.endpoints[name], lab.pids[name], r, path, pins, ca)
                if keep_raw is not None:
                    row["raw"] = str(path)
                raw.discard(path)
                yield name, row
            context = run_context(lab.mode, lab.database, lab.implementations)
    finally:
        raw.close()
    context["push"] = {
        "client": f"load/push-client ({client_libraries()})",
        "seconds": round(time.monotonic() - began, 1), "planned_window_seconds": p.seconds(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "pinning": pins.describe(), "client_bound_share": CLIENT_BOUND,
        "cpu": "over the window (from the warm-up's end to the client's exit): the client's wait4 rusage less "
               "its CPU at the window's start; the server's process tree (lab.resources); 100 % = one core; "
               "machine_cpu_percent: every CPU's busy share (psutil.cpu_times), 100 % = all of them",
        "polling": " ".join(w.note for w in push_ways().values() if w.mode == "poll"),
        "implementations": {name: sorted({r.scenario for r in runs}) for name, runs in p.runs.items()}}
    yield "", context


def main(argv: list[str] | None, scenarios: dict[str, Scenario], prog: str = "python -m studies push") -> int:
    """The push command over the studies' scenarios ({study name: its scenario module})."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=(*scenarios, "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="short runs (tests, a first look)")
    parser.add_argument("--impl", nargs="*", default=None,
                        help="implementations that serve a push feed (default: each study's, from manifest "
                             "fields)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin services and client to disjoint CPUs")
    parser.add_argument("--keep-raw", action="store_true", help="keep the raw samples in results/load/push-raw/")
    parser.add_argument("--out", default=None, help="results directory (default results/load)")
    args = parser.parse_args(argv)
    settings.measuring()
    out = Path(args.out) if args.out else RESULTS
    p = plan(scenarios, args.scenario, args.quick, args.impl)
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
    figures = {name: s.figures() for name, s in scenarios.items()}  # the studies' figures, beside the rows
    path = write("push", {"context": context, "rows": rows, "studies": figures}, out, kind="push")
    print(f"push: {context['push']['seconds']:.0f} s; results: {path}")
    return 0

