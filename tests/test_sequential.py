"""The latency suite's sequential stopping rule (lab/stats/sequential.py): its looks
and levels, its decisions, measure() stopping at a look, and the coverage of its
corrected intervals on simulated runs with known ratios (lab/stats/simulate.py;
fixed seeds, no timing)."""

from __future__ import annotations

import math

import pytest

from lab.stats.sequential import Rule, half_width, look_points, resamples_for, spend, widths_summary
from lab.stats.simulate import Machine, binomial_tail, coverage


def test_the_looks_double_from_the_first_to_the_cap():
    assert look_points(800) == (100, 200, 400, 800)
    assert look_points(300) == (100, 200, 300)
    assert look_points(50) == (50,) and look_points(800, first=0) == (800,)
    assert look_points(200, first=25) == (25, 50, 100, 200)


def test_alpha_is_spent_in_proportion_to_cycles_and_adds_up_to_one_percent():
    levels = spend((100, 200, 400, 800), 0.99)
    assert [round(v, 6) for v in levels] == [0.99875, 0.99875, 0.9975, 0.995]
    assert math.isclose(sum(1 - v for v in levels), 0.01)
    assert spend((800,), 0.99) == (0.99,)  # one look: the fixed design's plain 99 %
    assert Rule(cap=800).levels == (0.99,) and Rule(cap=800).looks == (800,)  # no target: no looks


def test_a_higher_level_gets_enough_resamples_for_its_tails():
    assert resamples_for(0.99) == 2000
    assert resamples_for(0.99875) == 16000 and resamples_for(0.995) == 4000


def test_the_half_width_is_the_wider_side_relative_to_the_ratio():
    assert math.isclose(half_width({"ratio": 2.0, "ci": [1.9, 2.02]}), 0.05)
    assert half_width({"ratio": float("nan"), "ci": [1, 2]}) == math.inf
    summary = widths_summary({"a": {"ratio": 1.0, "ci": [0.99, 1.01]}, "b": {"ratio": 2.0, "ci": [1.9, 2.1]},
                              "c": {"ratio": 1.0, "ci": [0.98, 1.02]}})
    assert math.isclose(summary["median_half_width"], 0.02) and summary["widest"] == "b"


def test_the_rule_stops_when_every_ratio_is_narrow_or_at_the_cap_and_says_why():
    rule = Rule(cap=800, target=0.02)
    narrow = {"a": {"ratio": 1.5, "ci": [1.48, 1.52]}, "b": {"ratio": 3.0, "ci": [2.97, 3.05]}}
    wide = {**narrow, "c": {"ratio": 2.0, "ci": [1.9, 2.1]}}
    assert rule.decide(100, narrow)["stop"] and "within ±2.0% after 100 cycles" in rule.decide(100, narrow)["reason"]
    assert rule.decide(100, narrow)["level"] == 0.99875
    going = rule.decide(400, wide)
    assert not going["stop"] and going["widest"] == "c" and going["level"] == 0.9975
    capped = rule.decide(800, wide)
    assert capped["stop"] and capped["reason"].startswith("the cap, 800 cycles (widest: c ±5.0%")
    assert not rule.decide(100, {})["stop"]  # no ratio yet (no baseline): go on


def test_measure_stops_at_the_look_that_says_so_and_only_looks_where_asked():
    from benchmarks.interleave import Design, measure
    looked: list[int] = []

    def look(times, cycles):
        assert len(times["a"]) == cycles and len(times["direct"]) == cycles * 4  # whole cycles only
        looked.append(cycles)
        return cycles == 20
    m = measure({"a": lambda: None, "direct": lambda: None}, Design(blocks=80, warmup=0, baseline_visits=4),
                seed=1, looks=(10, 20, 40, 80), look=look)
    assert looked == [10, 20] and m.cycles == 20 and len(m.times["a"]) == 20
    assert m.stopped["stopped_by"] == "the sequential rule" and m.stopped["stopped_at"] == 20
    m = measure({"a": lambda: None, "direct": lambda: None}, Design(blocks=20, warmup=0, baseline_visits=4),
                seed=1, looks=(10, 20), look=lambda times, cycles: cycles == 20)
    assert m.stopped["stopped_by"] == "cycles"   # a look at the cap: the cycles ended them, not the rule
    m = measure({"a": lambda: None, "direct": lambda: None}, Design(blocks=30, warmup=0), seed=1)
    assert m.cycles == 30  # no rule: every cycle


