"""The producing commands as `make capture` and `make load` run them, briefly, on one or two
implementations: each exits 0 and every result file it writes validates against its kind's
JSON Schema (lab/schemas/; make test's and make bench's files are checked by the session
check, lab/results_check.py). What the numbers are is the benchmarks' business, not this."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import results, settings
from lab.results_check import written_since
from tests.test_wire_capture import skip_unless_capturing

COMMAND_TIMEOUT_S = 600


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, *argv], cwd=settings.ROOT, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S, env={**os.environ, "PYTHONPATH": str(settings.ROOT)})
    assert done.returncode == 0, (f"{' '.join(argv)} exited {done.returncode}:\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def validated(paths: list[Path], kind: str) -> list[dict]:
    assert paths, "the command wrote no result file"
    documents = [results.validate(path) for path in paths]
    assert {d["schema"] for d in documents} == {results.schema_name(kind)}, [str(p) for p in paths]
    return documents


def test_make_capture_writes_results_in_the_format(tmp_path):
    skip_unless_capturing()
    run("-m", "capture", "--only", "rest/go_nethttp", "grpc/go_grpc", "-n", "3", "--out", str(tmp_path / "wire"))
    (wire,) = validated(sorted((tmp_path / "wire").glob("*.json")), "capture")
    assert set(wire["context"]["implementations"]) >= {"rest/go_nethttp", "grpc/go_grpc"}
    run("-m", "capture.push", "--only", "sse/go_nethttp", "--out", str(tmp_path / "push"))
    for push in validated(sorted((tmp_path / "push").glob("*.json")), "push-capture"):  # dated and latest
        assert {r["implementation"] for r in push["rows"]} == {"sse/go_nethttp"}


def test_make_load_writes_results_in_the_format():
    name = f"test-commands-{os.getpid()}"
    since = time.time() - 1.0
    try:
        run("-m", "load", "--impl", "rest/go_nethttp", "--clients", "10", "--model", "closed",
            "--duration", "0.5", "--warmup", "0.3", "--no-pin", "--out", name)
        written = [p for p in written_since(settings.RESULTS / "load", since) if p.name.startswith(name)]
        documents = validated(written, "load")
        assert all("rest/go_nethttp" in str(d["results"]) for d in documents)
    finally:
        for path in (settings.RESULTS / "load").glob(f"{name}-*.json"):
            path.unlink()


BRIEF = {"LAB_BENCH_CYCLES": "10", "LAB_BENCH_WARMUP": "5", "LAB_BENCH_WARMUP_MAX_S": "1",
         "LAB_BENCH_SETTLE_CYCLES": "2"}


@pytest.mark.parametrize(("argv", "kind"), [
    (["-m", "benchmarks.executions", "--executions", "1", "--operation", "fetch-one", "rest/go_nethttp"],
     "executions"),
    (["-m", "benchmarks.memory_reducer", "--executions", "2", "--operation", "fetch-one",
      "--impl", "rest/go_nethttp", "rest/node_fastify"], "memory-reducer"),
], ids=["executions", "memory-reducer"])
def test_the_experiments_write_results_in_the_format(argv, kind, monkeypatch):
    for name, value in BRIEF.items():
        monkeypatch.setenv(name, value)
    since = time.time() - 1.0
    before = set(settings.RESULTS.glob(f"{kind}-*.json"))
    try:
        run(*argv)
        written = [p for p in written_since(settings.RESULTS, since) if p.name.startswith(f"{kind}-")]
        (document,) = validated(written, kind)
        assert document["operation"] == "fetch-one"
    finally:
        for path in set(settings.RESULTS.glob(f"{kind}-*.json")) - before:
            path.unlink()
