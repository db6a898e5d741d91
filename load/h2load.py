"""python -m load.h2load: HTTP load on h2load (nghttp2's benchmarking tool, MIT), beside Locust.

    python -m load.h2load --impl rest/go_nethttp rest/go_nethttp+h2 --clients 100 --duration 10 --warmup 3
    python -m load.h2load --impl rest/go_nethttp+h2c --requests 2000     # a fixed number of requests

N streams on one connection against N HTTP/1.1 connections, measured with a generator written in C
that is not the bottleneck (the Locust users' HTTP/2 client, httpx with h2 on one connection, spends
about a millisecond of CPU per request). Each subject is driven as its variant speaks (lab/axes.py,
axis http): an h2 subject with `-c 1 -m N` over https:// (ALPN offers h2 first), an h2c subject with
`-c 1 -m N` over http:// (prior knowledge), any other (plain, +tls13) with `--h1 -c N -m 1`; h2load's
own report of the application protocol must name the expected one (h2, h2c, http/1.1), or the run is
invalid. The request is the lab client's own (load/crosscheck.py `plan`: method, URL, headers, body;
GET and POST only), the database prepared as for the latency suite (lab/workload.py), every subject
after a settle (load/runner.py). h2load runs on the generator's CPU (taskset), the service and the
database on the others (lab/host/pinning.py; --no-pin turns it off), one h2load thread.

h2load does not verify the server's certificate: before each TLS subject's run the same request is
made once with httpx verifying the lab's CA (lab/tls.py), and its TLS version, ALPN protocol and
status are recorded beside the run.

Figures: throughput and status codes as h2load counts them in its main window (after
--warm-up-time); latency from h2load's per-request log (--log-file: every request of the window, µs)
in the lab's HDR histograms (load/histograms.py: p50, p90, p99, p99.9, a p99 only behind 1,000
answers), beside h2load's own min/mean/sd/max; CPU seconds of the service, the database and h2load
read when the window opens and when it closes (h2load prints both moments), so CPU µs per request is
the window's CPU over the window's answers. A run is invalid (never the service's figure) under the
Locust runs' rule (load/runner.py judge: the generator past GENERATOR_CPU_LIMIT of its core, too few
answers), when any request failed, errored, timed out or was answered with a status other than 2xx,
or when another application protocol was negotiated than the subject's.

Results: results/load/<--out, default h2load>-<date>.json and -latest.json, the load format
(lab/schemas/load.schema.json, engine "h2load"); `make report` shows them beside the Locust runs of
the same subjects and clients.
"""

from __future__ import annotations

import argparse
import os
import re
import ssl
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from clients.http import require_http2
from clients.protocols import PROTOCOLS
from lab import settings, workload
from lab.context import run_context
from lab.environment import client_options
from lab.host import pinning
from lab.host.tools import ToolMissing, apt_tool
from lab.registry import Implementation
from lab.resources import cpu_seconds, rss_bytes
from lab.stack import Lab, running_lab
from load import histograms, runner, summary
from load.__main__ import _result_name
from load.common import chosen, prepare, write
from load.crosscheck import plan

TOOL, PACKAGE = "h2load", "nghttp2-client"
METHODS = ("GET", "POST")
# h2load is stopped (and the run failed) this long after its warm-up and window should have ended:
# h2load 1.52 can keep reconnecting after its window when a server closes the connection.
OVERRUN_S = 30.0
# ... and this long after h2load's window closed: it hung there twice in 48 runs (Node.js subjects over TLS,
# HTTP/1.1, 100 connections, 2026-12-03 14:38 and 14:42 UTC), its summary never printed.
AFTER_WINDOW_S = 10.0
# Headers h2load writes itself (the authority, the body's length) or that HTTP/2 forbids (RFC 9113 8.2.2).
OWN_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}
NOT_VERIFIED = ("h2load does not verify the server's certificate (it accepts any); the same request was "
                "made once before the run with httpx verifying the lab's CA")
EXPECTED = {"h2": "h2", "h2c": "h2c", None: "http/1.1", "h1": "http/1.1"}


