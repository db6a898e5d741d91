"""make reference (report/reference.py): what docs/reference/ holds was written by the command, from one
run, and a hand's edit, an added or a lost file is found; the stages cover every instrument; a run's
long sample lists are kept as their count and quantiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lab import results
from lab.context import host_context
from lab.settings import ROOT
from lab.stats import noise
from report import reference

DATA = Path(__file__).parent / "data"


def test_what_docs_reference_holds_is_what_make_reference_wrote():
    """The committed reference (when there is one): every file listed in its index with the SHA-256 it was
    written with, every compact result valid and of the index's run; no file beside them."""
    assert reference.check() == [], reference.check()


@pytest.fixture(autouse=True)
def no_run_kept_under_way(tmp_path, monkeypatch):
    """The repository's own docs/reference-under-way.tar.xz (a real run between two sessions) is not a
    test's: with it, --go-on would take that run up and run its stages."""
    monkeypatch.setattr(reference, "UNDER_WAY", tmp_path / "none-under-way.tar.xz")


def snapshot(calibration_us: float, load: float) -> dict:
    return {"time": 0.0, "calibration_us": calibration_us, "calibration_samples": [calibration_us],
            "slow_share": 0.0, "loadavg": [load, load, load], "cpu_ticks": {}}


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A run as make reference leaves it before its report stage: run.state, stages.state and the
    instruments' results (real result files of the lab's examples; one with 500 samples)."""
    folder = tmp_path / "run"
    out = folder / "results"
    (out / "load").mkdir(parents=True)
    shutil.copy(DATA / "fernando-small.json", out / "load" / "fernando-latest.json")
    (out / "load" / "notes.txt").write_text("a file that is not JSON: its size listed, not kept\n")
    context = host_context()
    results.write("cpus", "cpus", context, {"samples_us": [float(i) for i in range(500)]}, out)
    (out / "benchmarks").mkdir()
    (out / "benchmarks" / "pytest-benchmark.json").write_text(json.dumps({"benchmarks": []}))  # not a result
    run = {"id": "2026-12-03T140000Z-abcdef123456-smoke", "scale": "smoke", "commit": context["commit"],
           "started": context["date"], "host": context}
    (folder / "run.state").write_text(json.dumps(run))
    guard = noise.verdict(snapshot(100.0, 1.0), snapshot(130.0, 3.0))
    stages = {"studies": {"stage": "studies", "what": "x", "started": context["date"], "seconds": 12.5,
                          "disk_bytes": 9000, "ok": True, "commit": context["commit"], "noise": guard,
                          "commands": [{"command": "python -m studies fernando", "exit": 0, "seconds": 12.0,
                                        "must_pass": False}]}}
    (folder / "stages.state").write_text(json.dumps(stages))
    return folder


def test_publish_writes_the_report_compact_results_and_an_index_that_checks(run_folder, tmp_path):
    earlier = {**host_context(), "date": "2026-12-01T00:00:00+00:00"}   # the stage run before: superseded
    results.write("cpus", "cpus", earlier, {"samples_us": [1.0, 2.0]}, run_folder / "results", latest=False)
    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    assert reference.check(docs) == []
    index = results.validate(docs / "index.json")
    assert index["run_id"] == "2026-12-03T140000Z-abcdef123456-smoke"
    assert set(index["files"]) >= {"README.md", "results/studies.json", "results/other.json"}
    assert index["raw"]["files"] == 6 and index["stages"]["studies"]["noise_flagged"]  # calibration +30 %
    studies = results.validate(docs / "results" / "studies.json")
    assert list(studies["results"]) == ["load/fernando-latest.json"]
    assert studies["context"]["run"]["stages"]["studies"]["calibration_us"] == [100.0, 130.0]
    assert studies["noise"]["flagged"] and studies["stage"]["seconds"] == 12.5
    other = results.validate(docs / "results" / "other.json")
    assert list(other["results"]) == ["cpus-latest.json"]   # its dated twin and an earlier run's: kept once
    samples = other["results"][next(iter(other["results"]))]["samples_us"]
    assert samples["samples"] == 500 and samples["median"] == 249.5 and samples["max"] == 499.0
    readme = (docs / "README.md").read_text()
    assert readme.splitlines()[0].startswith("<!-- written by `make reference`") and "run 2026-12-03T140000Z" in \
        readme.splitlines()[0]
    assert "| studies |" in readme and "flagged: the pure-Python calibration moved +30%" in readme


def test_a_run_that_went_on_at_a_later_commit_names_each_stages_commit(run_folder, tmp_path):
    """--go-on: a stage run at another commit than the run's first is named with its commit in the stage
    table, the header and the README's findings line say the run spans commits; one commit, one name."""
    stages = json.loads((run_folder / "stages.state").read_text())
    run = json.loads((run_folder / "run.state").read_text())
    first = {**run, "commit": "a" * 40}
    later = {**stages["studies"], "commit": "b" * 40}
    assert reference.stage_commits(first, {"studies": later}) == ["a" * 40, "b" * 40]
    assert reference.commits_text(first, {"studies": {**later, "commit": "a" * 40}}) == f"commit `{'a' * 12}`"
    (run_folder / "run.state").write_text(json.dumps(first))
    (run_folder / "stages.state").write_text(json.dumps({"studies": later}))
    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    readme = (docs / "README.md").read_text()
    assert f"| studies | `{'b' * 12}` |" in readme
    assert "Its stages ran at 2 commits" in readme and f"git diff --stat {'a' * 12} {'b' * 12}" in readme
    assert f"commits `{'a' * 12}`, `{'b' * 12}`" in (docs / reference.findings.FILE).read_text()


