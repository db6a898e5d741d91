"""Connect's own conformance suite (connectrpc.com/conformance) against each Connect server of the lab
(clients/connect/conformance.py): make test runs the short feature set (each protocol and HTTP version
the server claims, unary, protobuf, no compression) and asserts that every case passed; `make conformance` runs every
feature each server claims (its conformance.yaml) and keeps the report in results/conformance/
(kind `conformance`), whatever the counts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clients.connect import conformance
from lab import results, settings
from lab.context import host_context
from lab.host.tools import go_install

SERVERS = conformance.servers()
FULL = os.environ.get("LAB_CONFORMANCE") == "full"  # make conformance
DIRECTORY = settings.RESULTS / "conformance"


@pytest.fixture(scope="module")
def runner() -> Path:
    if shutil.which("go") is None:
        pytest.skip("Connect's conformance runner is built with Go: install Go >= 1.26")
    return go_install(*conformance.RUNNER)


def test_every_connect_server_has_a_conformance_server_claiming_unary_calls() -> None:
    folder = settings.ROOT / "services"
    implementations = {p.parent.relative_to(folder).as_posix() for p in folder.glob("connect/*/manifest.toml")}
    assert {s.implementation for s in SERVERS} == implementations
    for server in SERVERS:
        claimed = server.config.read_text()
        assert "STREAM_TYPE_UNARY" in claimed and "STREAM_TYPE_SERVER" not in claimed


def test_the_short_set_narrows_what_a_server_claims() -> None:
    for server in SERVERS:
        short = server.short_config()
        assert "codecs: [CODEC_PROTO]" in short and "CODEC_JSON" not in short and "COMPRESSION_GZIP" not in short
        assert short.count("PROTOCOL_") == server.config.read_text().count("PROTOCOL_")


def test_the_report_is_read_from_the_runners_closing_lines() -> None:
    output = ("FAILED: Basic/HTTPVersion:1/Protocol:PROTOCOL_GRPC_WEB/unary/error:\n    bad\n\n"
              "Total cases: 12\n11 passed, 1 failed\n")
    report = conformance.read_report(output)
    assert (report["cases"], report["passed"], report["failed"]) == (12, 11, 1)
    assert report["failures"] == ["Basic/HTTPVersion:1/Protocol:PROTOCOL_GRPC_WEB/unary/error"]
    assert conformance.read_report("the runner stopped")["cases"] is None


@pytest.mark.parametrize("server", SERVERS, ids=lambda s: s.implementation)
def test_the_short_feature_set_passes_every_case(runner, server, tmp_path) -> None:
    conformance.build(server, tmp_path)
    config = tmp_path / "short.yaml"
    config.write_text(server.short_config())
    report = conformance.run(runner, server, tmp_path, config)
    print(f"\n{server.implementation}, short set: {report['passed']} of {report['cases']} passed "
          f"({report['seconds']} s)")
    assert report["cases"], report["output_tail"]
    assert report["failed"] == 0 and report["passed"] == report["cases"] and report["exit_status"] == 0, (
        f"{report['failed']} of {report['cases']} failed: {report['failures'][:10]}\n{report['output_tail']}")


@pytest.mark.skipif(not FULL, reason="the full claimed feature set: make conformance (LAB_CONFORMANCE=full)")
@pytest.mark.parametrize("server", SERVERS, ids=lambda s: s.implementation)
def test_the_claimed_feature_set_is_run_and_kept(runner, server, tmp_path) -> None:
    conformance.build(server, tmp_path)
    report = conformance.run(runner, server, tmp_path, server.config, timeout=3000)
    name = server.implementation.replace("/", "-")
    path = results.write("conformance", name, host_context(), report, DIRECTORY)
    print(f"\n{server.implementation}: {report['passed']} of {report['cases']} passed, {report['failed']} failed"
          f" ({report['seconds']} s): {path}")
    assert report["cases"], report["output_tail"]