def ensure_h2load() -> str:
    """Path of h2load; installs Debian's nghttp2-client when missing and we are root."""
    return apt_tool(TOOL, PACKAGE)


def version(path: str) -> str:
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return done.stdout.strip() or done.stderr.strip()


# --- what h2load is told ------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """How a subject's N clients are laid out: connections × in-flight requests on each."""
    http: str            # h1, h2 or h2c (lab/axes.py, axis http)
    connections: int
    streams: int         # per connection (h2load -m); 1 for HTTP/1.1 (no pipelining)

    @property
    def expected(self) -> str:
        return EXPECTED[self.http]

    def describe(self) -> str:
        if self.http in runner.MULTIPLEXED:
            return f"1 connection, {self.streams} streams"
        return f"{self.connections} connections, 1 request in flight each"


def shape(impl: Implementation, clients: int) -> Shape:
    http = impl.client_options().get("http") or "h1"
    if http in runner.MULTIPLEXED:
        return Shape(http, 1, clients)
    return Shape(http, clients, 1)


def request_of(impl: Implementation, endpoint: str, operation: str) -> dict[str, Any]:
    """The lab client's request for `operation` (load/crosscheck.py plan): method, url, headers, body."""
    protocol = PROTOCOLS[impl.protocol]
    if not protocol.crosscheck_plan:
        raise ValueError(f"{impl.name}: its protocol has no request plan ({protocol.no_crosscheck})")
    request = plan(protocol, endpoint, operation, calls=0, warmup=0)["request"]
    method, url = request.get("method"), request.get("url")
    if method not in METHODS or not str(url).startswith(("http://", "https://")):
        what = f" ({method} {url})" if url else ""
        raise ValueError(f"{impl.name}: its {operation} call is not an HTTP GET or POST request{what}: "
                         "h2load sends those only")
    return request


def why_not(impl: Implementation, operation: str) -> str | None:
    """Why h2load cannot drive `impl` with `operation` (None: it can)."""
    if not workload.get(operation).served_by(impl):
        return f"it does not serve {workload.get(operation).contract_op!r} (its manifest's operations)"
    try:
        request_of(impl, "http://127.0.0.1:1", operation)
    except (ValueError, KeyError, TypeError, ImportError) as exc:
        return str(exc).removeprefix(f"{impl.name}: ")
    return None


def headers_of(request: dict[str, Any]) -> list[str]:
    """The request's headers as h2load's -H takes them (names in lower case, as HTTP/2 sends them)."""
    return [f"{name.lower()}: {value}" for name, value in (request.get("headers") or {}).items()
            if name.lower() not in OWN_HEADERS]


def argv(tool: str, request: dict[str, Any], layout: Shape, log_file: Path, body_file: Path | None, *,
         duration_s: float, warmup_s: float, requests: int | None, cpus: frozenset[int] | None) -> list[str]:
    """The h2load command line for one run."""
    out = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] if cpus else []
    out += [tool, "-t", "1", "-c", str(layout.connections), "-m", str(layout.streams)]
    if layout.http not in runner.MULTIPLEXED:
        out.append("--h1")
    if requests:
        out += ["-n", str(requests)]
    else:
        out += ["-D", f"{duration_s:g}", "--warm-up-time", f"{warmup_s:g}"]
    for header in headers_of(request):
        out += ["-H", header]
    if body_file is not None:
        out += ["-d", str(body_file)]
    out += ["--log-file", str(log_file), request["url"]]
    return out


# --- what h2load says ----------------------------------------------------------------------