@pytest.mark.parametrize("tamper,found", [
    (lambda d: (d / "README.md").write_text((d / "README.md").read_text() + "\na figure typed in\n"),
     "README.md: changed since make reference wrote it"),
    (lambda d: (d / "notes.md").write_text("hand-written\n"), "notes.md: not written by make reference"),
    (lambda d: (d / "results" / "studies.json").unlink(), "results/studies.json: listed in index.json but missing"),
    (lambda d: (d / "index.json").unlink(), "no index.json"),
])
def test_a_hand_edit_an_added_or_a_lost_file_fails_the_check(run_folder, tmp_path, tamper, found):
    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    tamper(docs)
    problems = reference.check(docs)
    assert any(found in p for p in problems), problems


def test_a_compact_result_of_another_run_fails_the_check(run_folder, tmp_path):
    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    other = tmp_path / "other"
    run = json.loads((run_folder / "run.state").read_text())
    (run_folder / "run.state").write_text(json.dumps({**run, "id": "2026-12-01T000000Z-0123-smoke"}))
    reference.publish(run_folder, other)
    shutil.copy(other / "results" / "studies.json", docs / "results" / "studies.json")
    problems = reference.check(docs)
    assert any("of run 2026-12-01T000000Z-0123-smoke" in p for p in problems), problems


def test_the_stages_cover_every_instrument_at_both_scales():
    """Each instrument's command is in a stage (the latency suite with both modes at full scale, fuzz at
    10,000 cases); the smoke scale runs the same commands, smaller."""
    for scale in reference.SCALES:
        commands = {s.name: [c.text() for c in s.commands(scale)] for s in reference.STAGES}
        text = "\n".join(c for cs in commands.values() for c in cs)
        for needle in ("pytest --benchmark-only benchmarks", "-m capture", "-m capture.push", "-m load", "-m sweep",
                       "-m studies push", "-m studies feathers", "-m studies fernando", "-m profiling",
                       "tests/test_fuzz.py"):
            assert needle in text, (scale, needle)
        if scale == "full":
            assert "LAB_MODE=native,docker" in commands["latency"][0]
            assert "FUZZ_CASES=10000" in commands["fuzz"][0]
    assert [s.name for s in reference.STAGES][-1] == "report"


