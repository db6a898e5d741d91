"""`python -m report`: the published numbers match the study's text; the page
is built from small result files made here (with the lab's own writers) and
names what is missing; it opens in headless Chromium with its tables and
figures rendered and no console errors."""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from capture import report as capture_report
from lab import results as lab_results
from lab import settings
from lab.context import run_context
from lab.host.tools import ToolMissing, apt_tool
from lab.processes import Process
from lab.registry import discover
from lab.stats.runs import summarize as runs_summary
from lab.stats.statistics import summarize
from report.__main__ import write
from studies import get as get_study
from studies import published

SEED = settings.ROOT.parent / "shared" / "seeds" / "003_efaeaf185f57235e.txt"
IMPLS = [i for i in discover() if i.serves("get")]  # what make bench measures
NAMES = [i.name for i in IMPLS]
PUSH_ONLY = [i for i in discover() if not i.serves("get")]


# -- the published figures -------------------------------------------------

def _seed_tables() -> dict[str, list[tuple[str, int, int]]]:
    """Tables 4-6 of the study's text: (statistic, Docker, Windows) rows in order."""
    text = SEED.read_text()
    out = {}
    for number in ("4", "5", "6"):
        start = re.search(rf"Table[^\n]{{0,10}}{number}\.", text).start()
        end = text.index("Figure", start)
        rows = re.findall(r"(mean|min|max|sigma)\$?\s+(\d+)\s+(\d+)", text[start:end].replace("\\", ""))
        out[number] = [(s, int(d), int(w)) for s, d, w in rows]
    return out


@pytest.mark.skipif(not SEED.exists(), reason=f"the study's text is not at {SEED}")
def test_published_latency_tables_match_the_study_text():
    study = get_study("kaminski2023").published()
    stat = {"mean": "mean", "min": "min", "max": "max", "sigma": "σ"}
    for number, rows in _seed_tables().items():
        table = study["tables"][number]
        # The text lists REST, gRPC, GraphQL, WebSockets, four statistics each, in order.
        assert len(rows) == 16, number
        expected = [(stat[s], d, w) for s, d, w in rows]
        ours = [(s, v["Docker"], v["Windows"]) for p in ("REST", "gRPC", "GraphQL", "WebSockets")
                for s, v in table["rows"][p].items()]
        assert ours == expected, f"Table {number}"
    # Spot checks with the numbers written out, so a wrong parse cannot hide a typo either.
    assert study["tables"]["4"]["rows"]["WebSockets"]["max"]["Docker"] == 90272
    assert study["tables"]["5"]["rows"]["GraphQL"]["max"]["Windows"] == 10000
    assert study["tables"]["6"]["rows"]["gRPC"]["mean"]["Windows"] == 11611


@pytest.mark.skipif(not SEED.exists(), reason=f"the study's text is not at {SEED}")
def test_published_table_7_matches_the_study_text():
    text = SEED.read_text()
    study = get_study("kaminski2023").published()
    for label, row in study["tables"]["7"]["rows"].items():
        line = re.search(rf"{label}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", text)
        assert [int(x) for x in line.groups()] == [row[p] for p in ("REST", "gRPC", "GraphQL", "WebSockets")]
    assert published.study_bytes(study)["fetch-one"]["ws"] == 3469


# -- small result files, written as the lab writes them ----------------------

class _Db:
    server, version = "SecantusDB secantusd-rs", "0.5.3-beta.193"

    def describe(self) -> dict[str, str]:
        return {"server": self.server, "version": self.version}


BASE_US = {"insert": 200, "fetch-one": 130, "fetch-100": 1000}
COST = {"rest": 6, "grpc": 4, "graphql": 20, "ws": 3}