_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1e6}
_PATTERNS = {
    "finished": re.compile(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s"),
    "requests": re.compile(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                           r"(\d+) errored, (\d+) timeout"),
    "status": re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx"),
    "traffic": re.compile(r"^traffic: \S+ \((\d+)\) total, \S+ \((\d+)\) headers \(space savings ([\d.]+)%\), "
                          r"\S+ \((\d+)\) data"),
    "request_time": re.compile(r"^time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)"
                               r"\s+([\d.]+)(us|ms|s)"),
    "protocol": re.compile(r"^Application protocol: (\S+)"),
    "tls_protocol": re.compile(r"^TLS Protocol: (\S+)"),
    "cipher": re.compile(r"^Cipher: (\S+)"),
}


def _us(value: str, unit: str) -> float:
    return round(float(value) * _UNITS[unit], 1)


def parse(text: str) -> dict[str, Any]:
    """h2load's report as data (what is missing is absent: a run that failed early)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        for key, pattern in _PATTERNS.items():
            m = pattern.match(line.strip())
            if not m or key in out:
                continue
            g = m.groups()
            if key == "finished":
                out[key] = {"elapsed_us": _us(g[0], g[1]), "req_per_s": float(g[2])}
            elif key == "requests":
                out[key] = dict(zip(("total", "started", "done", "succeeded", "failed", "errored", "timeout"),
                                    map(int, g), strict=True))
            elif key == "status":
                out[key] = dict(zip(("2xx", "3xx", "4xx", "5xx"), map(int, g), strict=True))
            elif key == "traffic":
                out[key] = {"total_bytes": int(g[0]), "header_bytes": int(g[1]),
                            "header_space_savings_percent": float(g[2]), "data_bytes": int(g[3])}
            elif key == "request_time":
                out[key] = {name: _us(g[2 * i], g[2 * i + 1]) for i, name in enumerate(("min", "max", "mean", "sd"))}
            else:
                out[key] = g[0]
    return out


def read_log(path: Path) -> tuple[Any, dict[int, int]]:
    """h2load's per-request log (start µs since the epoch, status, µs to the end of the response):
    the answered requests' latencies as an HDR histogram, and the count of each status (-1: failed)."""
    histogram = histograms.new_histogram()
    statuses: dict[int, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        status, micros = int(parts[1]), int(parts[2])
        statuses[status] = statuses.get(status, 0) + 1
        if status > 0:
            histogram.record_value(max(histograms.LOWEST_US, min(histograms.HIGHEST_US, micros)))
    return histogram, statuses


# --- the check the tool leaves out ------------------------------------------------------------

def verified_request(impl: Implementation, request: dict[str, Any], layout: Shape) -> dict[str, Any]:
    """The run's request made once with httpx, over TLS verifying the lab's CA alone: what was
    negotiated (HTTP version, ALPN, TLS version) and the status. Raises on a certificate or an
    HTTP version the subject does not name."""
    options = client_options(impl)
    ca = options.get("ca_file")
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca) if ca else False
    headers = {k: v for k, v in (request.get("headers") or {}).items() if k.lower() not in OWN_HEADERS}
    body = request.get("body")
    with httpx.Client(http1=layout.http not in ("h2c",), http2=layout.http in runner.MULTIPLEXED, verify=verify,
                      timeout=10.0, trust_env=False) as client:
        response = client.request(request["method"], request["url"], headers=headers,
                                  content=body.encode() if isinstance(body, str) else body)
        if layout.http in runner.MULTIPLEXED:
            require_http2(response, layout.http)
        stream = response.extensions.get("network_stream")
        tls = stream.get_extra_info("ssl_object") if stream is not None else None
        return {"status": response.status_code, "http_version": response.http_version,
                "alpn": tls.selected_alpn_protocol() if tls is not None else None,
                "tls_version": tls.version() if tls is not None else None,
                "verified_against": "the lab's CA (lab/tls.py)" if ca else None}


def wait(process: subprocess.Popen[str], limit: float, reader: threading.Thread,
         window: Window) -> tuple[str, float]:
    """Wait for h2load (at most `limit` s, then it is stopped): why it failed ("" if it did not)
    and the CPU seconds it used, from the kernel's account of it (wait4). It is reaped only once
    `reader` has read all it printed: until then it stays a zombie whose CPU times can still be
    read, so the reading taken at its window's close never misses it however late the reader is."""
    deadline = time.monotonic() + limit
    failure = ""
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        closed_at = window.closed_at
        if not failure and closed_at and time.monotonic() > closed_at + AFTER_WINDOW_S:
            process.kill()  # by its own handle: the one process started here
            failure = (f"h2load did not exit within {AFTER_WINDOW_S:.0f} s of its window's close (stopped; "
                       "its summary never printed: the figures here are its log's)")
        elif not failure and time.monotonic() > deadline:
            process.kill()
            failure = f"h2load did not finish within {limit:.0f} s (stopped)"
        time.sleep(0.02)
    reader.join(timeout=30)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if not failure and process.returncode:
        failure = f"h2load exited {process.returncode}"
    return failure, usage.ru_utime + usage.ru_stime


# --- one run -------------------------------------------------------------------------------------

@dataclass
class Window:
    """CPU seconds of each process tree when h2load opened its main window and when it closed it."""
    pids: dict[str, int]
    opened: dict[str, float] = field(default_factory=dict)
    closed: dict[str, float] = field(default_factory=dict)
    opened_at: float = 0.0
    closed_at: float = 0.0
    lines: list[str] = field(default_factory=list)
    rss_peak: dict[str, int] = field(default_factory=dict)

    def read(self) -> dict[str, float]:
        # h2load (the last) first. The kernel's account of the whole process (10 ms ticks): the per-thread
        # ns counters (lab.resources.CpuClock) lose a thread's time when it exits, as h2load's worker
        # thread does right after its window closes (they read negative there).
        out = {name: cpu_seconds(pid) for name, pid in reversed(self.pids.items())}
        for name, pid in self.pids.items():
            self.rss_peak[name] = max(self.rss_peak.get(name, 0), rss_bytes(pid))
        return out

    def follow(self, stream: Any) -> None:
        """h2load's output, line by line: its window's opening and closing read at once."""
        for line in stream:
            if line.startswith("Main benchmark duration is started"):
                self.opened, self.opened_at = self.read(), time.monotonic()
            elif line.startswith("Main benchmark duration is over"):
                self.closed, self.closed_at = self.read(), time.monotonic()
            self.lines.append(line)


@dataclass
class Measured:
    """What one h2load run left: its report, its log, and the CPU seconds read around its window."""
    report: dict[str, Any]
    histogram: Any
    statuses: dict[int, int]
    opened: dict[str, float]           # CPU seconds of each tree when the window opened
    closed: dict[str, float]           # ... and when it closed
    window_s: float
    whole_run_cpu_s: dict[str, float]  # h2load's whole run (warm-up included), each tree
    rss_peak: dict[str, int]
    failure: str
    stderr: str
    command: list[str]
    checked: dict[str, Any]            # the verified request before the run
    settled_s: float
    load_average: list[float]
    elapsed_s: float = 0.0             # h2load's whole run, wall clock


def run(lab: Lab, impl: Implementation, operation: str, clients: int, *, tool: str, duration_s: float,
        warmup_s: float, requests: int | None, pins: pinning.Pinning) -> dict[str, Any]:
    """One h2load run against `impl` at `clients`: its row in the load format."""
    endpoint = lab.endpoints[impl.name]
    request = request_of(impl, endpoint, operation)
    layout = shape(impl, clients)
    if requests is not None and requests < layout.connections:
        raise SystemExit(f"--requests {requests}: h2load needs at least one request per connection "
                         f"({layout.connections})")
    pids = {impl.name: lab.pids[impl.name]}
    if lab.database.pid:
        pids["database"] = lab.database.pid
    if pins.enabled:
        for pid in pids.values():
            pinning.pin_tree(pid, pins.services)
    settled_s = runner.settle(lab, impl)
    prepare(lab, operation)
    checked = verified_request(impl, request, layout)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="protolab-h2load-") as tmp:
        log_file, body_file = Path(tmp) / "requests.tsv", None
        if request.get("body") is not None:
            body_file = Path(tmp) / "body"
            body = request["body"]
            body_file.write_bytes(body.encode() if isinstance(body, str) else body)
        command = argv(tool, request, layout, log_file, body_file, duration_s=duration_s, warmup_s=warmup_s,
                       requests=requests, cpus=pins.generator if pins.enabled else None)
        limit = (warmup_s + duration_s if not requests else 60.0) + OVERRUN_S
        began = time.monotonic()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   cwd=settings.ROOT)
        window = Window({**pids, "generator": process.pid})
        start = window.read()
        reader = threading.Thread(target=window.follow, args=(process.stdout,), daemon=True)
        reader.start()
        failure, generator_cpu_s = wait(process, limit, reader, window)
        elapsed = time.monotonic() - began
        end = {name: cpu_seconds(pid) for name, pid in pids.items()}
        end["generator"] = start["generator"] + generator_cpu_s
        stderr = process.stderr.read() if process.stderr else ""
        histogram, statuses = read_log(log_file) if log_file.exists() else (histograms.new_histogram(), {})
    report = parse("".join(window.lines))
    whole = {name: round(end[name] - start[name], 4) for name in end}
    if requests or not window.opened or not window.closed:   # no window of its own: the whole run
        opened, closed = start, end
        window_s = report.get("finished", {}).get("elapsed_us", elapsed * 1e6) / 1e6
    else:
        opened, closed, window_s = window.opened, window.closed, window.closed_at - window.opened_at
    measured = Measured(report, histogram, statuses, opened, closed, window_s, whole, window.rss_peak, failure,
                        stderr, command, checked, settled_s, [round(load_before, 2), round(os.getloadavg()[0], 2)],
                        elapsed)
    return row(impl, operation, clients, layout, measured, pins, requests)


