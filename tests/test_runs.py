"""The summary of repeated runs."""

from __future__ import annotations

from lab.runs import markdown, summarize


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
    assert "| rest/python_flask | 110 [100–120] | 121 [120–150] | 1.10 [1.00–1.50] |" in text