def bench_run(mode: str, seed: int, drop: str | None = None) -> dict[str, Any]:
    rng = random.Random(seed)
    docker = {"daemon": {"version": "20.10.24", "userland_proxy": False, "storage_driver": "overlay2",
                         "cgroup_version": "1"}, "base_image": "protolab/python:3.11",
              "mongo_image": "protolab/secantusd", "published_on": "127.0.0.1"} if mode == "docker" else None
    ctx = run_context(mode, _Db(), IMPLS, docker=docker,
                      benchmark={"warmup": "True", "min_rounds": "200", "max_time": "2.0"})
    results: dict[str, Any] = {}
    for op, base in BASE_US.items():
        rows = {}
        for impl in [*IMPLS, None]:
            name = impl.name if impl else "direct"
            if name == drop:
                continue
            typical = base * (COST.get(impl.protocol, 5) if impl else 1) * 1e-6
            data = [typical * rng.lognormvariate(0, 0.15) for _ in range(60)]
            data += [typical * 12]  # an outlier the box plot must show
            rows[name] = {**summarize(data), "iterations": 1, "data_s": data}
        results[op] = rows
    return {"context": ctx, "results": results}


def _cell(to_server: float, to_client: float, frames: int = 2) -> dict[str, Any]:
    def side(b: float) -> dict[str, float]:
        return {"frames": frames, "frame_bytes": b, "payload_bytes": max(b - 66 * frames, 0),
                "app_payload": max(b - 300, 0)}
    s, c = side(to_server), side(to_client)
    return {"to_server": s, "to_client": c, "total": {k: s[k] + c[k] for k in s}}


def wire_results() -> dict[str, Any]:
    ops = ["insert", "fetch-one", "fetch-100", "update", "delete"]
    size = {"insert": (1500, 1500), "fetch-one": (300, 1500), "fetch-100": (500, 150000),
            "update": (1400, 1400), "delete": (300, 200)}
    steady, new, db = {}, {}, {}
    for impl in IMPLS:
        setup = _cell(140, 74) if impl.protocol in ("rest", "graphql") else _cell(400, 350)
        steady[impl.name], new[impl.name], db[impl.name] = {}, {}, {}
        for op in ops:
            req, resp = size[op]
            opc = _cell(req, resp)
            teardown = _cell(132, 66)
            total = _cell(*(setup[d]["frame_bytes"] + opc[d]["frame_bytes"] + teardown[d]["frame_bytes"]
                            for d in ("to_server", "to_client")), frames=6)
            new[impl.name][op] = {"total": total, "setup": setup, "teardown": teardown, "connections": 1,
                                  "phases": {"tcp_setup": _cell(140, 74), "app_setup": _cell(0, 0),
                                             "operation": opc, "app_teardown": _cell(0, 0),
                                             "tcp_teardown": teardown}}
            steady[impl.name][op] = {**_cell(req - 50, resp - 50), "syn_packets": 0}
            db[impl.name][op] = {"steady": _cell(300, 900), "new_connection": _cell(300, 900)}
    db["direct"] = {op: {"steady": _cell(300, 900)} for op in ops}
    ctx = run_context("native", _Db(), IMPLS)
    ctx["settings"]["capture"] = {"interface": "lo", "link": "Linux loopback, MTU 65536",
                                  "operations_per_steady_window": 50, "warmup_operations": 2,
                                  "tshark": "TShark (Wireshark) 4.0.17 (test)", "capture_seconds": 1.0}
    ctx |= {"payload_source": {i.protocol: "body" for i in IMPLS}, "elapsed_seconds": 2.0,
            "records": {"inserted_game_json": 1390, "fetched_game_json": 1278, "dataset_median_json": 1390,
                        "dataset_games": 3424,
                        "payload_bytes": {"insert": {"games": 1, "json_bytes": 1390, "protobuf_bytes": 828},
                                          "fetch-100": {"games": 100, "json_bytes": 155623,
                                                        "protobuf_bytes": 93722}, "delete": {}}}}
    return {"operations": ops, "ports": {}, "protocols": {i.name: i.protocol for i in IMPLS},
            "steady": steady, "new_connection": new, "database": db, "problems": [], "context": ctx}


