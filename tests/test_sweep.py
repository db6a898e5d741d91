"""The sweep (sweep/): its grid and commands (dry runs only), the cells it cuts from a latency
run, the crossovers with their intervals on synthetic data with known answers, `protolab
advise` on a small saved result set, its result format and its section of the report.
Nothing here is timed: the latency runs are synthetic."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from lab import axes, registry, workload
from lab import results as lab_results
from lab.settings import ROOT
from sweep import __main__ as sweep_main
from sweep import advise, cells, crossover, grid
from sweep.crossover import Point

CONTEXT = {"date": "2026-12-03T07:00:00+00:00", "commit": "0" * 40, "python": "3.11", "platform": "Linux-test",
           "cpu": {"model": "Test CPU", "count": 2}}


# --- crossovers: synthetic points with known answers ------------------------------------------

def points(*rows: tuple[str, float, float, float]) -> list[Point]:
    return [Point(label, ratio, (low, high)) for label, ratio, low, high in rows]


def test_a_crossing_the_intervals_support_is_stated_between_the_points_with_its_intervals():
    # a ÷ b: a faster at 1 and 10 games, b faster from 100 on
    found = crossover.crossover("rest", "fast", points(("1", 0.80, 0.75, 0.86), ("10", 0.85, 0.80, 0.90),
                                                      ("100", 1.20, 1.10, 1.31), ("1,000", 1.60, 1.45, 1.77)),
                                "games per response")
    assert found.kind == "crossover" and found.between == ("10", "100")
    assert found.text.startswith("fast overtakes rest between 10 and 100 games per response: the 99 % interval "
                                 "of their ratio excludes 1 at 10 games (rest ÷ fast 0.85, 0.80–0.90) and from "
                                 "100 games on (1.20, 1.10–1.31)"), found.text


def test_a_crossing_with_a_point_inside_the_interval_between_names_that_point():
    found = crossover.crossover("a", "b", points(("0", 0.7, 0.6, 0.8), ("1", 1.0, 0.9, 1.1), ("20", 1.3, 1.2, 1.4),
                                                 ("100", 1.5, 1.4, 1.6)), "ms round trip")
    assert found.kind == "crossover" and found.between == ("0", "20")
    assert "b overtakes a between 0 and 20 ms round trip" in found.text
    assert "from 20 ms on" in found.text and "inside the interval at 1 ms" in found.text


def test_no_crossover_when_one_is_faster_throughout():
    found = crossover.crossover("a", "b", points(("1", 0.5, 0.45, 0.55), ("10", 0.6, 0.5, 0.7),
                                                 ("100", 0.9, 0.8, 1.05)), "games per response")
    assert found.kind == "none" and found.between is None
    assert found.text == ("no crossover in the range measured (1–100 games per response): a faster than b wherever "
                          "the interval excludes 1 (1 and 10 games)")


def test_an_order_change_inside_the_interval_is_not_a_crossover():
    found = crossover.crossover("a", "b", points(("1", 0.95, 0.85, 1.04), ("10", 1.02, 0.93, 1.12),
                                                 ("100", 1.06, 0.97, 1.18)), "games per response")
    assert found.kind == "unsupported" and found.between == ("1", "10")
    assert "but not supported by the intervals (inside the interval at 1, 10 and 100 games)" in found.text
    held_one_way = crossover.crossover("a", "b", points(("1", 0.8, 0.7, 0.9), ("10", 1.05, 0.95, 1.15)), "ms")
    assert held_one_way.kind == "unsupported" and "inside the interval at 10 ms" in held_one_way.text


def test_a_crossing_and_back_is_stated_twice():
    found = crossover.crossover("a", "b", points(("1", 0.8, 0.7, 0.9), ("2", 1.3, 1.2, 1.4), ("3", 0.7, 0.6, 0.8)))
    assert found.kind == "crossover" and found.text.count("overtakes") == 2


# --- a synthetic latency run: known ratios, the suite's layout ----------------------------------

IMPLS = {"rest/go_nethttp": ("rest", "go"), "ws/go_coder": ("ws", "go"), "proto/node_x": ("proto", "node")}


def synthetic_run(truth: dict[tuple[str, str], dict[str, float]], cycles: int = 60, seed: int = 1,
                  sites: list[str] | None = None) -> dict[str, Any]:
    """A latency result as benchmarks/conftest.py writes it: per operation, per subject the
    rounds (cycle-major; `direct` 4 a cycle), median and ratio to direct; `truth` gives each
    (operation, subject) its time in s, every cycle's machine speed shared by all subjects."""
    rng = random.Random(seed)
    speed = [1 + 0.3 * rng.random() for _ in range(cycles)]
    results: dict[str, dict[str, Any]] = {}
    for (operation, _site), subjects in truth.items():
        rows = results.setdefault(operation, {})
        for subject, seconds in subjects.items():
            visits = 4 if subject.split("@")[0] == "direct" else 1
            data = [seconds * speed[c] * (1 + 0.02 * rng.random()) for c in range(cycles) for _ in range(visits)]
            ordered = sorted(data)
            rows[subject] = {"median": ordered[len(ordered) // 2] * 1e6, "rounds": len(data), "data_s": data,
                             "median_ci95": [ordered[0] * 1e6, ordered[-1] * 1e6]}
        for subject, row in rows.items():
            name, site = axes.parse_subject(subject)
            direct = rows.get(site.subject("direct"))
            if name != "direct" and direct:
                ratio = row["median"] / direct["median"]
                row["ratio_to_direct"] = {"ratio": ratio, "ci": [ratio * 0.97, ratio * 1.03]}
    site_list = [{"mode": "native", "path": axes.NetworkPath.parse(p).describe(), "suffix": ""}
                 for p in (sites or ["loopback"])]
    # the latency suite's context: a run of several sites is keyed by them all (benchmarks/conftest.py run_key)
    mode = "+".join("native" + ("" if p == "loopback" else f"@{p}") for p in (sites or ["loopback"]))
    context = {**CONTEXT, "mode": mode, "sites": site_list,
               "implementations": {n: {"protocol": p, "language": lang, "library": "lib"}
                                   for n, (p, lang) in IMPLS.items()},
               "settings": {"benchmark": {"design": {"block": 1, "blocks": cycles, "baseline": "direct",
                                                     "baseline_visits": 4}}}}
    return {"schema": "protolab.latency/1", "context": context, "results": results, "rankings": {},
            "site_rankings": {}}


def payload_truth() -> dict[tuple[str, str], dict[str, float]]:
    """rest faster at few games, ws from 100 on; proto slowest throughout."""
    times = {"fetch-one": (400e-6, 500e-6), "fetch-100": (6e-3, 4e-3)}
    return {(op, "loopback"): {"direct": 150e-6 if op == "fetch-one" else 2e-3, "rest/go_nethttp": r,
                               "ws/go_coder": w, "proto/node_x": 2.5 * max(r, w)}
            for op, (r, w) in times.items()}


def test_cells_of_a_run_carry_medians_ratios_pairs_and_the_source():
    run = synthetic_run(payload_truth())
    found = cells.cells_of(run, "results/sweep/runs/native-x.json", "compression", ("identity", "gzip"), "payload")
    assert [(c["operation"], c["variant"], c["path"], c["games"]) for c in found] == [
        ("fetch-one", "identity", "loopback", 1), ("fetch-100", "identity", "loopback", 100)]
    one = found[0]
    assert set(one["subjects"]) == set(IMPLS) and one["cycles"] == 60
    assert one["subjects"]["ws/go_coder"]["protocol"] == "ws" and one["subjects"]["proto/node_x"]["language"] == "node"
    pair = next(p for p in one["pairs"] if (p["a"], p["b"]) == ("rest/go_nethttp", "ws/go_coder"))
    assert pair["relation"] == "<" and pair["ratio"] == pytest.approx(0.8, rel=0.03)
    assert one["ranking"]["tiers"][0] == ["rest/go_nethttp"] and one["ranking"]["order"][-1] == "proto/node_x"
    assert one["run"] == {"file": "results/sweep/runs/native-x.json", "date": CONTEXT["date"], "commit": "0" * 40,
                          "machine": {"cpu": "Test CPU", "cores": 2, "platform": "Linux-test", "python": "3.11"}}
    statements = crossover.statements(found, ("identity", "gzip"))
    crossing = [s for s in statements if s["kind"] == "crossover"]
    assert len(crossing) == 1 and crossing[0]["axis"] == "payload"
    assert crossing[0]["text"].startswith("ws overtakes rest between 1 and 100 games per response")


def test_a_run_of_several_paths_gives_a_cell_per_path_each_against_its_own_direct():
    truth = {}
    for path, rtt in (("loopback", 0.0), ("rtt20ms", 0.02)):
        site = axes.Site("native", axes.NetworkPath.parse(path))
        truth[("fetch-one", path)] = {site.subject("direct"): 150e-6 + rtt,
                                      site.subject("rest/go_nethttp"): 400e-6 + rtt,
                                      site.subject("ws/go_coder"): 500e-6 + rtt}
    merged = {("fetch-one", "all"): {k: v for subjects in truth.values() for k, v in subjects.items()}}
    run = synthetic_run(merged, sites=["loopback", "rtt20ms"])
    found = cells.cells_of(run, "x.json", "compression", ("identity", "gzip"))
    by_path = {c["path"]: c for c in found}
    assert set(by_path) == {"loopback", "rtt20ms"}
    assert by_path["rtt20ms"]["link"]["rtt_ms"] == 20.0
    assert by_path["rtt20ms"]["subjects"]["rest/go_nethttp"]["subject"] == "rest/go_nethttp@rtt20ms"
    assert by_path["rtt20ms"]["direct_median_us"] > 20_000
    lines = crossover.lines(found)
    assert [(line.axis, line.labels) for line in lines] == [("rtt", ("0 (loopback)", "20"))]


def test_a_variant_subject_is_its_implementation_in_the_cell_of_its_value():
    truth = {("fetch-100", "loopback"): {"direct": 2e-3, "rest/go_nethttp": 6e-3, "rest/go_nethttp+gzip": 5e-3,
                                         "ws/go_coder": 4e-3, "ws/go_coder+other": 1e-3}}
    found = cells.cells_of(synthetic_run(truth), "x.json", "compression", ("identity", "gzip"))
    by_value = {c["variant"]: c for c in found}
    assert set(by_value) == {"identity", "gzip"}
    assert set(by_value["gzip"]["subjects"]) == {"rest/go_nethttp"}      # named by its implementation
    assert by_value["gzip"]["subjects"]["rest/go_nethttp"]["subject"] == "rest/go_nethttp+gzip"
    assert set(by_value["identity"]["subjects"]) == {"rest/go_nethttp", "ws/go_coder"}  # +other: another axis


# --- the grid and its commands (dry runs) ---------------------------------------------------------

@pytest.fixture
def merged_lab(monkeypatch):
    """The names the other branches add (fetch-<N>, the compression axis), as data only."""
    for n in (1, 10, 1000):
        monkeypatch.setitem(workload.OPERATIONS, f"fetch-{n}", workload.OPERATIONS["fetch-100"])
    axis = axes.Axis("compression", "test", (axes.Value("identity", "off"), axes.Value("gzip", "on")))
    monkeypatch.setitem(axes.VARIANT_AXES, "compression", axis)
    monkeypatch.setattr(grid, "supports", lambda impl, value: impl.startswith(("rest/", "graphql/")))
    monkeypatch.setattr(grid, "payload_bytes", lambda op: None if grid.games_of(op) is None
                        else 1650 * grid.games_of(op))


def test_the_default_grid_holds_the_three_slices_and_plans_within_its_budget(merged_lab):
    groups = grid.grid(check_host=False, costs={})   # the model's defaults, not this machine's saved runs
    assert [g.name for g in groups] == ["payload", "compression", "path"]
    payload, compression, path = groups
    assert payload.operations == grid.PAYLOAD_OPERATIONS and payload.paths == ("loopback",)
    assert compression.variants == ("identity", "gzip") and compression.operations == ("fetch-100", "fetch-1000")
    assert path.paths == grid.PATHS and path.operations == ("fetch-1", "fetch-100")
    impls = grid.default_implementations()
    protocols = [registry.variant(i).protocol for i in impls]
    assert len(protocols) == len(set(protocols))   # one per protocol
    assert all(registry.variant(i).language == "go" for i in impls
               if any(b.language == "go" and b.protocol == registry.variant(i).protocol and not b.missing()
                      for b in registry.bases()))
    env = compression.env("/tmp/runs")
    assert env["LAB_VARIANTS"] == "compression" and env["LAB_BENCH_OPERATIONS"] == "fetch-100,fetch-1000"
    assert [s for s in env["LAB_ONLY"].split(",") if "+" in s] == [f"{i}+gzip" for i in impls
                                                                   if i.startswith(("rest/", "graphql/"))]
    assert env["LAB_BENCH_RESULTS"] == "/tmp/runs" and path.env("x")["LAB_PATHS"] == ",".join(grid.PATHS)
    assert all(g.cycles >= grid.MIN_CYCLES for g in groups)
    # the plan is arithmetic from the model in sweep/grid.py, not a measurement
    assert sum(g.planned_seconds() for g in groups) <= grid.BUDGET_S
    assert len([c for g in groups for c in g.cells()]) == 4 + 4 + 12


def test_the_plan_is_calibrated_from_a_saved_run_and_leaves_a_too_slow_subject_out(merged_lab, tmp_path,
                                                                                      monkeypatch):
    run = synthetic_run(payload_truth())
    run["results"]["fetch-100"]["proto/node_x"]["median"] = 900e3   # 0.9 s at 100 games: ~9 s at 1,000
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "native-latest.json").write_text(json.dumps(run))
    costs, source = grid.calibration(tmp_path)
    assert source.endswith("native-latest.json") and set(costs) == {"direct", *IMPLS}
    assert costs["proto/node_x"].at(1650 * 100) == pytest.approx(0.9, rel=0.05)
    monkeypatch.setattr(grid, "default_implementations", lambda: ["rest/go_nethttp", "proto/node_x"])
    payload, path = grid.grid(axes_wanted=("payload", "path"), check_host=False, costs=costs)
    assert payload.implementations == ("rest/go_nethttp",)
    assert any(n.startswith("proto/node_x: left out of the payload slice: planned at 9.") for n in payload.left_out)
    assert path.implementations == ("rest/go_nethttp", "proto/node_x")   # 0.9 s a call at fetch-100: kept
    kept = grid.grid(axes_wanted=("payload",), check_host=False, costs=costs,
                     implementations=["rest/go_nethttp", "proto/node_x"])[0]
    assert kept.implementations == ("rest/go_nethttp", "proto/node_x")   # named on the command line: kept


