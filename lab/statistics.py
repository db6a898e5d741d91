"""The statistics of a benchmark's rounds, as the tables and reports print them."""

from __future__ import annotations

from typing import Any


def percentile(sorted_data: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_data:
        return float("nan")
    position = (len(sorted_data) - 1) * q
    low = int(position)
    high = min(low + 1, len(sorted_data) - 1)
    return sorted_data[low] + (sorted_data[high] - sorted_data[low]) * (position - low)


def median_ci95(sorted_data: list[float]) -> tuple[float, float]:
    """A distribution-free 95 % confidence interval of the median: the order
    statistics at n/2 ± 1.96·√n/2 (normal approximation to the binomial)."""
    n = len(sorted_data)
    half = 1.96 * n ** 0.5 / 2
    low = max(int(n / 2 - half), 0)
    high = min(int(n / 2 + half + 0.999), n - 1)
    return sorted_data[low], sorted_data[high]


def summarize(data: list[float]) -> dict[str, Any]:
    """Statistics in µs of per-round times given in seconds."""
    ordered = sorted(data)
    n = len(ordered)
    mean = sum(ordered) / n
    var = sum((x - mean) ** 2 for x in ordered) / (n - 1) if n > 1 else 0.0
    us = 1e6
    low, high = median_ci95(ordered)
    return {"rounds": n, "mean": mean * us, "min": ordered[0] * us, "max": ordered[-1] * us,
            "stddev": var ** 0.5 * us, "median": percentile(ordered, 0.5) * us,
            "median_ci95": [low * us, high * us],
            "p95": percentile(ordered, 0.95) * us, "p99": percentile(ordered, 0.99) * us}