def test_wire_markdown_says_what_each_operation_carries():
    md = capture_report.markdown(wire_results())
    assert ("What each operation carries, the payload alone (lab/workload.py): insert 1 game, 1,390 B JSON, "
            "828 B protobuf; fetch-100 100 games, 155,623 B JSON, 93,722 B protobuf.") in md


def make_results(root: Path, docker: bool, drop_in_docker: str | None = None) -> Path:
    (root / "benchmarks").mkdir(parents=True)
    runs = {"native": bench_run("native", 1)}
    if docker:
        runs["docker"] = bench_run("docker", 2, drop=drop_in_docker)
    for mode, run in runs.items():  # the suite's own writer (lab/results.py)
        lab_results.write("latency", mode, run["context"], {"results": run["results"]}, root / "benchmarks")
    capture_report.write(wire_results(), root / "capture", "wire")  # the capture's own writer
    return root


def test_report_names_what_is_missing(tmp_path):
    results = make_results(tmp_path / "results", docker=False)
    paths, summary = write(results, results, head="0" * 40, discovered=[*NAMES, "sse/flask"])
    html, md = (p.read_text() for p in paths)
    assert "docker mode: not run" in md and "make bench-docker" in md
    assert "wire capture at MTU 1,500 (veth namespace): not run" in md
    assert "**sse/flask** is in the lab now but not in this run" in md
    assert "Needs both modes; docker mode not run" in md
    assert "Run-to-run spread: not measured — run `make bench-runs`" in md
    for op in ("insert", "fetch-one", "fetch-100"):
        assert f"{op}, native mode (µs)" in md
        assert "lab: docker mode not run" in md
    assert "<script" not in html and not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert html.count("<svg") == 4  # three latency figures + the wire bytes
    # The rankings are computed: the synthetic costs put WebSockets first, the study gRPC.
    assert any(line.startswith("insert, native: study gRPC < REST < WebSockets < GraphQL; lab WebSockets")
               for line in summary["rankings"])
    assert "they disagree" in md and "finds gRPC fastest, the lab (native) WebSockets" in md


def test_a_subject_make_capture_leaves_out_by_design_is_named_with_the_reason_and_the_command_that_captures_it():
    """Connect's subjects share one port, so `make capture` leaves them out (clients/protocols.py no_capture):
    "rerun `make capture`" would not capture them; the page says why and gives the command that does. A subject
    captured by default but absent still gets "rerun `make capture`"."""
    from report.inputs import Inputs, missing
    connect = [n for n in NAMES if n.startswith("connect/")]
    others = [n for n in NAMES if not n.startswith("connect/")]
    assert connect and others
    wire = {"protocols": {n: n.split("/")[0] for n in others[1:]}}
    lines = missing(Inputs(Path("."), wire=wire), discovered=NAMES)
    assert f"wire capture: **{others[0]}** is in the lab now but was not captured; rerun `make capture`." in lines
    by_design = [line for line in lines if "by design" in line]
    assert len(by_design) == 1 and f"{len(connect)} Connect subjects" in by_design[0]
    assert all(n in by_design[0] for n in connect) and "its subjects share one server port" in by_design[0]
    assert f"`python -m capture --only {connect[0]} --name wire-connect`" in by_design[0]
    assert not any("connect/" in line and "rerun `make capture`" in line for line in lines)


