"""The report's load section (report/load.py) from synthetic result files:
what it shows, what it marks invalid, what it says is missing."""

from __future__ import annotations

import json
from pathlib import Path

from lab.results import schema_name
from load import histograms
from report import load as load_report
from report.page import Page, to_markdown


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
    kind = {"sweep": "load", "kcheck": "crosscheck"}.get(name, name)
    (results / "load" / f"{name}-latest.json").write_text(json.dumps({"schema": schema_name(kind), **data}))


def _latency(results: Path, data: dict) -> None:
    (results / "benchmarks").mkdir()
    (results / "benchmarks" / "native-latest.json").write_text(json.dumps({"schema": schema_name("latency"), **data}))


def render(results: Path) -> str:
    page = Page("t")
    load_report.section(page, results)
    return to_markdown(page, results / "figs", "figs")


def test_missing_sweep_names_the_command(tmp_path):
    assert "run `make load`" in render(tmp_path)


def test_the_k6_cross_check_is_shown_without_a_sweep(tmp_path):
    _write(tmp_path, "kcheck", {"results": {"fetch-one": {"rest/python_flask": {
        "median_us": 900, "mean_us_from_throughput": 950.0, "clock": "k6 HTTP timings (µs)"}}}})
    _latency(tmp_path, {"results": {"fetch-one": {"rest/python_flask": {"median": 1800.0}}}})
    text = render(tmp_path)
    assert "run `make load`" in text
    assert "| fetch-one | rest/python_flask | 900 | 950 | 1,800 | 2.00 |" in text


def test_sweep_table_kcheck_and_feathers(tmp_path):
    name = "rest/python_flask"
    closed = [_row(name, 10, 5000), _row(name, 100, 40000), _row(name, 1000, 400000, valid=False)]
    _write(tmp_path, "sweep", {"context": {"load": {"engine_version": "2.47.0", "closed_clients": [10, 100, 1000],
                                                     "p99_limit_ms": 50, "pinning": {"enabled": False},
                                                     "sweep_seconds": 61}},
                               "results": {name: {"closed": closed, "open": [], "knee_rps": 321,
                                                  "concurrency": "gevent", "seconds": 61.0}}})
    _write(tmp_path, "kcheck", {"results": {"fetch-one": {name: {
        "median_us": 900, "mean_us_from_throughput": 950.0, "clock": "k6 HTTP timings (µs)"},
        "ws/go_coder": {"median_us": 1, "mean_us_from_throughput": 300.0,
                        "clock": "Date.now() in the script (1 ms)"}}}})
    _latency(tmp_path, {"results": {"fetch-one": {name: {"median": 1800.0}, "ws/go_coder": {"median": 600.0}}}})
    _write(tmp_path, "feathers", {"results": {
        name: [{"calls_per_connection": 1, "requests_per_s": 100.0,
                "bytes_per_call": {"sent": 80, "received": 150}}],
        "ws/python_simple_websocket": [{"calls_per_connection": 1, "requests_per_s": 60.0,
                                        "bytes_per_call": {"sent": 30, "received": 30}}]}})
    text = render(tmp_path)
    row = next(line for line in text.splitlines() if line.startswith(f"| {name}") and "321" in line)
    assert "| 5.0 |" in row and "invalid" in row and "1,234" in row and "| 111 |" in row
    assert "| 2.00 |" in text  # Python client ÷ k6 at fetch-one
    # a millisecond clock: no median (a "1 µs" median gave 600x), the ratio from k6's mean
    ws = next(line for line in text.splitlines() if line.startswith("| fetch-one | ws/go_coder"))
    assert "| – | 300 | 600 | 2.00 (mean) |" in ws
    # the study's table beside the lab's: its rows, the lab's requests/s and the pair's ratio
    feathers = next(line for line in text.splitlines() if line.startswith("| 1 |") and "50 % slower" in line)
    assert "| 100 |" in feathers and "| 60 |" in feathers and "| 0.60 |" in feathers
    assert "~3,900" in text and "| not run |" in text  # the study's 500–2,000 calls, not run in this file
    assert "at 1 call the WebSocket side is 0.60× HTTP (slower, as the study found)" in text
