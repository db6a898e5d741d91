"""The one results format (lab/results.py, lab/schemas/): what write() puts in a
file, read()'s refusals, and every kind's JSON Schema against real results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from capture import report as capture_report
from lab import results
from lab.context import host_context
from lab.results_check import check, written_since
from tests.test_report import bench_run, wire_results

DATA = Path(__file__).parent / "data"
CONTEXT = {"date": "2026-12-02T06:15:00+00:00", "commit": "0" * 40}


def test_every_kind_has_a_schema_and_every_schema_a_kind():
    files = {p.name.removesuffix(".schema.json") for p in results.SCHEMAS.glob("*.schema.json")}
    assert files - {"context", "envelope", "published"} == set(results.KINDS)  # published: the studies' figures
    for kind in results.KINDS:
        schema = json.loads((results.SCHEMAS / f"{kind}.schema.json").read_text())
        assert schema["$id"] == f"urn:protolab:result:{kind}"
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["properties"]["schema"] == {"const": results.schema_name(kind)}
        jsonschema.Draft202012Validator.check_schema(schema)


def test_write_names_the_files_and_puts_the_envelope_first(tmp_path):
    path = results.write("faults", "kill9", CONTEXT, {"lost": 0}, tmp_path)
    assert path == tmp_path / "kill9-2026-12-02T061500Z.json"
    latest = tmp_path / "kill9-latest.json"
    assert latest.read_text() == path.read_text()
    data = json.loads(path.read_text())
    assert list(data) == ["schema", "context", "lost"]
    assert data["schema"] == "protolab.faults/1" and data["context"] == CONTEXT
    assert results.read(latest, "faults") == data


def test_write_a_partial_run_or_a_fixed_name(tmp_path):
    results.write("faults", "partial", CONTEXT, {}, tmp_path, latest=False)
    results.write("faults", "wire", CONTEXT, {}, tmp_path, stamped=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial-2026-12-02T061500Z.json", "wire.json"]


def test_write_refuses_an_unknown_kind_and_data_in_the_envelope(tmp_path):
    with pytest.raises(results.ResultError, match="unknown result kind 'latncy'"):
        results.write("latncy", "x", CONTEXT, {}, tmp_path)
    with pytest.raises(results.ResultError, match="may not hold schema"):
        results.write("faults", "x", CONTEXT, {"schema": "mine"}, tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("content", "message"), [
    ({"schema": "protolab.nonsense/1", "context": CONTEXT}, "unknown result kind 'nonsense'"),
    ({"schema": "protolab.latency/2", "context": CONTEXT}, r"newer than this lab reads \(protolab.latency/1\)"),
    ({"schema": "latency", "context": CONTEXT}, "not a protolab result name"),
    ({"context": CONTEXT, "results": {}}, 'no "schema" member'),
    ([1, 2], 'no "schema" member'),
])
def test_read_refuses_a_file_of_another_kind_or_a_newer_version(tmp_path, content, message):
    path = tmp_path / "x-latest.json"
    path.write_text(json.dumps(content))
    with pytest.raises(results.ResultError, match=message) as caught:
        results.read(path)
    assert str(path) in str(caught.value)  # the message names the file


def test_read_refuses_another_kind_than_asked_and_a_file_cut_short(tmp_path):
    path = results.write("faults", "f", CONTEXT, {}, tmp_path)
    with pytest.raises(results.ResultError, match="a faults result where a latency result was expected"):
        results.read(path, "latency")
    path.write_text(path.read_text()[:20])
    with pytest.raises(results.ResultError, match="not JSON"):
        results.read(path)


def test_the_lab_examples_validate(tmp_path):
    """tests/data (real runs of python -m studies fernando, python -m studies push and
    capture.push, trimmed) and the report tests' latency and capture results."""
    for path in sorted(DATA.glob("*.json")):
        assert results.validate(path)["schema"].startswith("protolab."), path
    run = bench_run("native", 1)
    results.validate(results.write("latency", "native", run["context"], {"results": run["results"],
                                                                         "rankings": {}}, tmp_path))
    written = capture_report.write(wire_results(), tmp_path, "wire")
    assert results.validate(tmp_path / "wire.json")["schema"] == "protolab.capture/1", written
    results.validate(results.write("runs", "runs", host_context(), {
        "modes": ["native"], "runs_per_mode": 1, "files": {"native": ["a.json"]}, "summary": {}}, tmp_path))