def test_a_run_beside_native_records_its_docker_side_and_the_context_reads_the_interleaved_design(monkeypatch):
    """LAB_MODE=native,docker: the run's context holds the Docker stack's description (before, only a
    docker-alone run did, and the reference's context table read "Docker None"); the table's warm-up and
    design rows come from benchmarks/interleave.py's record; head "" (the reference, whose stage table names
    each stage's commit) adds no "work tree now"."""
    from lab import context as lab_context
    from report.build import context_section
    from report.inputs import Inputs, one_site
    from report.page import Page, to_markdown

    stack = {"daemon": {"version": "20.10.24", "userland_proxy": False, "storage_driver": "overlay2",
                        "cgroup_version": "2"}, "images": {"LAB_PYTHON_IMAGE": "python:3.11-slim"},
             "mongo_image": "protolab/secantusd", "published_on": "127.0.0.1"}
    monkeypatch.setattr(lab_context.compose, "active_description", lambda: stack)
    design = {"design": "interleaved", "warmup": 30, "warmup_max_s": 45.0, "settle_cycles": 100, "rounds": 800,
              "baseline": "direct", "baseline_rounds": 3200, "baseline_visits": 4,
              "order": "the baseline baseline_visits times, in a fresh random order each cycle"}
    ctx = run_context("native+docker", _Db(), IMPLS, benchmark={"timer": "time.perf_counter", "design": design})
    assert ctx["docker"] == stack
    assert "docker" not in run_context("native", _Db(), IMPLS)
    ctx["sites"] = [{"mode": "native", "suffix": ""}, {"mode": "docker", "suffix": "@docker"}]
    row = {"median": 1.0, "rounds": 800}
    run = {"context": ctx, "results": {"fetch-one": {"direct": row, "direct@docker": row}}}
    inputs = Inputs(Path("."), runs={m: one_site(run, m, "native+docker") for m in ("native", "docker")})
    page = Page("context")
    context_section(page, inputs, head="")
    md = to_markdown(page, None, "f")
    assert "Docker 20.10.24, userland proxy off, overlay2, cgroup v2, images python:3.11-slim (python)" in md
    assert "Docker None" not in md and "work tree now" not in md
    assert "30 untimed calls per subject (or its manifest's own count), at most 45 s each, then 100 untimed " \
           "cycles" in md
    assert "interleaved, at most 800 cycles (direct 3,200): the baseline 4 times, in a fresh random order each " \
           "cycle" in md


def test_report_with_both_modes_and_a_failed_implementation(tmp_path):
    dropped = NAMES[-1]
    results = make_results(tmp_path / "results", docker=True, drop_in_docker=dropped)
    (paths, summary) = write(results, tmp_path / "out", head="0" * 40, discovered=NAMES)
    md = paths[1].read_text()
    assert f"docker mode, insert: **{dropped}** has no result" in md
    assert "docker / native" in md  # lab.stats.compare's table
    assert "userland proxy off" in md
    assert (tmp_path / "out" / "report-figures" / "wire.svg").exists()


def test_report_does_not_miss_a_push_only_implementation(tmp_path):
    """A push-only implementation (SSE) has no latency row by design: a run that
    lists it, with its operations or (older runs) without, is not missing it."""
    assert PUSH_ONLY, "the lab has SSE implementations"
    results = make_results(tmp_path / "results", docker=False)
    path = results / "benchmarks" / "native-latest.json"
    run = json.loads(path.read_text())
    listed = run["context"]["implementations"]
    listed[PUSH_ONLY[0].name] = {"protocol": "sse", "operations": list(PUSH_ONLY[0].operations)}
    for impl in PUSH_ONLY[1:]:
        listed[impl.name] = {"protocol": "sse"}
    dropped = NAMES[0]
    for rows in run["results"].values():
        del rows[dropped]
    path.write_text(json.dumps(run))
    md = write(results, tmp_path / "out", head="0" * 40, discovered=NAMES)[0][1].read_text()
    assert f"native mode, insert: **{dropped}** has no result" in md
    for impl in PUSH_ONLY:
        assert impl.name not in md.split("## Context")[0]


