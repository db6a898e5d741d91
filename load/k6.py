"""One run of k6 and what it measured: the raw samples (k6 --out csv, one
line per sample, timestamps in µs) folded into HDR histograms.

    run = K6Run(protocol, plan, cpus={1}).start()
    ... (the caller samples CPU meanwhile) ...
    samples = run.wait()          # Samples: histogram, ops, errors by kind, window

Latency: lab_latency (the scripts' Trend, from k6's microsecond request
timings for HTTP, a millisecond clock for WebSocket messages) or, for gRPC,
k6's own grpc_req_duration; both in ms with fractions in the raw output.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from lab.host import tools
from lab.processes import terminate
from load.operations import PROTO

SCRIPTS = Path(__file__).resolve().parent / "scripts"
# Histogram range: 1 µs to 5 minutes, 3 significant digits.
LOWEST_US, HIGHEST_US, DIGITS = 1, 300_000_000, 3
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9}
# What resolution each protocol's latency samples have (see load/scripts/common.js).
CLOCK = {"rest": "k6 HTTP timings (µs)", "graphql": "k6 HTTP timings (µs)",
         "soap": "k6 HTTP timings (µs)", "grpc": "k6 grpc_req_duration (µs)",
         "ws": "Date.now() in the script (1 ms)", "socketio": "Date.now() in the script (1 ms)"}


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def encode(histogram: HdrHistogram) -> str:
    """The histogram in HdrHistogram's compressed form (base64), mergeable later."""
    data = histogram.encode()
    return data.decode() if isinstance(data, bytes) else data


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text.encode() if isinstance(text, str) else text)


def latency_summary(histogram: HdrHistogram) -> dict[str, float]:
    """p50, p90, p99, p99.9, max, mean and σ, in µs."""
    if histogram.get_total_count() == 0:
        return {**{k: None for k in PERCENTILES}, "max": None, "mean": None, "stddev": None, "count": 0}
    out: dict[str, Any] = {k: histogram.get_value_at_percentile(q) for k, q in PERCENTILES.items()}
    out["max"] = histogram.get_max_value()
    out["mean"] = round(histogram.get_mean_value(), 1)
    out["stddev"] = round(histogram.get_stddev(), 1)
    out["count"] = histogram.get_total_count()
    return out


@dataclass
class Samples:
    """The run's raw samples inside its window, folded."""
    histogram: HdrHistogram = field(default_factory=new_histogram)
    ops: int = 0            # operations answered correctly in the window
    ops_total: int = 0      # ... in the whole run (warm-up included)
    errors: Counter = field(default_factory=Counter)
    dropped_iterations: int = 0
    connect: HdrHistogram = field(default_factory=new_histogram)  # WebSocket handshakes
    first_us: int | None = None
    last_us: int | None = None
    window_us: tuple[int, int] | None = None
    bytes_sent: float = 0.0
    bytes_received: float = 0.0

    def merge(self, other: Samples) -> None:
        self.histogram.add(other.histogram)
        self.connect.add(other.connect)
        self.ops += other.ops
        self.ops_total += other.ops_total
        self.errors.update(other.errors)
        self.dropped_iterations += other.dropped_iterations
        self.bytes_sent += other.bytes_sent
        self.bytes_received += other.bytes_received
        firsts = [t for t in (self.first_us, other.first_us) if t is not None]
        lasts = [t for t in (self.last_us, other.last_us) if t is not None]
        self.first_us = min(firsts) if firsts else None
        self.last_us = max(lasts) if lasts else None


def _us(ms: str) -> int:
    return max(LOWEST_US, min(HIGHEST_US, round(float(ms) * 1000)))


def _rows(path: Path, protocol: str) -> list[tuple[str, int, str, str, str]]:
    """(metric, timestamp µs, value, status tag, extra tags) of the metrics the lab reads."""
    metric = latency_metric(protocol)
    keep = {metric, "lab_ops", "lab_errors", "dropped_iterations", "lab_connect", "data_sent", "data_received"}
    rows = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return rows
        col = {name: i for i, name in enumerate(header)}
        status, extra = col["status"], col["extra_tags"]
        for row in reader:
            if row[0] in keep:
                rows.append((row[0], int(row[1]), row[2], row[status], row[extra]))
    return rows


def latency_metric(protocol: str) -> str:
    return "grpc_req_duration" if protocol == "grpc" else "lab_latency"


def run_start(path: Path, protocol: str) -> tuple[int | None, int | None]:
    """(when the first request started, when the last WebSocket opened), unix µs."""
    metric = latency_metric(protocol)
    first, connected = None, None
    for name, t, value, _, _ in _rows(path, protocol):
        if name == metric:
            start = t - round(float(value) * 1000)
            first = start if first is None else min(first, start)
        elif name == "lab_connect":
            connected = t if connected is None else max(connected, t)
    return first, connected


