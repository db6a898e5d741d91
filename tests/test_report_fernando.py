"""The report's Fernando & Engel section (studies/fernando/report.py) from a small real
result file: tests/data/fernando-small.json, written by
`python -m studies fernando --impl ws/go_gorilla socketio/node_socketio --clients 10 --runs 2`."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

from report.inputs import Inputs
from report.page import Page, to_markdown
from studies import get

fernando = get("fernando").report()

SMALL = Path(__file__).parent / "data" / "fernando-small.json"


def render(results: Path) -> str:
    page = Page("t")
    fernando.section(page, Inputs(results))
    return to_markdown(page, results / "figs", "figs")


def _with(tmp_path: Path, data: dict | None = None) -> Path:
    (tmp_path / "load").mkdir()
    target = tmp_path / "load" / "fernando-latest.json"
    if data is None:
        shutil.copy(SMALL, target)
    else:
        target.write_text(json.dumps(data))
    return tmp_path


def test_missing_result_names_the_command(tmp_path):
    assert "python -m studies fernando" in render(tmp_path)


def test_table_2_beside_the_lab_with_the_setup_stated(tmp_path):
    text = render(_with(tmp_path))
    data = json.loads(SMALL.read_text())
    # The study's Table 2 row for gorilla, and the lab's mean RTT: the mean of its runs' means.
    assert "| 19.2 | 22.0 | 6.7 |" in text
    runs = [r["rtt_ms"]["mean"] for r in data["results"]["echo"]["ws/go_gorilla"]]
    assert len(runs) == 2
    lab = statistics.fmean(runs)
    assert f"{lab:,.1f} ({min(runs):,.1f}–{max(runs):,.1f}, n 2)" in text
    # socket.io's throughput in the study and the lab's client count in the caption.
    assert "27,152" in text and "beside the lab at 10 clients" in text
    # The setup's differences are said: the study's machine, the payload the lab chose, the interval.
    assert "Apple M4 Pro" in text and "120-byte JSON payload" in text and "the study: every 3 s" in text
    assert "ws/node_ws" not in text  # not in this file: no row made up for it
    gen = [r["generator_cpu_percent"] for rows in data["results"]["echo"].values() for r in rows]
    assert f"Locust used {min(gen):.0f}–{max(gen):.0f} % of its core" in text
    assert "waiting for a CPU" in text  # the generator below 50 % in this file: the machine's share, said


def test_a_generator_bound_run_is_said_so(tmp_path):
    data = json.loads(SMALL.read_text())
    data["results"]["echo"]["ws/go_gorilla"][0]["generator_cpu_percent"] = 93.0
    assert "bounded by the generator" in render(_with(tmp_path, data))


def test_invalid_runs_are_counted_not_hidden(tmp_path):
    data = json.loads(SMALL.read_text())
    row = data["results"]["broadcast"]["ws/go_gorilla"][0]
    row.update(valid=False, invalid_reasons=["2 of 3 broadcasts reached every receiver"])
    text = render(_with(tmp_path, data))
    assert "[1 of 2 invalid]" in text


def test_combine_means_over_runs():
    rows = [{"clients": 10, "run": r, "valid": True, "latency_ms": {"mean": m, "median": m, "stddev": 1.0}}
            for r, m in ((1, 2.0), (2, 4.0), (3, 9.0))]
    cell = fernando.combine({"broadcast": {"x": rows}})["x"][10]["broadcast_ms"]
    assert (cell["mean"], cell["low"], cell["high"], cell["runs"], cell["invalid"]) == (5.0, 2.0, 9.0, 3, 0)


def test_go_client_runs_show_the_clients_cpu_beside_its_limit(tmp_path):
    data = json.loads(SMALL.read_text())
    data["context"]["load"].update(client="go", client_how="the lab's Go load client (test)")
    row = data["results"]["broadcast"]["ws/go_gorilla"][0]
    row.update(client="go", client_cpu_percent=97.4, client_cpu_limit_percent=90.0, service_cpu_percent=55.0,
               machine_cpu_percent=71.0, valid=False,
               invalid_reasons=["the receivers used 97 % CPU while a broadcast was delivered, at or over their "
                                "limit 90 %: the receivers set the latency"])
    text = render(_with(tmp_path, data))
    assert "| broadcast | ws/go_gorilla | 10 | 1 | 97 % | 90 % | 55 % | 71 % | invalid: the receivers used 97 %" in text
    assert "the lab's Go load client (test)" in text and "Locust" not in text.split("The lab:")[1].split("\n")[0]
    # only Go-client runs have the columns: the Locust rows of the same file are not in that table
    assert text.count("| echo | ") == 0