def row(impl: Implementation, operation: str, clients: int, layout: Shape, m: Measured, pins: pinning.Pinning,
        requests: int | None = None) -> dict[str, Any]:
    """A run's row in the load format (lab/schemas/load.schema.json, $defs/run)."""
    report = m.report
    counts = report.get("requests", {})
    codes = report.get("status", {})
    # h2load counts the window's requests (done, succeeded: 2xx or 3xx), and status codes as the answers'
    # headers arrive, a few of them past the window's close: those say which statuses came, these how many.
    answered = counts.get("succeeded", 0)
    done = counts.get("done", 0)
    # h2load's "failed" is the answers that were not 2xx or 3xx plus the streams that "errored": not counted twice
    errors = {k: v for k, v in {"3xx": codes.get("3xx", 0), "4xx": codes.get("4xx", 0), "5xx": codes.get("5xx", 0),
                                "errored": counts.get("errored", 0), "timeout": counts.get("timeout", 0)}.items() if v}
    resources: dict[str, Any] = {}
    for name in m.opened:
        used = m.closed[name] - m.opened[name]
        resources[name] = {
            "cpu_s": round(used, 4),
            "cpu_percent": round(100 * used / m.window_s, 1) if m.window_s else 0.0,
            "cpu_us_per_request": round(1e6 * used / done, 1) if done else None,
            "cpu_s_whole_run": m.whole_run_cpu_s.get(name),
            "cpu_percent_whole_run": (round(100 * m.whole_run_cpu_s[name] / m.elapsed_s, 1)
                                      if name in m.whole_run_cpu_s and m.elapsed_s else None),
            "rss_peak_bytes": m.rss_peak.get(name, 0)}
    generator_cores = len(pins.generator) if pins.enabled else len(os.sched_getaffinity(0))
    generator_cpu = resources["generator"]["cpu_percent"]
    reasons = runner.judge("closed", clients, answered, generator_cpu, generator_cores, calls=requests or 0)
    if m.failure:
        reasons.append(m.failure)
    if errors:
        reasons.append("requests not answered with 2xx: " + ", ".join(f"{v} {k}" for k, v in errors.items()))
    protocol = report.get("protocol")
    if protocol != layout.expected:
        reasons.append(f"h2load negotiated {protocol or 'no application protocol'}, not {layout.expected}")
    if not report.get("requests"):
        reasons.append("h2load printed no counts: " + (m.stderr.strip()[-300:] or "no output"))
    return {
        "implementation": impl.name, "protocol": impl.protocol, "operation": operation, "model": "closed",
        "clients": clients, "rate": None, "connections": layout.describe(),
        "window_s": round(m.window_s, 3), "latency_us": histograms.latency_summary(m.histogram),
        "latency_clock": "h2load's per-request log (--log-file): request start to the end of the response, µs",
        "latency_from": "the call's start",
        "throughput_rps": report.get("finished", {}).get("req_per_s"), "ops_window": answered, "ops_total": done,
        "errors": errors, "errors_total": errors, "resources": resources,
        "generator_cpu_percent": generator_cpu,
        "generator_cpu_us_per_request": resources["generator"]["cpu_us_per_request"],
        "generator_cores": generator_cores,
        "generator": {"engine": TOOL, "workers": 0, "processes": 1, "per_worker": [], "threads": 1,
                      "argv": m.command, "connections": layout.connections, "streams_per_connection": layout.streams,
                      "http": layout.http, "application_protocol": protocol, "expected_protocol": layout.expected,
                      "tls_protocol": report.get("tls_protocol"), "cipher": report.get("cipher"),
                      "certificate": NOT_VERIFIED if m.checked.get("verified_against") else None,
                      "verified_request": m.checked, "requests": counts, "status_codes": codes,
                      "traffic": report.get("traffic"), "request_time_us": report.get("request_time"),
                      "log_lines": sum(m.statuses.values()),
                      "log_statuses": {str(k): v for k, v in sorted(m.statuses.items())},
                      "stderr": m.stderr.strip()[-500:]},
        "bytes_per_op": ({"total": round(report["traffic"]["total_bytes"] / done, 1)}
                         if report.get("traffic") and done else None),
        "settled_before_s": m.settled_s, "load_average_1m": m.load_average,
        "valid": not reasons, "invalid_reasons": reasons, "histogram": histograms.encode(m.histogram),
    }


