"""HDR histograms of latencies in µs (hdrhistogram): made, merged, encoded,
summarised. A tail is reported only when enough answers stand behind it: a
p99 from at least 1,000 answered requests in the window, a p99.9 from 10,000;
with fewer, the figure is None (printed "–") and `withheld` says why."""

from __future__ import annotations

from typing import Any

from hdrh.histogram import HdrHistogram

# 1 µs to 5 minutes, 3 significant digits.
LOWEST_US, HIGHEST_US, DIGITS = 1, 300_000_000, 3
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9}
# Answers needed behind a percentile: at least ten beyond it.
NEEDED = {"p99": 1_000, "p99_9": 10_000}


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def record_ns(histogram: HdrHistogram, ns: int) -> None:
    histogram.record_value(max(LOWEST_US, min(HIGHEST_US, ns // 1000)))


def encode(histogram: HdrHistogram) -> str:
    """The histogram in HdrHistogram's compressed form (base64), mergeable later."""
    data = histogram.encode()
    return data.decode() if isinstance(data, bytes) else data


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text.encode() if isinstance(text, str) else text)


def merged(encoded: list[str]) -> HdrHistogram:
    out = new_histogram()
    for text in encoded:
        if text:
            out.add(decode(text))
    return out


def latency_summary(histogram: HdrHistogram) -> dict[str, Any]:
    """p50, p90, p99, p99.9, max, mean and σ, in µs, and the count behind them."""
    count = histogram.get_total_count()
    if count == 0:
        return {**{k: None for k in PERCENTILES}, "max": None, "mean": None, "stddev": None, "count": 0,
                "withheld": {}}
    out: dict[str, Any] = {k: histogram.get_value_at_percentile(q) for k, q in PERCENTILES.items()}
    withheld = {}
    for name, needed in NEEDED.items():
        if count < needed:
            out[name] = None
            withheld[name] = f"{count:,} answered requests, fewer than the {needed:,} a {name} needs"
    out["max"] = histogram.get_max_value()
    out["mean"] = round(histogram.get_mean_value(), 1)
    out["stddev"] = round(histogram.get_stddev(), 1)
    out["count"] = count
    out["withheld"] = withheld
    return out