def read_samples(path: Path, protocol: str, window_us: tuple[int, int]) -> Samples:
    """Fold a k6 CSV into Samples: latency, ops and errors of requests that
    ended inside the window; ops_total, dropped iterations and WebSocket
    handshakes over the whole run."""
    metric = latency_metric(protocol)
    out = Samples(window_us=window_us)
    start, end = window_us
    for name, t, value, status, extra in _rows(path, protocol):
        inside = start <= t < end
        if name == metric:
            out.first_us = t if out.first_us is None else min(out.first_us, t)
            out.last_us = t if out.last_us is None else max(out.last_us, t)
        if name == "dropped_iterations":
            out.dropped_iterations += round(float(value))
        elif name == "lab_ops":
            out.ops_total += round(float(value))
            out.ops += round(float(value)) if inside else 0
        elif name == "lab_connect":  # the handshakes come before the window: all of them
            out.connect.record_value(_us(value))
        elif not inside:
            continue
        elif name == metric:
            failed = "failed=true" in extra or (protocol == "grpc" and status not in ("", "0"))
            if not failed:
                out.histogram.record_value(_us(value))
        elif name == "lab_errors":
            out.errors[_kind(extra)] += round(float(value))
        elif name == "data_sent":
            out.bytes_sent += float(value)
        elif name == "data_received":
            out.bytes_received += float(value)
    return out


def _kind(extra: str) -> str:
    for part in extra.split("&"):
        if part.startswith("kind="):
            return part[5:]
    return "unknown"


class K6Run:
    """k6 run of one plan, on the CPUs given (taskset), raw samples to CSV."""

    def __init__(self, protocol: str, plan: dict[str, Any], cpus: set[int] | None = None,
                 segment: str | None = None, segments: str | None = None, netns: str | None = None,
                 script: str | None = None):
        self.protocol = protocol
        self.script = script  # load/scripts/<script> (default: the protocol's)
        self.plan = {**plan, "protocol": protocol, "proto_dir": str(PROTO.parent), "proto_file": PROTO.name}
        self.cpus = cpus
        self.segment, self.segments, self.netns = segment, segments, netns
        self.dir = Path(tempfile.mkdtemp(prefix="protolab-k6-"))
        self.csv = self.dir / "samples.csv"
        self.log = self.dir / "k6.log"
        self.popen: subprocess.Popen | None = None
        self.started = 0.0
        self.cpu_s: float | None = None
        self.rss_peak_bytes: int | None = None

    def argv(self) -> list[str]:
        from load.operations import script
        plan_path = self.dir / "plan.json"
        plan_path.write_text(json.dumps(self.plan))
        self.plan_path = plan_path
        argv = [str(tools.k6()), "run", "--quiet", "--no-usage-report", "--no-color",
                "--out", f"csv={self.csv}", "--no-summary", "--no-thresholds",
                "--env", f"LAB_PLAN={plan_path}"]
        if self.segment:
            argv += ["--execution-segment", self.segment]
            if self.segments:
                argv += ["--execution-segment-sequence", self.segments]
        argv.append(str(SCRIPTS / (self.script or script(self.protocol))))
        if self.cpus:
            argv = ["taskset", "-c", ",".join(map(str, sorted(self.cpus))), *argv]
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        return argv

    def start(self) -> K6Run:
        env = {**os.environ, "K6_CSV_TIME_FORMAT": "unix_micro", "K6_NO_USAGE_REPORT": "true"}
        with open(self.log, "wb") as log:
            self.popen = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.started = time.monotonic()
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def wait(self, timeout: float) -> int:
        """Wait for k6 to exit; its own CPU seconds (user + system, every
        thread) and its peak RSS from the kernel's account at exit land in
        self.cpu_s and self.rss_peak_bytes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.poll()
            if code is not None:
                return code
            time.sleep(0.05)
        terminate(self.popen, group=True)
        raise RuntimeError(f"k6 did not finish within {timeout:.0f} s; log: {self.log}")

    def cleanup(self) -> None:
        """Remove the raw output (once folded): a sweep writes some MB per run."""
        shutil.rmtree(self.dir, ignore_errors=True)

    def poll(self) -> int | None:
        """k6's exit code once it has exited (reaping it with its CPU account), else None."""
        assert self.popen is not None
        if self.popen.returncode is not None:
            return self.popen.returncode
        pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        if not pid:
            return None
        self.cpu_s = usage.ru_utime + usage.ru_stime
        self.rss_peak_bytes = usage.ru_maxrss * 1024  # KiB on Linux
        self.popen.returncode = os.waitstatus_to_exitcode(status)
        return self.popen.returncode

    def stop(self) -> None:
        if self.popen is not None:
            terminate(self.popen, group=True)

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def check_output(self) -> Path:
        if not self.csv.exists():
            raise RuntimeError(f"k6 wrote no samples:\n{self.log_tail()}")
        return self.csv

