"""The raw samples the lab's Go push client writes (load/push-client: a CSV of
metric_name, timestamp (unix µs), metric_value, status, extra_tags), folded
into an HDR histogram and counts over a window, as the tests check them
against the client's own summary.

    lab_latency  ms, per message (receive time − the server's send stamp)
    lab_ops      events per message
    lab_connect  ms, request to the subscription's opening, per client
    lab_errors   one per error, tagged kind=...
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hdrh.histogram import HdrHistogram

from load import histograms


@dataclass
class Samples:
    histogram: HdrHistogram = field(default_factory=histograms.new_histogram)
    ops: int = 0            # events in the window
    ops_total: int = 0      # ... in the whole run
    errors: Counter = field(default_factory=Counter)
    connect: HdrHistogram = field(default_factory=histograms.new_histogram)


def _us(ms: str) -> int:
    return max(histograms.LOWEST_US, min(histograms.HIGHEST_US, round(float(ms) * 1000)))


def _kind(extra: str) -> str:
    for part in extra.split("&"):
        if part.startswith("kind="):
            return part[5:]
    return "unknown"


def read_samples(path: Path, window_us: tuple[int, int]) -> Samples:
    """Latency and events of messages received inside the window; events over
    the whole run; every connection's set-up; errors inside the window."""
    out = Samples()
    start, end = window_us
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return out
        col = {name: i for i, name in enumerate(header)}
        for row in reader:
            name, t, value, extra = row[0], int(row[1]), row[2], row[col["extra_tags"]]
            inside = start <= t < end
            if name == "lab_ops":
                out.ops_total += round(float(value))
                out.ops += round(float(value)) if inside else 0
            elif name == "lab_connect":
                out.connect.record_value(_us(value))
            elif name == "lab_latency" and inside:
                out.histogram.record_value(_us(value))
            elif name == "lab_errors" and inside:
                out.errors[_kind(extra)] += round(float(value))
    return out
