"""The summary of repeated runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.stats.runs import (
    check,
    cycles_taken,
    following,
    main,
    markdown,
    shared_shift,
    speed_strata,
    spread_over_time,
    summarize,
)


def _run(median_us: float) -> dict:
    return {"context": {}, "results": {"insert": {"rest/python_flask": {"median": median_us}}}}


def test_medians_of_runs_and_ratios_within_adjacent_pairs():
    runs = {"native": [_run(100), _run(120), _run(110)], "docker": [_run(150), _run(120), _run(121)]}
    cell = summarize(runs)["insert"]["rest/python_flask"]
    assert cell["native"] == {"median": 110, "low": 100, "high": 120, "medians": [100, 120, 110]}
    assert cell["docker"]["median"] == 121
    assert cell["ratio"]["values"] == [1.5, 1.0, 1.1]
    assert cell["ratio"]["median"] == 1.1
    text = markdown(summarize(runs), ["native", "docker"], 3)
    assert "| rest/python_flask | 110 [100–120] | 121 [120–150] | - | - | 1.10 [1.00–1.50] |" in text


def _with_direct(rest: float, direct: float) -> dict:
    return {"context": {}, "results": {"fetch-one": {"rest/python_flask": {"median": rest},
                                                     "direct": {"median": direct}}}}


def test_each_ratio_to_direct_has_its_spread_across_runs():
    runs = {"native": [_with_direct(200, 100), _with_direct(330, 150), _with_direct(410, 200)]}
    cell = summarize(runs)["fetch-one"]["rest/python_flask"]["native"]["to_direct"]
    assert cell["values"] == [2.0, 2.2, 2.05]
    assert cell["median"] == 2.05
    assert round(cell["max_deviation"], 4) == round(2.2 / 2.05 - 1, 4)
    assert "2.05 [2.00–2.20] ±7.3%" in markdown(summarize(runs), ["native"], 3)


DESIGN = {"block": 1, "baseline_visits": 4}


def bench_json(rest: float | list[float], direct: float | list[float]) -> dict:
    """pytest-benchmark's JSON of one fetch-one run, as the suite writes it:
    REST's rounds (s), one a cycle, and direct's, four a cycle; a number is
    five cycles of that time."""
    rest = rest if isinstance(rest, list) else [rest] * 5
    direct = direct if isinstance(direct, list) else [direct] * 4 * len(rest)
    return {"benchmarks": [
        {"group": "fetch-one", "params": {"subject": s}, "extra_info": {"design": DESIGN},
         "stats": {"median": sorted(d)[len(d) // 2], "data": d}}
        for s, d in (("rest/python_flask", rest), ("direct", direct))]}


def test_check_reads_pytest_benchmark_json_and_flags_a_ratio_beyond_tolerance(tmp_path):
    paths = []
    for i, (rest, direct) in enumerate([(2.00, 1.0), (2.02, 1.0), (2.05, 1.0)]):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(bench_json(rest, direct)))
    text, ok = check(paths, 0.03)
    assert ok and "2.000    2.020    2.050    2.020" in text
    paths[2].write_text(json.dumps(bench_json(2.2, 1.0)))
    text, ok = check(paths, 0.03)
    assert not ok and "0 of 1 ratios within ±3%: NOT all within tolerance (marked !)" in text


def test_check_names_a_missing_or_cut_short_run_file_instead_of_a_traceback(tmp_path, capsys):
    good = tmp_path / "run1.json"
    good.write_text(json.dumps(bench_json(2.0, 1.0)))
    cut = tmp_path / "run2.json"
    cut.write_text(json.dumps(bench_json(2.0, 1.0))[:200])   # a run stopped while writing its JSON
    missing = tmp_path / "run3.json"
    for bad, says in ((missing, "cannot read it (No such file or directory)"), (cut, "not JSON, or cut short")):
        with pytest.raises(SystemExit) as stop:
            main(["--check", str(good), str(bad)])
        assert str(stop.value).startswith(f"{bad}: {says}")
    assert main(["--check", str(good), str(good)]) == 0
    assert "1 of 1 ratios within ±3%" in capsys.readouterr().out


def test_check_prints_each_processs_cpu_per_run_under_a_ratio_out_of_tolerance(tmp_path):
    paths = []
    for i, (rest, service) in enumerate([(2.0, 500.0), (2.02, 505.0), (2.2, 650.0)]):
        run = bench_json(rest, 1.0)
        for b in run["benchmarks"]:
            b["extra_info"]["cpu_us_per_op"] = {"client": 300.0, "database": 100.0,
                                                **({"service": service} if b["params"]["subject"] != "direct" else {})}
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run))
    text, ok = check(paths, 0.03)
    lines = text.splitlines()
    marked = next(i for i, line in enumerate(lines) if line.endswith(" !"))
    assert not ok and lines[marked].startswith("rest/python_flask")
    assert lines[marked + 1] == ("    CPU µs/op per run: service 500 / 505 / 650 (30% apart); "
                                 "client 300 / 300 / 300 (0% apart); database 100 / 100 / 100 (0% apart)")
    assert "  direct's CPU µs/op per run: client 300 / 300 / 300 (0% apart); database 100 / 100 / 100 (0% apart)" \
        in lines  # the denominator's too
    paths[2].write_text(paths[1].read_text())  # within tolerance: no CPU line
    text, ok = check(paths, 0.03)
    assert ok and "CPU µs/op per run" not in text and "direct's CPU" not in text


def test_check_names_a_run_whose_direct_median_moved_past_ten_percent(tmp_path):
    paths = []
    for i, direct in enumerate([488e-6, 479e-6, 583e-6]):  # seconds, as pytest-benchmark writes them
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(bench_json(direct * 4.9, direct)))
    text, _ = check(paths, 0.03)
    assert "(direct median, µs)" in text and "488      479      583      488" in text
    assert "run 3: direct's fetch-one median moved +19%" in text
    assert "run 1:" not in text and "run 2:" not in text


def test_check_pairs_each_cycle_so_a_machine_that_changed_speed_between_cycles_cancels(tmp_path):
    """Known answer: in run 3 the machine is 1.5x slower from the third of
    five cycles on, and REST's own noise (x0.9, x1.1) puts a slow cycle at
    its median: the ratio of the medians moves (2.7 / 1.5 = 1.80), the paired
    ratio (per cycle 2.0, 2.0, 1.8, 2.0, 2.2) stays 2.00."""
    steady = bench_json([2.0] * 5, [1.0] * 20)
    slowed = bench_json([2.0, 2.0, 2.7, 3.0, 3.3], [1.0] * 8 + [1.5] * 12)
    paths = []
    for i, run in enumerate([steady, steady, slowed]):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run))
    text, ok = check(paths, 0.03)
    assert ok and "2.000    2.000    2.000" in text
    assert "(median ÷ direct median: 0 of 1 within ±3%" in text
    text, ok = check(paths, 0.03, statistic="medians")
    assert not ok and "2.000    2.000    1.800" in text


def test_check_says_which_runs_lack_an_operation_and_scores_the_others(tmp_path):
    """A run of -k 'insert or fetch_one' beside a whole one: fetch-100 is named
    as not compared, not printed as an empty table, and not counted."""
    paths = []
    for i in range(3):
        data = bench_json(2.0 + i / 100, 1.0)
        if i == 0:
            data["benchmarks"] += [{**b, "group": "fetch-100"} for b in bench_json(9.0, 1.0)["benchmarks"]]
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(data))
    text, ok = check(paths, 0.03)
    assert ok and "fetch-100: not compared (not measured in run 2, 3)" in text
    assert "1 of 1 ratios within ±3%" in text


def test_shared_shift_is_what_every_ratio_of_a_run_moved_together():
    """Known answers: run 1's direct 5 % faster lifts all three ratios 5 %
    (shared +5 %, nothing left); one subject moving alone in run 3 is its own
    (shared 0, 5 % left)."""
    shifts, left = shared_shift([[2.1, 2.0, 2.0], [3.15, 3.0, 3.0], [4.2, 4.0, 4.0]])
    assert [round(v, 6) for v in shifts] == [0.05, 0, 0] and round(left, 6) == 0
    shifts, left = shared_shift([[2.0, 2.0, 2.0], [3.0, 3.0, 3.0], [4.0, 4.0, 4.2]])
    assert [round(v, 6) for v in shifts] == [0, 0, 0] and round(left, 6) == 0.05


def test_check_prints_each_runs_shared_shift_beside_the_ratios(tmp_path):
    def run(direct: float) -> dict:
        subjects = {"direct": [direct] * 20, **{s: [r] * 5 for s, r in
                                               (("rest/python_flask", 2.0), ("grpc/go_grpc", 3.0))}}
        return {"benchmarks": [{"group": "fetch-one", "params": {"subject": s}, "extra_info": {"design": DESIGN},
                                "stats": {"median": d[0], "data": d}} for s, d in subjects.items()]}
    paths = []
    for i, direct in enumerate([1 / 1.05, 1.0, 1.0]):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run(direct)))
    text, ok = check(paths, 0.03)
    assert not ok
    assert "(shared by all: direct moved)           +5.0%    +0.0%    +0.0%     left   0.0%" in text


def test_cycles_taken_keeps_whole_cycles_of_every_subject_direct_four_rounds_each():
    rounds = {"fetch-one": {"rest/python_flask": [10.0, 11.0, 12.0, 13.0],
                            "direct": [float(i) for i in range(16)]}}
    kept = cycles_taken(rounds, DESIGN, lambda c, n: c % 2 == 1)
    assert kept == {"fetch-one": {"rest/python_flask": [11.0, 13.0],
                                  "direct": [4.0, 5.0, 6.0, 7.0, 12.0, 13.0, 14.0, 15.0]}}


def test_spread_over_time_scores_consecutive_cycles_and_spread_ones(tmp_path):
    """Known answer: 40 cycles, direct steady; REST's ratio is 2 but, in run 3
    only, 3 in its first 10 cycles (a slow spell of REST's). 10 consecutive
    cycles at the start disagree (2 vs 3, 50 %); at the end, spread evenly
    (every 4th: 3 of its 10 cycles in the spell, not its median) and all 40 agree."""
    paths = []
    for i in range(3):
        rest = [3.0] * 10 + [2.0] * 30 if i == 2 else [2.0] * 40
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(bench_json(rest, [1.0] * 160)))
    text = spread_over_time(paths, 10, 0.03)
    row = next(line for line in text.splitlines() if line.startswith("fetch-one"))
    first, middle, last, spread_evenly, whole = row.split()[1::2]
    assert (first, middle, last, spread_evenly, whole) == ("0/1", "1/1", "1/1", "1/1", "1/1"), row
    assert "(50.0%)" in row


def test_following_measures_how_ratios_move_with_directs_speed_within_a_run(tmp_path):
    """Known answers: 30 cycles; the machine adds 0.5 to every call of
    cycles 10-19 (direct 1 -> 1.5; REST 2 + direct: ratio 3 -> 2.33): the
    elasticity is ln(2.33 / 3) / ln(1.5) = -0.62. A REST that scales with
    direct (twice it) has ratio 2 throughout: 0. Fewer than three windows: no figure."""
    direct = [1.0] * 40 + [1.5] * 40 + [1.0] * 40
    paths = [tmp_path / "added.json", tmp_path / "scaled.json"]
    paths[0].write_text(json.dumps(bench_json([2.0 + d for d in direct[::4]], direct)))
    paths[1].write_text(json.dumps(bench_json([2.0 * d for d in direct[::4]], direct)))
    text = following(paths, 10)
    row = next(line for line in text.splitlines() if line.startswith("fetch-one"))
    assert row.split()[1:] == ["-0.62", "+0.00"], text
    assert "fetch-one" not in following(paths, 11).split("\n", 2)[2]


def test_a_saved_result_cut_short_or_missing_is_named_where_the_comparison_loads_it(tmp_path):
    from lab.stats.compare import load
    missing, cut = tmp_path / "native-latest.json", tmp_path / "docker-latest.json"
    cut.write_text(json.dumps({"context": {}, "results": {}})[:10])   # a run stopped while writing its result
    with pytest.raises(SystemExit, match="is missing: run the benchmarks in that mode first"):
        load(missing)
    with pytest.raises(SystemExit, match="not JSON, or cut short"):
        load(cut)


def test_runs_compared_at_equal_machine_speed(tmp_path):
    """Known answers: 100 cycles a run; the machine is fast (direct 1.0 a call)
    or slow (2.0) in long spells, and REST takes 2 + direct: ratio 3 when fast,
    2 when slow. Run A is fast 70 % of its cycles, run B 30 %: their plain
    ratios are 3 and 2, at equal speed both sqrt(3 × 2) = 2.449. A REST that is
    slower at the same speed (run C: 2.5 + direct) is flagged; a run with too
    few cycles in a stratum leaves that stratum out."""
    def run(name: str, fast: int, rest: float, n: int = 100) -> Path:
        per_cycle = [1.0] * fast + [2.0] * (n - fast)
        path = tmp_path / name
        path.write_text(json.dumps(bench_json([rest + d for d in per_cycle], [d for d in per_cycle for _ in range(4)])))
        return path
    a, b = run("a.json", 70, 2.0), run("b.json", 30, 2.0)
    text, ok = check([a, b], 0.03)
    assert not ok and "3.000    2.000" in text
    text, within, total = speed_strata([a, b], 2, 0.03)
    assert (within, total) == (1, 1), text
    assert "2.449    2.449    2.449   0.0%" in text and "70%      30%" in text
    text, within, total = speed_strata([a, b, run("c.json", 50, 2.5)], 2, 0.03)
    assert (within, total) == (0, 1) and " !" in text, text  # C: sqrt(3.5 × 2.25) = 2.806, 14.6 % off
    # a run never fast: the fast stratum is left out (and the third, empty), the slow compared alone
    text, within, total = speed_strata([a, b, run("e.json", 0, 2.0)], 3, 0.03)
    assert "2 of 3 strata left out" in text and (within, total) == (1, 1), text
    assert "2.000    2.000    2.000    2.000   0.0%" in text
