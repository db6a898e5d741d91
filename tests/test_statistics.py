"""The statistics the benchmark tables print."""

from __future__ import annotations

import random

from lab.statistics import median_ci95, percentile, summarize


def test_percentile_interpolates_between_ranks():
    data = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert percentile(data, 0.5) == 3.0
    assert percentile(data, 0.95) == 4.8
    assert percentile(data, 0.0) == 1.0 and percentile(data, 1.0) == 5.0


def test_summary_is_in_microseconds():
    s = summarize([0.001, 0.002, 0.003])
    assert (s["min"], s["median"], s["max"], s["mean"]) == (1000.0, 2000.0, 3000.0, 2000.0)
    assert round(s["stddev"], 6) == 1000.0


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(7)
    covered = 0
    for _ in range(400):
        sample = sorted(rng.expovariate(1.0) for _ in range(201))
        low, high = median_ci95(sample)
        covered += low <= 0.6931471805599453 <= high  # ln 2, the exponential's median
    assert 0.92 <= covered / 400 <= 0.99