def test_a_result_lands_in_the_stage_that_writes_its_folder():
    assert reference.stage_of("benchmarks/native+docker-latest.json") == "latency"
    assert reference.stage_of("load/sweep-latest.json") == "load"
    assert reference.stage_of("load/push-latest.json") == "studies"
    assert reference.stage_of("capture/wire.json") == "capture"
    assert reference.stage_of("fuzz/latest.json") == "fuzz"
    assert reference.stage_of("setup/connection-setup-latest.json") == "studies"   # a study scenario's setup rounds
    assert reference.stage_of("cpus-latest.json") == "other"


def test_the_make_target_passes_stages_and_scale():
    makefile = (ROOT / "Makefile").read_text()
    assert "reference: bootstrap" in makefile and "--stages $(STAGES)" in makefile
    assert "--scale $(REFERENCE_SCALE)" in makefile


def test_a_run_of_native_and_docker_reads_as_a_run_of_each_mode():
    """make reference measures both modes in one run (native+docker-latest.json); the report's per-mode
    sections read each mode's subjects from it, named without the site's suffix, ranked against their
    own direct."""
    from report.inputs import one_site

    row = {"median": 100.0}
    run = {"context": {"mode": "native+docker", "sites": [{"mode": "native", "suffix": ""},
                                                           {"mode": "docker", "suffix": "@docker"}]},
           "results": {"insert": {"rest/python_flask": row, "direct": row, "rest/python_flask@docker": row,
                                  "direct@docker": row}},
           "site_rankings": {"insert": {"": {"order": ["direct", "rest/python_flask"]},
                                        "@docker": {"order": ["direct@docker", "rest/python_flask@docker"]}}}}
    docker = one_site(run, "docker", "native+docker")
    assert set(docker["results"]["insert"]) == {"rest/python_flask", "direct"}
    assert docker["rankings"]["insert"]["order"] == ["direct", "rest/python_flask"]
    assert docker["context"]["mode"] == "docker" and docker["context"]["one_site_of"] == "native+docker-latest.json"
    assert "docker" not in docker["context"]   # the site says no daemon: not recorded, never the site as "Docker"
    described = {**run, "context": {**run["context"], "sites": [run["context"]["sites"][0], {
        **run["context"]["sites"][1], "docker": {"daemon": {"version": "20.10.24"}}}]}}
    assert one_site(described, "docker", "native+docker")["context"]["docker"]["daemon"]["version"] == "20.10.24"
    native = one_site(run, "native", "native+docker")
    assert set(native["results"]["insert"]) == {"rest/python_flask", "direct"}
    assert one_site(run, "native", "native+native@rtt20ms") is not None
    assert one_site(run, "docker", "native+native@rtt20ms") is None


def test_a_run_goes_on_across_a_commit_of_the_reference_alone():
    """A run resumes at the commit it started from, or one that differs from it in docs/reference/ only."""
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          timeout=30).stdout.strip()
    parent = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=ROOT, capture_output=True, text=True,
                            timeout=30).stdout.strip()
    if not head or not parent:
        pytest.skip("not a git checkout with history")
    assert reference.same_code(head, head)
    touched = subprocess.run(["git", "diff", "--name-only", parent, head], cwd=ROOT, capture_output=True,
                             text=True, timeout=30).stdout.split()
    assert reference.same_code(parent, head) == all(t.startswith("docs/reference/") for t in touched)
    assert not reference.same_code(head + "-dirty", head)


def test_the_fuzz_stage_prints_cases_failures_server_errors_and_time(tmp_path):
    from fuzz.summary import lines

    context = host_context()
    tallies = [{"implementation": "rest/python_flask", "cases": 10000, "failures": 0, "server_errors": 0,
                "seconds": 312.4, "date": context["date"], "commit": context["commit"]},
               {"implementation": "grpc/go_grpc", "cases": 10000, "failures": 2, "server_errors": 1,
                "date": context["date"], "commit": context["commit"]}]   # an older tally, without its time
    path = results.write("fuzz", "latest", context, {"cases_per_implementation": 10000, "seed": 1,
                                                      "tallies": tallies}, tmp_path, stamped=False)
    out = lines(path)
    assert out[0] == "latest.json: 10,000 cases per implementation, seed 1"
    assert "rest/python_flask" in out[1] and "10,000 cases" in out[1] and "312.4 s" in out[1]
    assert "2 failures" in out[2] and "1 server errors" in out[2] and "no time recorded" in out[2]
    assert out[-1] == "  all 2 implementations: 20,000 cases, 2 failures, 1 server errors, 5.2 min of cases"


