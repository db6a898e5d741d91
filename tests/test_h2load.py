"""The h2load instrument (load/h2load.py): a short run of h2load against a Go REST subject over
HTTP/1.1 and over h2, through `python -m load.h2load` itself. It checks what was negotiated (h2load's
own report, and the verified request before it), that every request was counted, logged and
answered, and the result file; the invalid-run rule on a run that negotiated the wrong protocol.
No timing decides a test. Skipped, saying why, when h2load is not installed and cannot be."""

from __future__ import annotations

from typing import Any

import pytest

from lab import registry, results
from lab.host import pinning
from lab.host.tools import ToolMissing
from load import h2load
from load.common import RESULTS

H1, H2 = "rest/go_nethttp", "rest/go_nethttp+h2"
CLIENTS, REQUESTS = 10, 300


def _tool() -> str:
    try:
        return h2load.ensure_h2load()
    except ToolMissing as exc:
        print(f"skipping: {exc}")
        pytest.skip(f"h2load unavailable: {exc}")


def test_each_subject_is_laid_out_as_its_http_version_says() -> None:
    h1, h2 = h2load.shape(registry.variant(H1), 100), h2load.shape(registry.variant(H2), 100)
    h2c = h2load.shape(registry.variant("rest/go_nethttp+h2c"), 100)
    assert (h1.connections, h1.streams, h1.expected) == (100, 1, "http/1.1")
    assert (h2.connections, h2.streams, h2.expected) == (1, 100, "h2")
    assert (h2c.connections, h2c.streams, h2c.expected) == (1, 100, "h2c")
    request = h2load.request_of(registry.variant(H1), "http://127.0.0.1:1", "fetch-one")
    argv = h2load.argv("h2load", request, h1, "log", None, duration_s=10, warmup_s=3, requests=None,
                       cpus=frozenset({1}))
    assert argv[:3] == ["taskset", "-c", "1"] and "--h1" in argv
    assert argv[argv.index("-D") + 1] == "10" and argv[argv.index("--warm-up-time") + 1] == "3"
    sent = [argv[i + 1] for i, a in enumerate(argv) if a == "-H"]
    assert sent and all(h.split(":")[0] not in h2load.OWN_HEADERS for h in sent)  # no Connection for HTTP/2
    assert "--h1" not in h2load.argv("h2load", request, h2, "log", None, duration_s=1, warmup_s=1, requests=None,
                                     cpus=None)


def test_a_call_that_is_not_an_http_get_or_post_is_left_out() -> None:
    not_http = next(i for i in registry.discover() if i.endpoint.split("://")[0] not in ("http", "https"))
    assert h2load.why_not(not_http, "fetch-one")
    assert h2load.why_not(registry.variant(H1), "fetch-one") is None


def _measured(protocol: str, done: int, **report: Any) -> h2load.Measured:
    cpu = {H2: 1.0, "generator": 0.5}
    return h2load.Measured(
        {"protocol": protocol, "requests": {"done": done, "succeeded": done, "failed": 0, "errored": 0, "timeout": 0},
         "status": {"2xx": done, "3xx": 0, "4xx": 0, "5xx": 0}, "finished": {"req_per_s": 100.0}, **report},
        h2load.histograms.new_histogram(), {200: done}, {k: 0.0 for k in cpu}, cpu, 1.0, cpu, {}, "", "",
        [], {}, 0.0, [1.0, 1.0])


def test_the_invalid_run_rule() -> None:
    """Another protocol than the subject's, an answer other than 2xx, or a busy generator: invalid."""
    layout = h2load.shape(registry.variant(H2), 10)
    pins = pinning.Pinning(True, frozenset({0}), frozenset({1}))
    ok = h2load.row(registry.variant(H2), "fetch-one", 10, layout, _measured("h2", 100), pins)
    assert ok["valid"], ok["invalid_reasons"]
    fell_back = h2load.row(registry.variant(H2), "fetch-one", 10, layout, _measured("http/1.1", 100), pins)
    assert not fell_back["valid"] and "negotiated http/1.1, not h2" in fell_back["invalid_reasons"][0]
    m = _measured("h2", 100, status={"2xx": 95, "3xx": 0, "4xx": 5, "5xx": 0})
    refused = h2load.row(registry.variant(H2), "fetch-one", 10, layout, m, pins)
    assert not refused["valid"] and refused["errors"] == {"4xx": 5}
    busy = _measured("h2", 100)
    busy.closed["generator"] = 0.9   # 90 % of its one core over the 1 s window
    assert any("the generator used 90 % CPU" in r
               for r in h2load.row(registry.variant(H2), "fetch-one", 10, layout, busy, pins)["invalid_reasons"])


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    _tool()
    args = h2load.parser().parse_args(["--impl", H1, H2, "--clients", str(CLIENTS), "--requests", str(REQUESTS),
                                       "--out", "h2load-test"])
    assert h2load.main(args) == 0
    path = RESULTS / "h2load-test-latest.json"
    results.validate(path)   # the load format (lab/schemas/load.schema.json)
    return results.read(path, "load")


@pytest.mark.parametrize("subject, protocol, connections, streams", [(H1, "http/1.1", CLIENTS, 1),
                                                                      (H2, "h2", 1, CLIENTS)])
def test_a_short_run_negotiates_counts_and_logs_every_request(result, subject, protocol, connections, streams):
    assert result["context"]["load"]["engine"] == "h2load"
    assert "does not verify" in result["context"]["load"]["certificate"]
    (row,) = result["results"][subject]["closed"]
    g = row["generator"]
    assert g["application_protocol"] == protocol == g["expected_protocol"]
    assert (g["connections"], g["streams_per_connection"]) == (connections, streams)
    assert g["requests"]["done"] == g["requests"]["succeeded"] == REQUESTS and row["errors"] == {}
    assert g["status_codes"]["2xx"] == REQUESTS and row["ops_window"] == REQUESTS
    assert g["log_lines"] == REQUESTS and g["log_statuses"] == {"200": REQUESTS}
    assert row["latency_us"]["count"] == REQUESTS and 0 < row["latency_us"]["p50"] <= row["latency_us"]["max"]
    # the service's CPU is measured (300 requests of a Go server can take less than the kernel's 10 ms tick)
    assert row["throughput_rps"] > 0 and row["resources"][subject]["cpu_s"] >= 0
    assert row["resources"]["generator"]["cpu_s"] > 0
    if protocol == "h2":
        assert g["tls_protocol"] == "TLSv1.3"
        checked = g["verified_request"]
        assert (checked["http_version"], checked["alpn"], checked["status"]) == ("HTTP/2", "h2", 200)
        assert checked["verified_against"] and checked["tls_version"] == "TLSv1.3"
    else:
        assert g["tls_protocol"] is None and g["verified_request"]["http_version"] == "HTTP/1.1"
    assert row["valid"] or all("generator" in r for r in row["invalid_reasons"]), row["invalid_reasons"]


def test_the_table_has_a_row_per_run(result) -> None:
    rows = h2load.table(result["results"]).splitlines()
    assert len(rows) == 2 + 2 and rows[2].startswith(f"| {H1} | http/1.1 |") and rows[3].startswith(f"| {H2} | h2 |")