def test_report_shows_the_run_to_run_summary(tmp_path):
    results = make_results(tmp_path / "results", docker=True)
    native = json.loads((results / "benchmarks" / "native-latest.json").read_text())
    docker = json.loads((results / "benchmarks" / "docker-latest.json").read_text())
    summary = runs_summary({"native": [native, native], "docker": [docker, docker]})
    (results / "runs-latest.json").write_text(json.dumps(
        {"schema": lab_results.schema_name("runs"), "date": "2026-01-01T000000Z", "modes": ["native", "docker"],
         "runs_per_mode": 2,
         "files": {"native": ["a.json", "b.json"], "docker": ["c.json", "d.json"]}, "summary": summary}))
    md = write(results, tmp_path / "out", head="0" * 40, discovered=NAMES)[0][1].read_text()
    assert "2 runs per mode, modes alternating (native, docker)" in md
    cell = summary["insert"]["rest/python_flask"]
    assert (f"| rest/python_flask | {cell['native']['median']:.0f} [{cell['native']['low']:.0f}–"
            f"{cell['native']['high']:.0f}] |") in md


# -- headless Chromium -------------------------------------------------------

def _chromium() -> str:
    """Chromium's path, Debian's package installed when it is missing and the lab may (lab.host.tools);
    else the test is skipped with the reason (not root, no apt-get, or the install's own error)."""
    found = shutil.which("chromium-browser")
    try:
        return found or apt_tool("chromium", "chromium")
    except ToolMissing as exc:
        pytest.skip(str(exc))