def line(r: dict[str, Any]) -> str:
    lat, g = r["latency_us"], r["generator"]
    service = r["resources"].get(r["implementation"], {})

    def ms(v: float | None) -> str:
        return f"{v / 1000:7.2f}" if v is not None else "      –"
    return (f"{r['implementation']:<26} {g['application_protocol'] or '?':<8} {r['connections']:<36}"
            f" {r['throughput_rps'] or 0:8.0f}/s p50 {ms(lat['p50'])} p99 {ms(lat['p99'])} ms"
            f" (n {lat['count']:,}) 2xx {g['status_codes'].get('2xx', 0):,} err {sum(r['errors'].values())}"
            f"  svc {service.get('cpu_percent') or 0:4.0f}% {service.get('cpu_us_per_request') or 0:6.0f}µs/req"
            f"  gen {r['generator_cpu_percent']:4.0f}% {r['generator_cpu_us_per_request'] or 0:5.0f}µs/req"
            + ("" if r["valid"] else "  INVALID: " + "; ".join(r["invalid_reasons"])))


TABLE_HEAD = ("subject", "negotiated", "connections", "req/s", "p50 ms", "p99 ms", "mean ms", "sd ms", "max ms",
              "answered", "not 2xx", "svc CPU %", "svc µs/req", "db µs/req", "gen CPU %", "gen µs/req", "valid")


