"""The summary of repeated runs."""

from __future__ import annotations

import json

from lab.runs import check, markdown, summarize


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


def bench_json(rest: float, direct: float) -> dict:
    """pytest-benchmark's JSON of one fetch-one run: REST and direct medians (s)."""
    return {"benchmarks": [
        {"group": "fetch-one", "params": {"subject": "rest/python_flask"}, "stats": {"median": rest}},
        {"group": "fetch-one", "params": {"subject": "direct"}, "stats": {"median": direct}}]}


def test_check_reads_pytest_benchmark_json_and_flags_a_ratio_beyond_tolerance(tmp_path):
    paths = []
    for i, (rest, direct) in enumerate([(2.00, 1.0), (2.02, 1.0), (2.05, 1.0)]):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(bench_json(rest, direct)))
    text, ok = check(paths, 0.03)
    assert ok and "2.000    2.020    2.050    2.020" in text
    paths[2].write_text(json.dumps(bench_json(2.2, 1.0)))
    text, ok = check(paths, 0.03)
    assert not ok and text.rstrip().endswith("NOT all within tolerance (marked !)")


def test_check_names_a_run_whose_direct_median_moved_past_ten_percent(tmp_path):
    paths = []
    for i, direct in enumerate([488e-6, 479e-6, 583e-6]):  # seconds, as pytest-benchmark writes them
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(bench_json(direct * 4.9, direct)))
    text, _ = check(paths, 0.03)
    assert "(direct median, µs)" in text and "488      479      583      488" in text
    assert "run 3: direct's fetch-one median moved +19%" in text
    assert "run 1:" not in text and "run 2:" not in text
