"""make profile (profiling/): one implementation per runtime profiled briefly
by its runtime's own profiler, each profile naming the service's own
functions; the category table at work on known stacks; the report's flame
graphs rendered in headless Chromium, one per implementation profiled."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from lab.registry import discover
from profiling import fold, summary
from profiling.runtimes import PySpy, Unavailable
from tests.test_report import _chromium

# One implementation per runtime, and a function of its own source that serves fetch-100.
SUBJECTS = {
    "python": ("rest/python_flask", "app.py", r"def (list_games)\("),
    "go": ("grpc/go_grpc", "main.go", r"func \(s \*service\) (ListGames)\("),
    "node": ("grpc/node_grpcjs", "server.js", r"function (toMessage)\("),
}
SECONDS = 2.0


def _why_not(language: str) -> str | None:
    impl = next(i for i in discover() if i.name == SUBJECTS[language][0])
    if impl.missing():
        return f"{impl.name} needs {', '.join(impl.missing())}"
    if language == "python":
        try:
            PySpy(Path(tempfile.gettempdir()))
        except Unavailable as exc:
            return str(exc)
        if os.geteuid() != 0 and Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip() != "0":
            return "py-spy attaches with ptrace: needs root or kernel.yama.ptrace_scope 0"
    return None


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """One short profiling run of the runtimes that can be had here: {language: (summary, folder)}."""
    from profiling.run import run

    usable = {lang: SUBJECTS[lang][0] for lang in SUBJECTS if _why_not(lang) is None}
    if not usable:
        pytest.skip("no runtime's profiler can be had here")
    out = tmp_path_factory.mktemp("results") / "profiles"
    args = argparse.Namespace(impl=list(usable.values()), operation=["fetch-100"], seconds=SECONDS,
                              warmup_seconds=3.0, out=out)
    results = run(args)
    by_name = {r["implementation"]: r for r in results}
    return out, {lang: (by_name[name], out / name / "fetch-100") for lang, name in usable.items()}


@pytest.mark.parametrize("language", list(SUBJECTS))
def test_profile_names_the_services_own_functions(profiled, language):
    why = _why_not(language)
    if why:
        pytest.skip(why)
    name, source, pattern = SUBJECTS[language]
    match = re.search(pattern, (Path("services") / name / source).read_text())
    assert match, f"{pattern} is no longer in services/{name}/{source}: update SUBJECTS"
    function = match[1]
    result, folder = profiled[1][language]
    assert "error" not in result, result["error"]
    assert result["calls"] > 0 and result["samples"] > 0
    stacks = fold.read_collapsed(folder / "stacks.collapsed")
    frames = {f for stack in stacks for f in stack.split(";")}
    own = [f for f in frames if function in f and (language == "go" or f"services/{name}/{source}" in f)]
    assert own, f"no frame of {function} ({name}/{source}) among {len(frames)} frames"
    assert (folder / result["native"]).stat().st_size > 0, "the runtime's own file is missing"
    assert set(result["categories"]) <= set(summary.CATEGORY_ORDER)
    assert abs(sum(result["categories"].values()) - 1) < 0.01
    on_disk = json.loads((folder / "summary.json").read_text())
    assert on_disk["schema"] == {"name": "protolab.profile", "version": 1}


def test_go_profile_opens_in_go_tool_pprof(profiled):
    if _why_not("go"):
        pytest.skip(_why_not("go"))
    _, folder = profiled[1]["go"]
    top = subprocess.run(["go", "tool", "pprof", "-top", str(folder / "cpu.pb.gz")], capture_output=True,
                         text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    assert "flat%" in top.stdout


def test_categories_follow_the_leaf_to_its_first_named_caller():
    stacks = Counter({
        "main.main;go.mongodb.org/mongo-driver/v2/bson.(*Decoder).Decode;runtime.mallocgc;runtime.memmove": 3,
        "runtime.gcBgMarkWorker;runtime.gcDrain;runtime.scanobject": 1,
        "main.main;protolab/services/common/go.(*Contract).CheckGame;runtime.mapaccess": 1,
        "unknown.frame": 1,
    })
    s = summary.summarize(stacks, "go")
    assert s["categories"] == {"encoding": 0.5, "contract checks": 0.1667, "runtime": 0.1667, "other": 0.1667}
    assert s["top"][0] == {"frame": "runtime.memmove", "self_share": 0.5, "category": "encoding"}


def test_v8_window_keeps_only_the_samples_inside_it():
    profile = {"startTime": 1000, "endTime": 1600, "samples": [2, 3, 2, 3], "timeDeltas": [100, 100, 100, 100],
               "nodes": [{"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1},
                          "children": [2]},
                         {"id": 2, "callFrame": {"functionName": "list", "url": "file:///x/store.js", "lineNumber": 9},
                          "children": [3]},
                         {"id": 3, "callFrame": {"functionName": "(idle)", "url": "", "lineNumber": -1}}]}
    cut = fold.v8_window(profile, 1150, 1350)  # the samples at 1200 and 1300
    assert cut["samples"] == [3, 2] and cut["timeDeltas"] == [50, 100] and cut["startTime"] == 1150
    assert fold.v8(cut) == Counter({"list (/x/store.js:10)": 1})  # (idle) left out


def test_report_renders_one_flame_graph_per_profile(profiled, tmp_path):
    from report.__main__ import write

    browser = _chromium()
    out, by_language = profiled
    results = tmp_path / "results"
    shutil.copytree(out, results / "profiles")
    html_path = write(results, tmp_path / "page", head="0" * 40)[0][0]
    profile_dir = tempfile.mkdtemp(prefix="chromium-", dir=tmp_path)
    scratch = tempfile.mkdtemp(prefix="protolab-chromium-")
    try:
        dom = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile_dir}",
             "--dump-dom", html_path.as_uri()],
            capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": scratch}).stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    graphs = re.findall(r'<svg[^>]*class="flamegraph"[^>]*data-profile="([^"]+)"', dom)
    expected = sorted(f"{r['implementation']} fetch-100" for r, _ in by_language.values() if "error" not in r)
    assert sorted(graphs) == expected
    assert dom.count("<rect") > 10 * len(expected), "flame graphs without frames"


def test_the_operations_are_the_workload_tables(tmp_path):
    """--operation takes the workload table's names (its payload rows too) whose call
    leaves the state as it found it; the report orders profiles as the table does."""
    from profiling.__main__ import parser
    from profiling.run import DEFAULT
    from report.profiles import read

    assert DEFAULT == ("fetch-one", "fetch-100")
    assert parser().parse_args([]).operation == ["fetch-one", "fetch-100"]
    assert parser().parse_args(["--operation", "fetch-1000", "fetch-one:largest"]).operation == \
        ["fetch-1000", "fetch-one:largest"]
    for refused in ("insert", "delete", "insert:largest", "fetch-2000"):
        with pytest.raises(SystemExit):
            parser().parse_args(["--operation", refused])
    for operation in ("fetch-one:largest", "fetch-100", "fetch-1000", "fetch-37", "fetch-one"):
        folder = tmp_path / "profiles" / "rest/go_nethttp" / operation
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"implementation": "rest/go_nethttp",
                                                         "operation": operation}))
    assert [s["operation"] for s, _ in read(tmp_path)] == \
        ["fetch-one", "fetch-100", "fetch-1000", "fetch-one:largest", "fetch-37"]