def table(results: dict[str, Any]) -> str:
    """Every run as a Markdown table (latency percentiles from h2load's log, mean, sd and max h2load's own)."""
    def ms(us: float | None) -> str:
        return "–" if us is None else f"{us / 1000:,.2f}"

    def n(x: float | None) -> str:
        return "–" if x is None else f"{x:,.0f}"
    rows = []
    for entry in results.values():
        for r in entry["closed"]:
            lat, g, res = r["latency_us"], r["generator"], r["resources"]
            own = g.get("request_time_us") or {}
            rows.append([r["implementation"], g["application_protocol"] or "–", r["connections"],
                         n(r["throughput_rps"]), ms(lat["p50"]), ms(lat["p99"]), ms(own.get("mean")), ms(own.get("sd")),
                         ms(own.get("max")), n(r["ops_window"]), n(sum(r["errors"].values())),
                         n(res[r["implementation"]]["cpu_percent"]), n(res[r["implementation"]]["cpu_us_per_request"]),
                         n(res.get("database", {}).get("cpu_us_per_request")), n(r["generator_cpu_percent"]),
                         n(r["generator_cpu_us_per_request"]),
                         "yes" if r["valid"] else "no: " + "; ".join(r["invalid_reasons"])])
    return "\n".join("| " + " | ".join(row) + " |" for row in [list(TABLE_HEAD), ["---"] * len(TABLE_HEAD), *rows])