def test_the_stopping_lines_say_where_and_why():
    from benchmarks.conftest import stopping_lines
    rule = Rule(cap=800, target=0.02)
    look = {**rule.decide(400, {"a": {"ratio": 1.5, "ci": [1.48, 1.52]}}), "seconds": 95.0}
    lines = stopping_lines({**rule.describe(), "cap": 800, "stopped_at": 400, "level": 0.9975,
                            "reason": look["reason"], "looks_taken": [look]})
    assert lines[0].startswith("stopped at 400 of at most 800 cycles: every ratio within ±2.0% after 400 cycles")
    assert "99 % over the looks at 100, 200, 400, 800 cycles" in lines[0]
    assert lines[1] == "  look at 400 cycles, 95 s in: 99.7500% intervals, half-widths median ±1.3%, widest ±1.3% (a)"
    assert stopping_lines({}) == []


def test_the_corrected_intervals_cover_the_true_ratio_at_least_99_percent_of_the_time():
    """Simulated runs with known ratios (1.8 and 3.5 × direct) on noise like this
    machine's (lab.stats.simulate.Machine: two vCPU speeds in spells, a 25 % drift, the
    ratio 5 % lower on slow vCPUs, heavy-tailed outliers), each stopped by the rule at
    looks 25, 50, 100, 200 (the suite's 100-800 scaled down, for time) with a target
    (±10 %) that stops runs at several looks. Fails when the misses are more than a 99 %
    coverage makes plausible (binomial, one-sided, p < 0.001): 300 intervals, so it
    catches a coverage below ~97 %; `python -m lab.stats.simulate --runs 1000` checks
    more closely, at the suite's own looks."""
    rule = Rule(cap=200, target=0.10, first=25)
    found = coverage(Machine(), rule, runs=150, seed=20261203)
    assert len(found["stopped_at"]) >= 3, found["stopped_at"]  # the rule did stop early, at several looks
    p = binomial_tail(found["missed"], found["intervals"], 0.01)
    assert p > 0.001, f"{found['missed']} of {found['intervals']} intervals missed (P = {p:.2g} at 99 %): {found}"


def test_the_coverage_check_catches_intervals_that_do_not_allow_for_the_looks_or_the_spells():
    """The same check, on intervals that neither correct for the looks (99 % at each)
    nor resample in runs of cycles (cycles one by one), on spells as long as a run's
    first look: the misses are far more than 1 %, and the check says so."""
    rule = Rule(cap=200, target=0.10, first=25, corrected=False)
    found = coverage(Machine(spell=40, elasticity=-0.3), rule, runs=40, seed=7, run_length=1)
    assert binomial_tail(found["missed"], found["intervals"], 0.01) < 0.001, found


@pytest.mark.parametrize("cap", [800, 300])
def test_a_rule_from_the_environment(monkeypatch, cap):
    monkeypatch.setenv("LAB_BENCH_TARGET", "0.03")
    monkeypatch.setenv("LAB_BENCH_FIRST_LOOK", "100")
    rule = Rule.from_env(cap)
    assert rule.target == 0.03 and rule.looks[-1] == cap and rule.looks[0] == 100
    monkeypatch.setenv("LAB_BENCH_TARGET", "0")
    assert Rule.from_env(cap).looks == (cap,) and Rule.from_env(cap).levels == (0.99,)