def test_the_readmes_findings_are_the_reference_runs_and_a_hand_edit_is_found(run_folder, tmp_path):
    """publish writes readme-findings.txt (report/findings.py, from the run's results); sync_readme puts it between
    README's markers; a figure changed there by hand fails the check, and syncing again mends it."""
    from report import findings

    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    written = (docs / "readme-findings.txt").read_text()
    assert "From the reference run `2026-12-03T140000Z-abcdef123456-smoke`" in written
    assert "**The published studies**" in written   # the studies' claims judged on the run's (few) results
    readme = tmp_path / "README.md"
    readme.write_text(f"# lab\n\n{findings.FINDINGS_START}\nold\n{findings.FINDINGS_END}\n\n## Two commands\n")
    assert any("differ from docs/reference/readme-findings.txt" in p for p in reference.check(docs, readme))
    assert reference.sync_readme(docs, readme) and reference.check(docs, readme) == []
    assert readme.read_text().endswith(f"{findings.FINDINGS_END}\n\n## Two commands\n")
    readme.write_text(readme.read_text().replace("claims:", "claims (typed):"))
    assert any("edited by hand" in p for p in reference.check(docs, readme))
    readme.write_text("# lab without markers\n")
    assert any("no findings block" in p for p in reference.check(docs, readme))


def test_a_finding_names_the_fastest_and_slowest_with_their_intervals_and_the_groups():
    """report/findings.py on a synthetic ranking with known answers; a site's subject (…@docker) is not
    one of the native run's implementations."""
    from report import findings
    from report.inputs import Inputs

    to_base = {"a/go_x": {"ratio": 1.5, "ci": [1.4, 1.6]}, "b/python_y": {"ratio": 3.0, "ci": [2.8, 3.3]},
               "c/node_z": {"ratio": 2.9, "ci": [2.5, 3.2]}, "a/go_x@docker": {"ratio": 9.0, "ci": [8, 10]}}
    ranking = {"confidence": 0.99, "cycles": 300, "tiers": [["direct"], ["a/go_x"], ["b/python_y", "c/node_z"]],
               "to_baseline": to_base}
    run = {"context": {"date": "2026-12-03T17:00:00+00:00", "noise": {"flagged": False}},
           "rankings": {"fetch-one": ranking}, "results": {"fetch-one": {}},
           "comparisons": {"fetch-one": [
               {"a": "a/go_x@docker", "b": "a/go_x", "axis": "mode", "ratio": 1.2, "ci": [1.1, 1.3]},
               {"a": "b/python_y@docker", "b": "b/python_y", "axis": "mode", "ratio": 0.98, "ci": [0.9, 1.05]}]}}
    inputs = Inputs(Path("/nonexistent"), runs={"native": run})
    text = findings.extremes(inputs, "fetch-one")
    assert "fastest of 3, `a/go_x`, takes 1.50× [1.40–1.60]" in text   # alone in its group: no "not told apart"
    ranking["tiers"] = [["direct"], ["a/go_x", "c/node_z"], ["b/python_y"]]
    assert "`a/go_x` (not told apart from `c/node_z`), takes" in findings.extremes(inputs, "fetch-one")
    ranking["tiers"] = [["direct"], ["a/go_x"], ["b/python_y", "c/node_z"]]
    assert "the slowest, `b/python_y`, 3.00× [2.80–3.30]" in text and "separate 2 groups" in text
    assert findings.extremes(inputs, "fetch-100") is None
    docker = findings.docker(inputs)
    assert "2 pairs" in docker and "1 slower and 0 faster" in docker and "`a/go_x@docker` ÷ `a/go_x`, 1.20×" in docker
    run["context"]["noise"] = {"flagged": True, "reasons": ["the calibration moved +19%"]}
    assert "flagged this run: the calibration moved +19%" in findings.extremes(inputs, "fetch-one")


