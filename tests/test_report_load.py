"""The report's load section (report/load.py) from synthetic result files:
what it shows, what it marks invalid, what it says is missing."""

from __future__ import annotations

import json
from pathlib import Path

from lab.results import schema_name
from load import histograms
from report import load as load_report
from report.inputs import Inputs
from report.page import Page, to_markdown
from studies import get


def _row(name: str, clients: int, p50: float, valid: bool = True) -> dict:
    histogram = histograms.new_histogram()
    histogram.record_value(int(p50))
    return {"implementation": name, "model": "closed", "clients": clients, "rate": None, "valid": valid,
            "invalid_reasons": [] if valid else ["the generator woke 9.0 ms late (p99) for its scheduled sends"],
            "latency_us": {**histograms.latency_summary(histogram)}, "throughput_rps": 100.0 * clients ** 0.5,
            "errors": {}, "generator_cpu_percent": 12.0,
            "resources": {name: {"cpu_percent": 50.0, "cpu_us_per_request": 1234.0, "rss_peak_bytes": 50 * 2 ** 20},
                          "database": {"cpu_percent": 5.0, "cpu_us_per_request": 111.0,
                                       "rss_peak_bytes": 20 * 2 ** 20},
                          "generator": {"cpu_percent": 12.0, "cpu_us_per_request": 90.0,
                                        "rss_peak_bytes": 60 * 2 ** 20}}}


def _write(results: Path, name: str, data: dict) -> None:
    """A file as python -m load names it, its kind's schema name on it (the rest trimmed to what the report reads)."""
    (results / "load").mkdir(parents=True, exist_ok=True)
    kind = {"sweep": "load"}.get(name, name)
    (results / "load" / f"{name}-latest.json").write_text(json.dumps({"schema": schema_name(kind), **data}))


def _latency(results: Path, data: dict) -> None:
    (results / "benchmarks").mkdir()
    (results / "benchmarks" / "native-latest.json").write_text(json.dumps({"schema": schema_name("latency"), **data}))


def render(results: Path) -> str:
    page = Page("t")
    load_report.section(page, results)
    get("feathers").report().section(page, Inputs(results))
    return to_markdown(page, results / "figs", "figs")


def test_missing_sweep_names_the_command(tmp_path):
    assert "run `make load`" in render(tmp_path)


def _cell(median: int, client: str = "Go net/http go1.26.8", errors: dict | None = None) -> dict:
    return {"client": client, "latency_us": {"p50": median}, "answered": 1000 - sum((errors or {}).values()),
            "calls": 1000, "errors": errors or {}}


def test_the_cross_check_is_shown_without_a_sweep(tmp_path):
    _write(tmp_path, "crosscheck", {"context": {"crosscheck": {"warmup": 100}},
                                    "results": {"fetch-one": {"rest/python_flask": {
                                        **_cell(900), "load_average_1m": [1.25, 3.5]}}}})
    _latency(tmp_path, {"results": {"fetch-one": {"rest/python_flask": {"median": 1800.0}}}})
    text = render(tmp_path)
    assert "run `make load`" in text
    assert "| fetch-one | rest/python_flask | Go net/http go1.26.8 | 900 | 1,800 | 2.00 (suite) | 1,000 |" in text
    assert "not measured (`make bench`)" not in text
    assert "1-minute load average over the runs: 1.2–3.5" in text


def test_the_cross_check_without_the_latency_suite_says_so(tmp_path):
    _write(tmp_path, "crosscheck", {"results": {"insert": {
        "socketio/node_socketio": _cell(700, "socket.io-client 4.8.4", {"timeout": 2})}}})
    text = render(tmp_path)
    assert "| insert | socketio/node_socketio | socket.io-client 4.8.4 | 700 | – | – | 998 (2 failed) |" in text
    assert "The Python client's medians: not measured (`make bench`)." in text