def headless_chromium(browser: str, tmp_path: Path) -> tuple[Process, str, str]:
    """Chromium, headless, in its own process group (stopped with its helpers by
    Process.stop): (the process, its first page's DevTools URL, its scratch directory,
    which the caller removes). Its scratch directories (org.chromium.Chromium.*, which
    it leaves behind) go to a short temporary path: tmp_path is too long for its socket."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp_path)
    scratch = tempfile.mkdtemp(prefix="protolab-chromium-")
    chromium = Process("chromium", [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
        f"--user-data-dir={profile}", "--remote-debugging-port=0", "--remote-allow-origins=*",
        "--window-size=1280,900", "about:blank"], tmp_path / "chromium.log",
        env={"TMPDIR": scratch})
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert chromium.popen.poll() is None, f"chromium exited: {chromium.log_tail()}"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            page = next(t for t in json.load(resp) if t["type"] == "page")
    except BaseException:
        chromium.stop(grace=10)
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return chromium, page["webSocketDebuggerUrl"], scratch


class DevTools:
    """Just enough of the DevTools protocol: commands, and the events seen meanwhile."""

    def __init__(self, url: str) -> None:
        import simple_websocket

        self.ws = simple_websocket.Client.connect(url)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, timeout: float = 15, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.ws.receive(timeout=max(deadline - time.monotonic(), 0.01))
            if msg is None:
                continue
            data = json.loads(msg)
            if data.get("id") == self.next_id:
                assert "error" not in data, data
                return data.get("result", {})
            self.events.append(data)
        raise TimeoutError(method)

    def wait_for(self, method: str, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            msg = self.ws.receive(timeout=max(deadline - time.monotonic(), 0.01))
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            if msg is not None:
                self.events.append(json.loads(msg))

    def close(self) -> None:
        self.ws.close()


PROBE = """JSON.stringify({
  tables: Array.from(document.querySelectorAll('table')).map(t => ({
      id: t.id, rows: t.tBodies[0].rows.length, h: t.getBoundingClientRect().height})),
  svgs: Array.from(document.querySelectorAll('figure svg')).map(s => {
      const r = s.getBoundingClientRect(); return {w: r.width, h: r.height,
      marks: s.querySelectorAll('path, use').length}; }),
  headings: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
})"""


def test_report_renders_in_headless_chromium(tmp_path):
    browser = _chromium()
    results = make_results(tmp_path / "results", docker=True)
    paths, _ = write(results, results, head="0" * 40, discovered=NAMES)
    chromium, url, scratch = headless_chromium(browser, tmp_path)
    try:
        dt = DevTools(url)
        try:
            for domain in ("Runtime", "Log", "Page"):
                dt.call(f"{domain}.enable")
            dt.call("Page.navigate", url=paths[0].as_uri())
            dt.wait_for("Page.loadEventFired")
            found = json.loads(dt.call("Runtime.evaluate", expression=PROBE, returnByValue=True)["result"]["value"])
            # Self-check: a console error does reach this client.
            dt.call("Runtime.evaluate", expression="console.error('self-check')")
            dt.wait_for("Runtime.consoleAPICalled")
        finally:
            dt.close()
    finally:
        chromium.stop(grace=10)
        shutil.rmtree(scratch, ignore_errors=True)

    errors = [e for e in dt.events
              if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    check = [e for e in errors if e.get("params", {}).get("args", [{}])[0].get("value") == "self-check"]
    assert check, "the console self-check was not seen"
    assert not [e for e in errors if e not in check], errors
    assert found["headings"][:4] == ["What the run found", "What is missing", "Context", "Latency per operation"]
    assert "Bytes on the wire" in found["headings"] and "The study beside the lab" in found["headings"]
    tables = {t["id"]: t for t in found["tables"]}
    subjects = len(NAMES) + 1
    for op in ("insert", "fetch-one", "fetch-100"):
        for mode in ("native", "docker"):
            assert tables[f"t-{op}-{mode}"]["rows"] == subjects and tables[f"t-{op}-{mode}"]["h"] > 0
        assert tables[f"nvd-{op}"]["rows"] == subjects
        assert tables[f"study-t-{op}"]["rows"] == 4
    assert tables["wire-t7"]["rows"] == 8
    assert tables["wire-parts-table"]["rows"] == 5 * len(NAMES)
    assert len(found["svgs"]) == 4
    for svg in found["svgs"]:
        assert svg["w"] > 200 and svg["h"] > 100 and svg["marks"] > 10, svg


def test_report_shows_rankings_with_confidence_the_cpu_split_and_the_noise_guard(tmp_path):
    from lab.stats import noise
    from lab.stats.statistics import rank

    results = make_results(tmp_path / "results", docker=False)
    path = results / "benchmarks" / "native-latest.json"
    run = json.loads(path.read_text())
    run["rankings"] = {}
    for op, rows in run["results"].items():
        run["rankings"][op] = rank({s: r["data_s"] for s, r in rows.items()}, block=1, resamples=200)
        for s, r in rows.items():
            r["cpu_us_per_op"] = {"client": 0.2 * r["median"], "database": 0.1 * r["median"],
                                  **({"service": 0.3 * r["median"]} if s != "direct" else {})}
            r["wall_us_per_op"] = r["mean"]
    before = {"calibration_us": 300.0, "loadavg": [1.0, 1.0, 1.0], "cpu_ticks": {}}
    run["context"]["noise"] = noise.verdict(before, {**before, "calibration_us": 400.0})
    path.write_text(json.dumps(run))
    paths, summary = write(results, results, head="0" * 40, discovered=NAMES)
    html, md = (p.read_text() for p in paths)
    chain = run["rankings"]["insert"]["chain"]
    assert chain.startswith("direct < ") and f"**{chain}**" in md
    assert f"native, insert: {chain}" in summary["confidence"]
    assert "÷ direct, paired by cycle [99 % CI]" in md and "no significant difference" not in chain
    assert "client CPU" in md and "insert, native mode: wall time per operation split" in md
    # + one CPU figure per operation, and the opening's summary figure (the run has rankings)
    assert html.count("<svg") == 4 + 3 + 1
    opening = md.split("## What the run found", 1)[1].split("\n## ", 1)[0]
    assert "× direct" in opening and "groups in one order" in opening, opening[:800]
    assert "**flagged**" in md and "calibration moved +33%" in md