def test_a_run_whose_folder_was_lost_goes_on_from_the_committed_reference(run_folder, tmp_path, monkeypatch):
    """The run folder is gone with its machine and docs/reference/ has no archive of its results: --go-on
    restores the run from it (each stage's
    record, noise guard and commit), runs a stage the report does not read (fuzz), and publishing keeps the
    committed report, figures and compact results byte for byte while adding the stage and its tallies;
    a stage the report reads is refused, since the raw results it would be reported with are gone."""
    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    (docs / reference.ARCHIVE).unlink()   # as the 2026-12-03 reference, published before the archive was
    shutil.rmtree(run_folder)
    runs = tmp_path / "runs"
    monkeypatch.setattr(reference, "RUNS", runs)
    monkeypatch.setattr(reference, "DOCS", docs)
    monkeypatch.setattr(reference, "git_commit", lambda: "c" * 40)
    with pytest.raises(SystemExit):   # argparse's error: studies feeds the report
        reference.main(["--go-on", "--scale", "smoke", "--stages", "studies"])
    folder = reference.current_run()
    run = json.loads((folder / "run.state").read_text())
    assert run["id"] == "2026-12-03T140000Z-abcdef123456-smoke" and run["restored"]["stages"] == ["studies"]
    stages = json.loads((folder / "stages.state").read_text())
    assert stages["studies"]["noise"]["flagged"] and stages["studies"]["seconds"] == 12.5
    # the fuzz stage as make reference runs it: its tallies in the run's results, its record in stages.state
    context = host_context()
    tallies = [{"implementation": "rest/go_nethttp", "cases": 10000, "failures": 0, "server_errors": 0,
                "seconds": 96.0, "date": context["date"], "commit": "c" * 40}]
    results.write("fuzz", "latest", context, {"cases_per_implementation": 10000, "seed": 1, "tallies": tallies},
                  folder / "results" / "fuzz", stamped=False)
    stages["fuzz"] = {**stages["studies"], "stage": "fuzz", "seconds": 600.0, "commit": "c" * 40,
                      "noise": noise.verdict(snapshot(100.0, 1.0), snapshot(101.0, 1.2))}
    (folder / "stages.state").write_text(json.dumps(stages))
    again = tmp_path / "again"
    reference.publish(folder, again)
    assert reference.check(again) == []
    before, after = (docs / "README.md").read_text(), (again / "README.md").read_text()
    assert reference.report_page(after) == reference.report_page(before)
    for name in ("results/studies.json", reference.findings.FILE):
        assert (again / name).read_bytes() == (docs / name).read_bytes(), name
    assert f"| fuzz | `{'c' * 12}` |" in after and "| studies |" in after
    assert "lost with its machine after stages studies ended" in after
    assert "rest/go_nethttp" in after and "all 1 implementations: 10,000 cases, 0 failures, 0 server errors" in after
    index = results.validate(again / "index.json")
    assert set(index["stages"]) == {"studies", "fuzz"} and "restored" in index
    assert index["raw"]["files"] == results.validate(docs / "index.json")["raw"]["files"] + 1
    fuzz = results.validate(again / "results" / "fuzz.json")
    assert list(fuzz["results"]) == ["fuzz/latest.json"]