def test_a_name_this_lab_lacks_is_left_out_with_the_reason(monkeypatch):
    groups = grid.grid(axes_wanted=("payload",), operations=["fetch-one", "fetch-all", "fetch-7", "fetch-1000"])
    assert [g.name for g in groups] == ["payload"]
    assert groups[0].operations == ("fetch-one", "fetch-7", "fetch-1000")   # the table's parametric rows are known
    assert any("fetch-all: not in this lab's workload table" in n for n in groups[0].left_out)
    with pytest.raises(ValueError, match="no axis 'speed'"):
        grid.grid(axes_wanted=("speed",))


def test_dry_run_prints_the_cells_and_the_commands_and_runs_nothing(capsys, tmp_path):
    code = sweep_main.main(["--dry-run", "--axis", "payload", "--cycles", "50", "--operations", "fetch-one,fetch-100",
                            "--impl", "rest/go_nethttp,ws/go_coder", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and not list(tmp_path.iterdir())
    assert "cell: fetch-one | base | loopback" in out or "cell: fetch-one | identity | loopback" in out
    assert "LAB_BENCH_CYCLES=50" in out and "LAB_ONLY=rest/go_nethttp,ws/go_coder" in out
    assert "-m pytest benchmarks --benchmark-only -p no:xdist" in out and "planned:" in out


def test_the_sweep_answers_help_and_the_make_target_exists():
    for module in ("sweep", "sweep.advise"):
        done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and "usage:" in done.stdout, done.stderr
    done = subprocess.run([sys.executable, "-m", "lab.cli", "advise", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "protolab advise" in done.stdout, done.stderr
    assert "\nsweep: bootstrap" in (ROOT / "Makefile").read_text()


# --- the result, advise and the report on a small saved result set ------------------------------

def sweep_result(tmp_path: Path) -> Path:
    """Payload 1/10/100/1000 games on loopback; 0/20/100 ms and 10 Mbit/s at fetch-1 and fetch-100."""
    runs = tmp_path / "runs"
    runs.mkdir()
    files = []
    base = {"fetch-1": (400e-6, 500e-6), "fetch-10": (900e-6, 950e-6), "fetch-100": (6e-3, 4e-3),
            "fetch-1000": (60e-3, 30e-3)}
    truth = {(op, "loopback"): {"direct": 150e-6 * max(1, grid.games_of(op) / 10), "rest/go_nethttp": r,
                                "ws/go_coder": w, "proto/node_x": 3 * max(r, w)} for op, (r, w) in base.items()}
    path = runs / "native-payload.json"
    path.write_text(json.dumps(synthetic_run(truth)))
    files.append(("payload", path))
    truth = {}
    for op in ("fetch-1", "fetch-100"):
        for name, rtt, slow in (("loopback", 0, 1.0), ("rtt20ms", 0.02, 1.0), ("rtt100ms", 0.1, 1.0),
                                ("10mbit", 0.0, 3.0)):
            site = axes.Site("native", axes.NetworkPath.parse(name))
            r, w = base[op]
            truth.setdefault((op, "all"), {}).update({
                site.subject("direct"): 150e-6 + rtt, site.subject("rest/go_nethttp"): r * slow + rtt,
                site.subject("ws/go_coder"): w * (slow if op == "fetch-1" else 0.5 * slow) + rtt,
                site.subject("proto/node_x"): 3 * max(r, w) + rtt})
    path = runs / "native+native@rtt20ms.json"
    path.write_text(json.dumps(synthetic_run(truth, sites=["loopback", "rtt20ms", "rtt100ms", "10mbit"])))
    files.append(("path", path))
    context, data = sweep_main.build(files, "compression", [])
    return sweep_main.write(context, data, tmp_path / "sweep")


def test_the_sweep_result_validates_and_names_its_runs(tmp_path):
    path = sweep_result(tmp_path)
    assert path.name.startswith("sweep-") and (tmp_path / "sweep" / "latest.json").exists()
    data = lab_results.validate(tmp_path / "sweep" / "latest.json")
    assert data["schema"] == "protolab.sweep/1"
    assert {c["run"]["file"] for c in data["cells"]} == {str(tmp_path / "runs" / "native-payload.json"),
                                                         str(tmp_path / "runs" / "native+native@rtt20ms.json")}
    assert {s["axis"] for s in data["crossovers"]} >= {"payload", "rtt", "bandwidth"}
    assert any(s["kind"] == "crossover" and s["axis"] == "payload" for s in data["crossovers"])
    # loopback's fetch-1 and fetch-100 were measured by both runs: the payload run's line (four points) covers
    # the path run's (two), so each pair is stated once along it
    lines = ("fetch on loopback", "fetch at identity on loopback")  # the compression axis' base named, if present
    on_loopback = [s for s in data["crossovers"] if s["axis"] == "payload" and s["line"] in lines]
    assert len(on_loopback) == 3 and {s["run"] for s in on_loopback} == {str(tmp_path / "runs" / "native-payload.json")}
    assert all(len(s["points"]) == 4 for s in on_loopback)


@pytest.fixture
def saved(tmp_path) -> dict[str, Any]:
    sweep_result(tmp_path)
    return lab_results.read(tmp_path / "sweep" / "latest.json", "sweep")


def test_advise_small_responses_on_loopback(saved):
    answer = advise.advise(saved, {"games": 1, "rtt_ms": 0.0, "compression": None})
    assert answer["cell"]["operation"] == "fetch-1" and answer["cell"]["path"] == "loopback"
    assert answer["pick"] == ["rest/go_nethttp"] and answer["warnings"] == []
    text = "\n".join(advise.lines(answer))
    assert "nearest measured cell: fetch-1 | identity | loopback" in text or "fetch-1 | base | loopback" in text
    assert "figures from: " in text and "2026-12-03T07:00:00+00:00" in text and "Test CPU" in text


def test_advise_100_games_at_20_ms(saved):
    answer = advise.advise(saved, {"games": 100, "rtt_ms": 20.0})
    assert (answer["cell"]["operation"], answer["cell"]["path"]) == ("fetch-100", "rtt20ms")
    assert answer["ranking"]["order"][-1] == "proto/node_x" and answer["warnings"] == []


def test_advise_1000_games_at_10_mbit_says_the_cell_it_used_differs(saved):
    answer = advise.advise(saved, {"games": 1000, "rtt_ms": 0.0, "mbit": 10.0})
    assert (answer["cell"]["operation"], answer["cell"]["path"]) == ("fetch-100", "10mbit")
    assert answer["pick"] == ["ws/go_coder"]
    assert any("1,000 games asked; the nearest measured cell has 100" in w for w in answer["warnings"])


def test_advise_warns_outside_the_grid_and_filters_languages(saved):
    answer = advise.advise(saved, {"games": 1, "rtt_ms": 500.0}, ["node", "cobol"])
    assert answer["cell"]["path"] == "rtt100ms"
    assert any("500 ms round trip is outside the grid (measured 0–100 ms)" in w
               for w in answer["warnings"])
    assert any("no implementation in cobol" in w for w in answer["warnings"])
    assert answer["ranking"]["order"] == ["proto/node_x"]


def test_advise_from_the_command_line_reads_saved_results_only(tmp_path):
    sweep_result(tmp_path)
    done = subprocess.run([sys.executable, "-m", "lab.cli", "advise", "--games", "100", "--rtt-ms", "20",
                           "--results", str(tmp_path / "sweep" / "latest.json")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nearest measured cell: fetch-100" in done.stdout and "pick: " in done.stdout
    missing = subprocess.run([sys.executable, "-m", "sweep.advise", "--results", str(tmp_path / "none.json")],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "make sweep" in missing.stdout


def test_the_report_section_shows_the_axes_the_picks_and_the_crossovers(tmp_path):
    from report import sweep as sweep_report
    from report.page import Page, to_markdown

    page = Page("t")
    assert sweep_report.section(page, tmp_path) == []
    assert "Not run: `make sweep`" in to_markdown(page, None, "")
    sweep_result(tmp_path)
    page = Page("t")
    said = sweep_report.section(page, tmp_path)
    text = to_markdown(page, tmp_path / "figures", "figures")
    assert said and all(s.startswith("sweep: ") and "overtakes" in s for s in said)
    assert "The implementation to pick, per cell" in text and "games per response" in text
    assert "ws overtakes rest" in text and "<svg" not in text  # figures as files beside the Markdown
    assert list((tmp_path / "figures").glob("sweep-*.svg"))


def test_the_variant_axis_values_are_read_from_the_axis_table():
    values, why = grid.variant_values("workers")
    assert values == ("gevent", "gthread") and why is None
    assert grid.variant_values("nonesuch")[1].startswith("lab/axes.py has no 'nonesuch' axis")
    assert isinstance(axes.VARIANT_AXES["workers"].values[0].service_env, MappingProxyType)


def test_a_path_slice_this_host_cannot_shape_is_left_out_saying_why(monkeypatch, merged_lab):
    monkeypatch.setattr(grid, "path_unavailable", lambda path: "no namespaces here" if path.veth else None)
    assert grid.grid(axes_wanted=("path",), costs={}) == []
    monkeypatch.setattr(grid, "path_unavailable", lambda path: "no loss here" if path.loss_pct else None)
    (group,) = grid.grid(axes_wanted=("path",), costs={}, paths=["loopback", "rtt20ms", "loss1pct"])
    assert group.paths == ("loopback", "rtt20ms") and group.left_out == ("loss1pct: no loss here: left out",)


def test_the_calibration_takes_each_implementation_from_the_newest_run_that_has_it(tmp_path):
    runs = tmp_path / "sweep" / "runs"
    runs.mkdir(parents=True)
    older = synthetic_run(payload_truth())
    newer = synthetic_run({k: {s: t / 2 for s, t in v.items() if s != "proto/node_x"}
                           for k, v in payload_truth().items()})
    (runs / "native-1.json").write_text(json.dumps(older))
    (runs / "native-2.json").write_text(json.dumps(newer))
    os.utime(runs / "native-1.json", (1, 1))
    costs, source = grid.calibration(tmp_path)
    assert source == f"{runs / 'native-2.json'}, {runs / 'native-1.json'}"
    # the machine's speed in the synthetic cycles is 1 to 1.3: within 30 %, and apart from the other run's
    assert costs["rest/go_nethttp"].at(1349) == pytest.approx(200e-6, rel=0.3)   # the newer run's, halved
    assert costs["proto/node_x"].at(1349) == pytest.approx(1250e-6, rel=0.3)     # only in the older one


# --- the runner, with a stand-in for the latency suite (no lab is started) ------------------------

class StandIn(grid.Group):
    """A group whose "run" is a small Python process that writes a synthetic latency file and says
    where, as the suite's terminal summary does."""

    def command(self) -> list[str]:
        script = ("import json, os, pathlib; out = pathlib.Path(os.environ['LAB_BENCH_RESULTS']); "
                  "out.mkdir(parents=True, exist_ok=True); path = out / 'native-standin.json'; "
                  f"path.write_text({json.dumps(json.dumps(synthetic_run(payload_truth())))}); "
                  "print('raw results:', path)")
        return [sys.executable, "-c", script]


class Broken(grid.Group):
    def command(self) -> list[str]:
        return [sys.executable, "-c", "print('no file')"]


def test_the_runner_runs_each_group_reads_its_file_and_writes_the_sweep(tmp_path, monkeypatch, capsys):
    group = StandIn("payload", ("fetch-one", "fetch-100"), ("loopback",), ("",), ("rest/go_nethttp",), 20,
                    axis="payload")
    broken = Broken("path", ("fetch-one",), ("loopback", "rtt20ms"), ("",), ("rest/go_nethttp",), 20, axis="path")
    asked: list[tuple[list[str] | None, float | None]] = []

    def plan(args, axes_wanted=None, budget_s=None):
        asked.append((axes_wanted, budget_s))
        return [g for g in (group, broken) if axes_wanted is None or g.axis in axes_wanted]
    monkeypatch.setattr(sweep_main, "plan", plan)
    monkeypatch.setattr(grid, "results_dir", lambda: str(tmp_path / "runs"))
    assert sweep_main.main(["--out", str(tmp_path / "sweep")]) == 0
    out = capsys.readouterr().out
    assert "sweep: [path] failed: the path run (exit 0) wrote no latency file" in out
    data = lab_results.validate(tmp_path / "sweep" / "latest.json")
    assert data["context"]["sweep"]["failed"] == {"path": data["context"]["sweep"]["failed"]["path"]}
    assert [g["name"] for g in data["context"]["sweep"]["groups"]] == ["payload", "path"]
    assert all(isinstance(g["took_s"], int) for g in data["context"]["sweep"]["groups"])
    assert [c["operation"] for c in data["cells"]] == ["fetch-one", "fetch-100"]
    assert data["cells"][0]["run"]["file"] == str(tmp_path / "runs" / "native-standin.json")
    assert "ws overtakes rest between 1 and 100 games per response" in out
    assert list((tmp_path / "sweep" / "logs").glob("payload-*.log"))
    # after the first slice the one left was planned again, for what the budget had left
    assert asked[0] == (None, None) and asked[1][0] == ["path"]
    assert grid.BUDGET_S - grid.MARGIN_S - 60 < asked[1][1] < grid.BUDGET_S - grid.MARGIN_S


def test_the_slices_left_are_planned_again_for_the_time_left(merged_lab, monkeypatch):
    monkeypatch.setattr(grid, "calibration", lambda directory=None: ({}, ""))
    args = sweep_main.parser().parse_args([])
    pending = sweep_main.plan(args)[1:]   # as if the payload slice had run
    assert [g.axis for g in pending] == ["compression", "path"]
    early = sweep_main.replanned(args, pending, spent_s=60)
    late = sweep_main.replanned(args, pending, spent_s=25 * 60)   # the first slice overran its plan
    assert [g.axis for g in early] == [g.axis for g in late] == ["compression", "path"]
    assert all(e.cycles > lt.cycles for e, lt in zip(early, late, strict=True))
    assert all(g.cycles == grid.MIN_CYCLES for g in late)   # nothing left but the floor
    fixed = sweep_main.parser().parse_args(["--cycles", "50"])
    assert sweep_main.replanned(fixed, pending, spent_s=25 * 60) is pending   # --cycles is kept as asked


def test_a_groups_time_budgets_follow_its_plan_per_operation(merged_lab):
    group = grid.grid(axes_wanted=("path",), check_host=False, costs={})[0]
    budgets = dict(part.split("=") for part in group.env("/tmp/runs")["LAB_BENCH_MAX_S"].split(","))
    assert list(budgets) == list(group.operations) == ["fetch-1", "fetch-100"]
    assert float(budgets["fetch-100"]) > float(budgets["fetch-1"]) > 0   # the larger response, the longer
    total = sum(float(v) for v in budgets.values())
    assert total == pytest.approx(grid.OVERRUN * group.cycles * group.cycle_seconds(), rel=0.01)