# --- the command --------------------------------------------------------------------------

def main(args: argparse.Namespace) -> int:
    settings.measuring()
    try:
        tool = ensure_h2load()
    except ToolMissing as exc:
        raise SystemExit(str(exc)) from None
    began = time.monotonic()
    pins = pinning.plan(not args.no_pin)
    names = chosen(args.impl, lambda impl: why_not(impl, args.operation), "no subject h2load can drive")
    results: dict[str, Any] = {}
    print(f"protolab: {version(tool)}; {NOT_VERIFIED}", flush=True)
    with running_lab(names) as lab:
        for position, impl in enumerate(lab.implementations):
            t0 = time.monotonic()
            rows = []
            for clients in args.clients:
                r = run(lab, impl, args.operation, clients, tool=tool, duration_s=args.duration,
                        warmup_s=args.warmup, requests=args.requests, pins=pins)
                print(line(r), flush=True)
                rows.append(r)
            results[impl.name] = {"closed": rows, "seconds": round(time.monotonic() - t0, 1),
                                  "concurrency": impl.concurrency, "implementation": impl.name}
            # What it left queued (and its memory) must not weigh on the next subject's runs on its CPU,
            # unless a later subject is served by the same process.
            later = {lab.pids[i.name] for i in lab.implementations[position + 1:]}
            if lab.pids[impl.name] not in later:
                lab.processes[impl.name].stop(grace=2.0)
        context = run_context(lab.mode, lab.database, lab.implementations)
    context["load"] = {
        "engine": TOOL, "engine_version": version(tool), "scenario": "h2load", "operation": args.operation,
        "models": "closed", "closed_clients": list(args.clients), "warmup_s": args.warmup,
        "steady_s": args.duration, "requests": args.requests, "p99_limit_ms": runner.P99_LIMIT_MS,
        "generator_cpu_limit": runner.GENERATOR_CPU_LIMIT, "pinning": pins.describe(), "workers": 0,
        "generator_processes": 1, "certificate": NOT_VERIFIED, "sweep_seconds": round(time.monotonic() - began, 1),
        "layout": "h2 and h2c subjects: 1 connection, N streams (h2load -c 1 -m N); the others: N HTTP/1.1 "
                  "connections, one request in flight each (h2load --h1 -c N -m 1)"}
    path = write(args.out, {"context": context, "results": results,
                            "summary": [summary.cells(n, e) for n, e in results.items()]}, kind="load")
    print("\n" + table(results) + "\n")
    print(f"h2load: {context['load']['sweep_seconds']:.0f} s; results: {path.relative_to(settings.ROOT)}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m load.h2load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", nargs="*", metavar="IMPL",
                   help="subjects (default: every one whose call is an HTTP GET or POST; LAB_VARIANTS=tls,http "
                        "for the +tls13, +h2 and +h2c ones)")
    p.add_argument("--operation", default="fetch-one", choices=workload.NAMES, help="the call (default fetch-one)")
    p.add_argument("--clients", nargs="+", type=int, default=[100],
                   help="N: streams on one connection (h2, h2c) or HTTP/1.1 connections (default 100)")
    p.add_argument("--duration", type=float, default=10.0, help="h2load's main window, s (default 10)")
    p.add_argument("--warmup", type=float, default=3.0, help="h2load's --warm-up-time, s (default 3)")
    p.add_argument("--requests", type=int, help="a fixed number of requests a run (h2load -n) instead of a window")
    p.add_argument("--no-pin", action="store_true", help="do not pin the services and h2load to disjoint CPUs")
    p.add_argument("--out", default="h2load", metavar="NAME", type=_result_name,
                   help="results/load/NAME-<date>.json (default h2load)")
    return p


if __name__ == "__main__":
    raise SystemExit(main(parser().parse_args()))