def test_a_published_run_is_made_again_whole_from_its_archive(run_folder, tmp_path, monkeypatch):
    """raw.tar.xz: the run's results losslessly (the 500 samples, not their quantiles; no dated twin, no
    profiler's native file); with the run's folder gone, --go-on makes it again from docs/reference/ and
    any stage may go on, its report written again from the same results."""
    (run_folder / "results" / "profiles" / "x").mkdir(parents=True)
    (run_folder / "results" / "profiles" / "x" / "v8.cpuprofile").write_text("{}")
    (run_folder / "results" / "profiles" / "x" / "stacks.collapsed").write_text("a;b 3\n")
    docs = tmp_path / "docs-reference"
    reference.publish(run_folder, docs)
    kept = {p.relative_to(run_folder / "results").as_posix(): p.read_bytes()
            for p in (run_folder / "results").rglob("*") if p.is_file()}
    shutil.rmtree(run_folder)
    monkeypatch.setattr(reference, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(reference, "DOCS", docs)
    monkeypatch.setattr(reference, "git_commit", lambda: "c" * 40)
    folder = reference.restore(docs)
    again = {p.relative_to(folder / "results").as_posix(): p.read_bytes()
             for p in (folder / "results").rglob("*") if p.is_file()}
    assert again == {k: v for k, v in kept.items()
                     if not k.endswith(".cpuprofile") and not reference.STAMPED.match(k.rpartition("/")[2])}
    assert "cpus-latest.json" in again and "load/fernando-latest.json" in again
    assert not json.loads((folder / "run.state").read_text())["restored"]["stages"]   # nothing kept aside
    republished = tmp_path / "again"
    reference.publish(folder, republished)
    assert reference.check(republished) == []
    assert (republished / reference.ARCHIVE).read_bytes() == (docs / reference.ARCHIVE).read_bytes()
    assert "made again from `docs/reference/raw.tar.xz`" in (republished / "README.md").read_text()
    other = results.validate(republished / "results" / "other.json")
    assert other["results"]["cpus-latest.json"]["samples_us"]["samples"] == 500


def test_a_run_under_way_kept_between_sessions_is_taken_up_whole_and_leaves_when_published(run_folder, tmp_path,
                                                                                           monkeypatch):
    """A full run is longer than a session: --keep writes the run under way (its states and results) to one
    archive beside docs/reference/, which stays as it was; with the run's folder lost, --go-on takes the run
    up from it byte for byte and goes on (here with the report stage, which runs no instrument); publishing
    the run removes the kept archive."""
    runs = tmp_path / "runs"
    runs.mkdir()
    run_id = json.loads((run_folder / "run.state").read_text())["id"]
    folder = run_folder.rename(runs / run_id)
    (runs / "current").write_text(run_id + "\n")
    (folder / "report").mkdir()
    (folder / "report" / "report.md").write_text("written again by publishing: not kept\n")
    docs = tmp_path / "docs" / "reference"
    monkeypatch.setattr(reference, "RUNS", runs)
    monkeypatch.setattr(reference, "DOCS", docs)
    monkeypatch.setattr(reference, "UNDER_WAY", tmp_path / "docs" / "reference-under-way.tar.xz")
    readme = tmp_path / "README.md"
    readme.write_text(f"# lab\n\n{reference.findings.FINDINGS_START}\n{reference.findings.FINDINGS_END}\n")
    monkeypatch.setattr(reference, "README", readme)
    monkeypatch.setattr(reference, "git_commit", lambda: "c" * 40)
    assert reference.main(["--keep"]) == 0
    kept = reference.UNDER_WAY.read_bytes()
    assert reference.main(["--keep"]) == 0 and reference.UNDER_WAY.read_bytes() == kept   # the same bytes again
    assert not docs.exists()   # the published reference is not touched
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    shutil.rmtree(runs)
    again = reference.take_up()
    assert again == folder and reference.current_run() == folder
    assert {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == \
        {k: v for k, v in files.items()   # less what publishing writes again and a result's dated twin
         if not k.startswith("report/") and not reference.STAMPED.match(k.rpartition("/")[2])}
    with pytest.raises(FileExistsError):
        reference.take_up()
    shutil.rmtree(runs)
    assert reference.main(["--go-on", "--scale", "smoke", "--stages", "report"]) == 0
    stages = json.loads((folder / "stages.state").read_text())
    assert list(stages) == ["studies", "report"] and stages["studies"]["seconds"] == 12.5
    assert reference.check(docs) == [] and run_id in (docs / "README.md").read_text().splitlines()[0]
    assert not reference.UNDER_WAY.exists()
    assert run_id in readme.read_text()   # the findings of the run published
