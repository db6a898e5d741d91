"""benchmarks/executions.py's arithmetic, on synthetic timings with known answers."""

from __future__ import annotations

import pytest

from benchmarks.executions import execution, halves, summary


def test_halves_split_by_cycles_and_drop_an_unfinished_cycle() -> None:
    # 5 whole cycles of 2 calls and one call of a sixth: halves of 2 cycles and 3
    times = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6.0]
    assert halves(times, 2) == ([1, 1, 2, 2], [3, 3, 4, 4, 5, 5])


def test_an_execution_settling_on_the_way_shows_in_its_halves() -> None:
    # the baseline steady at 1 ms (4 calls a cycle); the subject 4 ms for 50 cycles, then 3 ms
    baseline = [0.001] * 400
    subject = [0.004] * 50 + [0.003] * 50
    got = execution({"s": subject, "direct": baseline}, "s", {"s": 1, "direct": 4})
    assert got["first_half"] == pytest.approx(4.0)
    assert got["second_half"] == pytest.approx(3.0)
    assert got["ratio"] == pytest.approx(3.5)  # the median of 50 × 4 ms and 50 × 3 ms


def test_summary_separates_spread_between_executions_from_moves_within_one() -> None:
    runs = [{"ratio": 4.0, "first_half": 4.2, "second_half": 3.8},
            {"ratio": 3.6, "first_half": 3.7, "second_half": 3.5},
            {"ratio": 4.4, "first_half": 4.4, "second_half": 4.4}]
    s = summary(runs)
    assert s["between"] == pytest.approx(0.8 / 4.0)
    assert s["half_move_mean"] == pytest.approx((-0.4 / 4.0 - 0.2 / 3.6 + 0.0) / 3)
    assert s["half_move_abs_mean"] == pytest.approx((0.4 / 4.0 + 0.2 / 3.6) / 3)