def test_a_result_that_breaks_its_schema_is_named_with_the_place(tmp_path):
    run = bench_run("native", 1)
    row = run["results"]["insert"]["direct"]
    row["median"] = "fast"
    path = results.write("latency", "native", run["context"], {"results": run["results"], "rankings": {}}, tmp_path)
    with pytest.raises(results.ResultError, match="latency/1 result at results/insert/direct/median: 'fast' is not"):
        results.validate(path)
    del run["context"]["mode"]
    path = results.write("latency", "native", run["context"], {"results": {}}, tmp_path)
    with pytest.raises(results.ResultError, match="'rankings' is a required property") as caught:
        results.validate(path)
    assert str(path) in str(caught.value) and "and 1 more" in str(caught.value)  # mode, missing too


def test_the_session_check_names_each_bad_file_written_since_it_began(tmp_path):
    old = results.write("faults", "old", CONTEXT, {}, tmp_path, stamped=False)
    past = old.stat().st_mtime - 100
    good = results.write("cpus", "good", CONTEXT, {"args": {}, "ratios_to_direct": {}, "summary": {}}, tmp_path,
                         stamped=False)
    bad = tmp_path / "sub" / "bad.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"results": {}}))
    os.utime(old, (past, past))
    paths = written_since(tmp_path, past + 50)
    assert paths == [good, bad]
    problems = check(paths)
    assert len(problems) == 1 and str(bad) in problems[0] and 'no "schema"' in problems[0]


def test_the_ci_check_fails_on_a_bad_file_or_none_and_passes_good_ones(tmp_path, capsys):
    from lab.results_check import main

    assert main([str(tmp_path)]) == 1  # nothing written is a failure too
    results.write("cpus", "good", CONTEXT, {"args": {}, "ratios_to_direct": {}, "summary": {}}, tmp_path,
                  stamped=False)
    assert main([str(tmp_path)]) == 0
    (tmp_path / "bad.json").write_text(json.dumps({"results": {}}))
    assert main([str(tmp_path)]) == 1
    assert str(tmp_path / "bad.json") in capsys.readouterr().out


def test_a_plain_registry_resolves_the_schemas_by_their_ids():
    """What a user's own validator does: every schema in a registry by its $id, nothing else."""
    resources = [Resource.from_contents(json.loads(p.read_text())) for p in results.SCHEMAS.glob("*.schema.json")]
    registry = Registry().with_resources((r.id(), r) for r in resources)
    validator = jsonschema.Draft202012Validator({"$ref": "urn:protolab:result:push"}, registry=registry)
    data = json.loads((DATA / "push-quick.json").read_text())
    assert validator.is_valid(data)
    data["rows"][0]["clients"] = "ten"
    assert not validator.is_valid(data)


def test_load_writes_each_scenario_in_its_kind(tmp_path):
    """load.common.write(name, data, directory, kind=...): the lab's format, the kind the scenario names."""
    from load.common import write as load_write

    for name, kind in (("sweep", "load"), ("feathers", "feathers"), ("fernando", "fernando"), ("push", "push")):
        path = load_write(name, {"context": CONTEXT, "results": {}}, tmp_path, kind=kind)
        assert path.name == f"{name}-2026-12-02T061500Z.json"
        assert results.read(tmp_path / f"{name}-latest.json", kind)["results"] == {}
    with pytest.raises(TypeError):
        load_write("other", {"context": CONTEXT}, tmp_path)  # a kind must be named


def test_how_an_operations_cycles_ended_is_one_record(tmp_path):
    """context.settings.benchmark.stopping holds where, why and after how long an operation's cycles ended
    (the cap, the sequential rule or the time budget); settle holds the warm-up alone. The two records a
    run wrote before (settle.measured beside stopping) no longer validate."""
    from lab.stats.sequential import Rule

    run = bench_run("native", 1)
    one = {**Rule(cap=800, target=0.02).describe(), "stopped_at": 400, "cap": 800, "seconds": 95.0,
           "stopped_by": "the sequential rule", "level": 0.9975, "reason": "every ratio within ±2.0%",
           "looks_taken": []}
    settle = {"cycles": 100, "seconds": 30.0, "warmup": {}, "warmup_s": 12.0}
    run["context"]["settings"]["benchmark"] = {"stopping": {"insert": one}, "settle": {"insert": settle}}
    path = results.write("latency", "native", run["context"], {"results": run["results"], "rankings": {}}, tmp_path)
    results.validate(path)
    two = {k: v for k, v in one.items() if k not in ("stopped_by", "seconds")}
    measured = {**settle, "measured": {"cycles": 400, "asked": 800, "seconds": 95.0, "stopped_by": "cycles"}}
    run["context"]["settings"]["benchmark"] = {"stopping": {"insert": two}, "settle": {"insert": measured}}
    path = results.write("latency", "native", run["context"], {"results": run["results"], "rankings": {}}, tmp_path)
    with pytest.raises(results.ResultError, match="benchmark/s"):
        results.validate(path)