def test_the_cross_check_prefers_the_python_client_timed_in_the_same_cell(tmp_path):
    cell = {**_cell(900), "python_client_latency_us": {"p50": 2700}}
    _write(tmp_path, "crosscheck", {"results": {"fetch-one": {"rest/python_flask": cell}}})
    _latency(tmp_path, {"results": {"fetch-one": {"rest/python_flask": {"median": 1800.0}}}})
    text = render(tmp_path)
    assert "| fetch-one | rest/python_flask | Go net/http go1.26.8 | 900 | 2,700 | 3.00 | 1,000 |" in text


def test_no_cross_check_names_its_command(tmp_path):
    assert "Not measured: `python -m load.crosscheck`." in render(tmp_path)


def test_sweep_table_and_feathers(tmp_path):
    name = "rest/python_flask"
    closed = [_row(name, 10, 5000), _row(name, 100, 40000), _row(name, 1000, 400000, valid=False)]
    _write(tmp_path, "sweep", {"context": {"load": {"engine_version": "2.47.0", "closed_clients": [10, 100, 1000],
                                                     "p99_limit_ms": 50, "pinning": {"enabled": False},
                                                     "sweep_seconds": 61}},
                               "results": {name: {"closed": closed, "open": [], "knee_rps": 321,
                                                  "concurrency": "gevent", "seconds": 61.0}}})
    _write(tmp_path, "feathers", {"results": {
        name: [{"calls_per_connection": 1, "requests_per_s": 100.0,
                "bytes_per_call": {"sent": 80, "received": 150}}],
        "ws/python_simple_websocket": [{"calls_per_connection": 1, "requests_per_s": 60.0,
                                        "bytes_per_call": {"sent": 30, "received": 30}}]}})
    text = render(tmp_path)
    row = next(line for line in text.splitlines() if line.startswith(f"| {name}") and "321" in line)
    assert "| 5.0 |" in row and "invalid" in row and "1,234" in row and "| 111 |" in row
    # the study's table beside the lab's: its rows, the lab's requests/s and the pair's ratio
    feathers = next(line for line in text.splitlines() if line.startswith("| 1 |") and "50 % slower" in line)
    assert "| 100 |" in feathers and "| 60 |" in feathers and "| 0.60 |" in feathers
    assert "~3,900" in text and "| not run |" in text  # the study's 500–2,000 calls, not run in this file
    assert "at 1 call the WebSocket side is 0.60× HTTP (slower, as the study found)" in text


def test_h2load_runs_beside_the_locust_runs_of_the_same_subject(tmp_path):
    name = "rest/go_nethttp+h2"
    ours = {**_row(name, 100, 3000), "connections": "1 connection, 100 streams",
            "generator": {"engine": "h2load", "application_protocol": "h2"}, "load_average_1m": [1.5, 2.25]}
    theirs = {**_row(name, 100, 115000, valid=False), "connections": "one per Locust process, a stream per user"}
    (tmp_path / "load").mkdir()
    (tmp_path / "load" / "h2load-latest.json").write_text(json.dumps(
        {"schema": schema_name("load"), "context": {"load": {"engine": "h2load", "engine_version": "h2load 1.52.0",
                                                             "pinning": {"enabled": False}}},
         "results": {name: {"closed": [ours]}}}))
    (tmp_path / "load" / "http2-100-latest.json").write_text(json.dumps(
        {"schema": schema_name("load"), "context": {"date": "2026-12-03T13:39:23+0000", "load": {"engine": "locust"}},
         "results": {name: {"closed": [theirs]}}}))
    text = render(tmp_path)
    h2load_line = next(line for line in text.splitlines() if line.startswith(f"| {name} | h2load (100)"))
    assert "| 1 connection, 100 streams | h2 |" in h2load_line and "| 3.0 |" in h2load_line
    locust_line = next(line for line in text.splitlines() if line.startswith(f"| {name} | Locust (100)"))
    assert "http2-100-latest.json" in locust_line and "no: the generator" in locust_line
    assert "load average over the h2load runs: 1.5–2.2" in text


def test_no_h2load_run_names_its_command(tmp_path):
    assert "Not measured: `python -m load.h2load`." in render(tmp_path)
