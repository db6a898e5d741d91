"""`python -m report.reference` (make reference): every instrument once, at its full design, into
docs/reference/: the report (Markdown with its SVG figures) and compact result files, each with its
context (machine, hour, commit, the run's id, the calibration and the noise guard's verdict around it).

    make reference                          # a new run, or the unfinished one resumed
    make reference STAGES=capture,report    # these stages only (of the run under way)
    make reference REFERENCE_SCALE=smoke    # every stage at a tiny scale: checks the command end to end
    python -m report.reference --check      # docs/reference/ is what the command wrote (make test checks it)

A run lives in results/reference/<run>/ (LAB_RESULTS points every instrument there, so nothing of an
earlier run is read as this one's); results/reference/current names the run under way. Each stage
records itself in <run>/stages.state (JSON; not named .json, which under results/ means a result file
in the lab's format) when it ends (its commands, exit codes, seconds, disk, the noise
guard's before and after); a stage that ended is not run again unless named in STAGES, so an
interrupted run resumes where it stopped. The last stage, `report`, writes docs/reference/ from the
run's own folder: README.md (the report), report-figures/*.svg, results/<stage>.json (kind
`reference`: the run's result files, long sample lists reduced to their count and quantiles) and
index.json (kind `reference-index`: the run, every stage's cost, and every file of docs/reference/
with its size and SHA-256). `--check` recomputes those hashes: a file edited by hand, added or
lost fails it. docs/notes/2026-12-03-reference.md: the stages and what they cost.

A run's folder is never committed, so a machine lost part way loses it; docs/reference/raw.tar.xz keeps
the run's results losslessly (all but dated twins and the profilers' native files), and GO_ON=1 with no
run folder here makes the run again from the committed docs/reference/ (restore()) and goes on with
it: publish the stages of one session, go on in the next. A reference published without the archive
can only take a stage the report does not read (fuzz); its report is kept as it was.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import results, settings
from lab.context import git_commit, host_context
from lab.stats import noise
from report import findings

DOCS = settings.ROOT / "docs" / "reference"
RUNS = settings.ROOT / "results" / "reference"   # not settings.RESULTS: a run's own LAB_RESULTS is inside
SCALES = ("full", "smoke")
LONG = 64            # a list of more numbers than this is kept as its count and quantiles
COMPACT_LIMIT = 400_000   # bytes of one docs/reference/results/ file before it says it is large


@dataclass(frozen=True)
class Command:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    must_pass: bool = True   # a failing command fails the stage (else recorded, the stage goes on)

    def text(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        argv = [a if a != sys.executable else "python" for a in self.argv]
        return (env + " " if env else "") + " ".join(argv)


@dataclass(frozen=True)
class Stage:
    name: str
    what: str
    expected: str        # its cost at full design on the lab's 2-core machine, as measured (the notes)
    commands: Callable[[str], list[Command]]   # scale -> the commands


PY = [sys.executable]
PYTEST = [*PY, "-m", "pytest"]
FUZZ_WORKERS = "2"  # make fuzz's FUZZ_WORKERS


def smoke_impls() -> list[str]:
    """At the smoke scale: a Python implementation and a Go one of another protocol (the registry's
    first that serve the CRUD calls), enough to cross every instrument's code path in minutes."""
    from lab.registry import one_per_protocol

    first = one_per_protocol(("python",))[0]
    other = next(n for n in one_per_protocol(("go",)) if n.split("/")[0] != first.split("/")[0])
    return [first, other]


SMOKE_PUSH = ["ws/go_gorilla"]


def _smoke(scale: str, full: list[str], smoke: list[str]) -> list[str]:
    return smoke if scale == "smoke" else full


def latency(scale: str) -> list[Command]:
    env = {"LAB_MODE": "native" if scale == "smoke" else "native,docker"}
    if scale == "smoke":
        env |= {"LAB_ONLY": ",".join(smoke_impls()), "LAB_BENCH_CYCLES": "20", "LAB_BENCH_SETTLE_CYCLES": "2",
                "LAB_BENCH_WARMUP": "5", "LAB_BENCH_OPERATIONS": "fetch-one"}
    return [Command([*PYTEST, "--benchmark-only", "benchmarks"], env)]


def capture(scale: str) -> list[Command]:
    only = _smoke(scale, [], ["--only", *smoke_impls(), "-n", "5", "--new-connections", "1"])
    return [Command([*PY, "-m", "capture", *only]),
            Command([*PY, "-m", "capture.push", *_smoke(scale, [], ["--only", *SMOKE_PUSH])])]


def load(scale: str) -> list[Command]:
    return [Command([*PY, "-m", "load", *_smoke(scale, ["--clients", "10", "50", "100", "500", "1000"],
                                                 ["--impl", smoke_impls()[0], "--clients", "10", "--model", "closed",
                                                  "--duration", "1"])])]


def sweep(scale: str) -> list[Command]:
    """The default grid (one implementation per protocol, ~28 min planned); REFERENCE_SWEEP_GRID=full: every
    implementation, the sized payload rows, more paths (~2.7 h planned)."""
    grid = ["--grid", os.environ["REFERENCE_SWEEP_GRID"]] if os.environ.get("REFERENCE_SWEEP_GRID") else []
    return [Command([*PY, "-m", "sweep", *_smoke(scale, grid, ["--axis", "payload", "--impl", smoke_impls()[0],
                                                              "--operations", "fetch-1,fetch-10", "--cycles", "20"])])]


def study_commands(scale: str) -> list[Command]:
    """The push studies in one run of the push instrument, then each study with a scenario of its own
    (studies/<name>/scenario.py), as `python -m studies` lists them."""
    from studies import STUDIES

    push = "push"
    own = [s.name for s in STUDIES if s.scenario() is not None
           and getattr(s.scenario(), "INSTRUMENT", None) != push]
    out = [Command([*PY, "-m", "studies", push, *_smoke(scale, [], ["--quick", "--impl", *SMOKE_PUSH])],
                   must_pass=False)]
    for name in own:
        # a study's own arguments (its scenario's REFERENCE_ARGS: its ladder at full design, a
        # minutes-long smoke), else its defaults and a one-second window at the smoke scale
        args = getattr(next(s for s in STUDIES if s.name == name).scenario(), "REFERENCE_ARGS", {})
        full, smoke = args.get("full", []), args.get("smoke", ["--duration", "1"])
        out.append(Command([*PY, "-m", "studies", name, *_smoke(scale, full, smoke)], must_pass=False))
    return out


def profiles(scale: str) -> list[Command]:
    return [Command([*PY, "-m", "profiling", *_smoke(scale, [], ["--impl", smoke_impls()[0], "--operation",
                                                                  "fetch-one", "--seconds", "2"])])]


def fuzz(scale: str) -> list[Command]:
    # FUZZ_RESUME: a stage stopped part way (hours of cases) goes on with the implementations not yet tallied
    env = ({"FUZZ_CASES": "10000"} if scale == "full" else {"FUZZ_CASES": "20", "LAB_ONLY": ",".join(smoke_impls())}) \
        | {"FUZZ_RESUME": "1"}
    # two pytest-xdist workers, each fuzzing an implementation with its own lab (tests/test_fuzz.py save)
    return [Command([*PYTEST, "--benchmark-disable", "-n", FUZZ_WORKERS, "tests/test_fuzz.py", "-q"], env)]


STAGES: list[Stage] = [
    Stage("latency", "the latency suite, native and Docker subjects in one run (LAB_MODE=native,docker)",
          "99.1 min for both modes, 58 subjects, every operation to its 800-cycle cap (2026-12-03 16:36-18:15 UTC, "
          "load average 0.8-1.5 at its ends; fetch-100 alone 45 min of cycles after 13 min of warm-up; "
          "docs/notes/2026-12-03-reference.md)", latency),
    Stage("capture", "bytes on the wire per operation and per pushed event (make capture)",
          "191 s (issue 53), the goal 60 s", capture),
    Stage("load", "every request/response implementation under 10-1,000 concurrent users, closed and open model",
          "12 min 25 s for the default 10, 100, 1,000 users (docs/notes/2026-12-02-locust-layers-profiles.md, "
          "quiet machine); the ladder 10, 50, 100, 500, 1,000 about 20 min", load),
    Stage("sweep", "the latency suite over payload size, compression and network path (make sweep)",
          "~28 min planned for the default grid (python -m sweep --dry-run); REFERENCE_SWEEP_GRID=full ~2.7 h",
          sweep),
    Stage("studies", "the push studies in one run, then each study's own scenario",
          "push 8.7 min (studies/__main__.py, load average ~18); the studies with scenarios of their own "
          "not timed at their full ladders",
          study_commands),
    Stage("profiles", "CPU profiles per implementation and operation with each runtime's own profiler",
          "14 min 57 s over 18 implementations x 2 operations (docs/notes/2026-12-02-locust-layers-profiles.md, "
          "load average 9-13)", profiles),
    Stage("fuzz", "fuzzing from the contract, 10,000 cases on every implementation (make fuzz)",
          "not measured at 10,000 cases on every implementation before this command", fuzz),
    Stage("report", "the report and the compact result files into docs/reference/", "under a minute",
          lambda scale: []),
]
BY_NAME = {s.name: s for s in STAGES}


# --- a run's folder -------------------------------------------------------------------------------

def relative(path: Path) -> str:
    return path.relative_to(settings.ROOT).as_posix() if path.is_relative_to(settings.ROOT) else str(path)


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) \
        if path.exists() else 0


def new_run(scale: str) -> Path:
    now = datetime.datetime.now(datetime.UTC)
    commit = git_commit()
    run_id = (f"{now:%Y-%m-%dT%H%M%SZ}-{commit[:12]}" + ("-dirty" if commit.endswith("-dirty") else "")
              + ("-smoke" if scale == "smoke" else ""))
    folder = RUNS / run_id
    folder.mkdir(parents=True)
    started = host_context()
    (folder / "run.state").write_text(json.dumps({"id": run_id, "scale": scale, "commit": git_commit(),
                                                 "started": started["date"], "host": started}, indent=1) + "\n")
    (folder / "stages.state").write_text("{}\n")
    (RUNS / "current").write_text(run_id + "\n")
    return folder


def current_run() -> Path | None:
    marker = RUNS / "current"
    if not marker.exists():
        return None
    folder = RUNS / marker.read_text().strip()
    return folder if (folder / "run.state").exists() else None


def same_code(started: str, now: str) -> bool:
    """Whether a run started at commit `started` may go on at `now`: the same commit, or commits that differ
    in docs/reference/ alone (the reference itself committed between two stages)."""
    if started == now:
        return True
    if started.endswith("-dirty") or now.endswith("-dirty"):
        return False
    done = subprocess.run(["git", "diff", "--quiet", started, now, "--", ".", ":(exclude)docs/reference"],
                          cwd=settings.ROOT, capture_output=True, timeout=60)
    return done.returncode == 0


def run_stage(stage: Stage, folder: Path, scale: str) -> dict[str, Any]:
    """The stage's commands in turn with LAB_RESULTS=<run>/results; its record (commands, exit codes,
    seconds, the disk it took, the noise guard around it)."""
    out = folder / "results"
    out.mkdir(exist_ok=True)
    before_bytes = disk_bytes(out)
    print(f"reference: [{stage.name}] {stage.what}; expected at full design: {stage.expected}", flush=True)
    guard_before = noise.snapshot()
    started = time.monotonic()
    began = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    done = []
    for command in stage.commands(scale):
        env = {**os.environ, "LAB_RESULTS": str(out), **command.env}
        print(f"reference: [{stage.name}] $ {command.text()}", flush=True)
        t0 = time.monotonic()
        code = subprocess.run(command.argv, cwd=settings.ROOT, env=env).returncode
        done.append({"command": command.text(), "exit": code, "seconds": round(time.monotonic() - t0, 1),
                     "must_pass": command.must_pass})
        if code != 0 and command.must_pass:
            break
    if stage.name == "report":   # the stages before it, as stages.state holds them (its own cost: printed)
        publish(folder)
    seconds = round(time.monotonic() - started, 1)
    guard = noise.verdict(guard_before, noise.snapshot())
    record = {"stage": stage.name, "what": stage.what, "started": began, "seconds": seconds,
              "disk_bytes": disk_bytes(out) - before_bytes, "commands": done,
              "ok": all(c["exit"] == 0 or not c["must_pass"] for c in done),
              "commit": git_commit(), "noise": guard}
    print(f"reference: [{stage.name}] {'done' if record['ok'] else 'FAILED'} in {seconds / 60:.1f} min, "
          f"{record['disk_bytes'] / 1e6:.1f} MB written; {noise.describe(guard)}"
          + (" (flagged)" if guard["flagged"] else ""), flush=True)
    if stage.name == "fuzz":
        for line in fuzz_lines(out):
            print(f"reference: [fuzz] {line}", flush=True)
    return record


def fuzz_tallies(out: Path, shorter: bool = True) -> Path | None:
    """The run's fuzz tallies: make fuzz's latest.json, else (shorter) make test's latest-test.json."""
    names = ("latest.json", "latest-test.json") if shorter else ("latest.json",)
    return next((out / "fuzz" / n for n in names if (out / "fuzz" / n).exists()), None)


def fuzz_lines(out: Path) -> list[str]:
    """Per implementation: cases, failures, server errors and time (fuzz/summary.py)."""
    from fuzz.summary import lines

    path = fuzz_tallies(out)
    return lines(path) if path else ["no fuzz tallies written"]


# --- docs/reference/ --------------------------------------------------------------------------------

def compact(value: Any) -> Any:
    """`value` with every list of more than LONG numbers replaced by its count and quantiles."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > LONG and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            ordered = sorted(value)
            q = statistics.quantiles(ordered, n=100, method="inclusive")
            return {"samples": len(value), "min": ordered[0], "p25": q[24], "median": statistics.median(ordered),
                    "p75": q[74], "p99": q[98], "max": ordered[-1]}
        return [compact(v) for v in value]
    return value


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stage_commits(run: dict[str, Any], stages: dict[str, Any]) -> list[str]:
    """The commits the run's stages ran at, in the order first used (one, unless it went on with --go-on)."""
    return list(dict.fromkeys([run["commit"], *(s["commit"] for s in stages.values())]))


def commits_text(run: dict[str, Any], stages: dict[str, Any]) -> str:
    commits = stage_commits(run, stages)
    if len(commits) == 1:
        return f"commit `{commits[0][:12]}`"
    return f"commits {', '.join(f'`{c[:12]}`' for c in commits)} (each stage's below)"


def run_header(run: dict[str, Any], stages: dict[str, Any]) -> list[str]:
    host = run["host"]
    total_s = sum(s["seconds"] for s in stages.values())
    commits = stage_commits(run, stages)
    restored = run.get("restored", {})
    kept = restored.get("stages", [])
    lines = [f"<!-- written by `make reference` (python -m report.reference), run {run['id']}: "
             "do not edit; run the command again -->",
             f"# Reference run {run['id']}", "",
             f"Made by `make reference` at scale **{run['scale']}**, commit `{run['commit']}`, started "
             f"{run['started']} on {host['cpu']['count']} × {host['cpu']['model']} ({host['platform']}). "
             + (f"The report below was written from its results at commit `{git_commit()}` "
                "(`python -m report.reference --publish`). " if git_commit() != run["commit"] and not kept else "")
             + (f"Its stages ran at {len(commits)} commits (the run went on with `--go-on`: a full run is longer "
                f"than a working session); `git diff --stat {commits[0][:12]} {commits[-1][:12]}` shows what "
                "changed between the first and the last. " if len(commits) > 1 else "")
             + (f"The run's raw results were lost with its machine after stages {', '.join(kept)} ended; it went on "
                f"from the reference they had published (`--go-on`, {restored['date'][:16]} UTC): the report below "
                f"is that reference's, written at commit `{restored['report_commit'][:12]}` and kept as it was, and "
                "the stages added since ("
                f"{', '.join(n for n in stages if n not in kept) or 'none yet'}) are in the table, the lines after it "
                "and `results/`. " if kept else "")
             + (f"Its folder was lost with the machine it ran on and made again from `docs/reference/{ARCHIVE}` "
                f"({restored['date'][:16]} UTC) before the later stages. " if restored and not kept else "")
             + f"The stages took {total_s / 60:.0f} min in all. Each stage's commands, cost and noise guard "
             "are below and in `index.json`; the compact results with their full context are in `results/`.",
             "", "| stage | commit | started (UTC) | time | disk | load average before → after "
             "| calibration µs before → after | noise guard |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in stages.items():
        g = s["noise"]
        b, a = g.get("before", {}), g.get("after", {})
        load = f"{b.get('loadavg', [0])[0]:.1f} → {a.get('loadavg', [0])[0]:.1f}"
        lines.append(f"| {name} | `{s['commit'][:12]}` | {s['started'][:10]} {s['started'][11:16]} | "
                     f"{s['seconds'] / 60:.1f} min | "
                     f"{s['disk_bytes'] / 1e6:.1f} MB | {load} | {b.get('calibration_us')} → "
                     f"{a.get('calibration_us')} | "
                     f"{'flagged: ' + '; '.join(g['reasons']) if g['flagged'] else 'quiet'}"
                     f"{'' if s['ok'] else ' (a command failed: see index.json)'} |")
    return [*lines, ""]


def fuzz_header(out: Path) -> list[str]:
    """The fuzz stage's tallies (fuzz/summary.py) under the stage table, when the run fuzzed."""
    path = fuzz_tallies(out, shorter=False)
    if path is None:
        return []
    made: dict[str, list[str]] = {}   # commit -> the implementations tallied at it (a part fuzzed again later)
    for t in results.read(path, "fuzz")["tallies"]:
        made.setdefault(str(t.get("commit", "?"))[:12], []).append(t["implementation"])
    at = "; ".join(f"`{c}`: {len(names)} implementation{'s' if len(names) > 1 else ''}"
                   + (f" ({', '.join(names)})" if len(names) <= 3 else "") for c, names in made.items())
    return [f"**Fuzzing** (`{path.relative_to(out).as_posix()}` of the run, as `python -m fuzz.summary` prints it; "
            f"tallied at {at}):", "", "```", *fuzz_lines(out), "```", ""]


PAGE_TITLE = "# protolab report"   # report/page.py's first heading: where the report below the header begins


def report_page(readme: str) -> str:
    """The report part of a published docs/reference/README.md (the header above it is the run's)."""
    at = readme.find("\n" + PAGE_TITLE)
    if at < 0:
        raise ValueError(f"docs/reference/README.md: no {PAGE_TITLE!r} heading, so not a report make reference wrote")
    return readme[at + 1:]


ARCHIVE = "raw.tar.xz"   # docs/reference/'s lossless copy of the run's results: restore() makes the run from it
NATIVE_PROFILES = (".cpuprofile", ".pprof", ".prof")   # the profilers' own files: the report reads folded stacks


def archived(rel: str, path: Path) -> bool:
    """Whether the run's result file `rel` goes into the archive: every file the report or a later stage
    could read, which is all but a dated twin of a -latest result and a profiler's native output."""
    return not superseded(path) and not rel.endswith(NATIVE_PROFILES)


def archive(out: Path, target: Path, keep: Callable[[str, Path], bool] = archived) -> None:
    """The files under `out` that `keep` takes (the run's results: archived()) as one xz tarball, the same
    bytes for the same files (sorted, no owners or times), so archiving a run again leaves its hash as it was."""
    import tarfile

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    with tarfile.open(target, "w:xz", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(out.rglob("*")):
            rel = path.relative_to(out).as_posix()
            if path.is_file() and not path.is_symlink() and keep(rel, path):
                tar.add(path, arcname=rel, filter=plain)


def unpack(source: Path, target: Path) -> None:
    """An archive() tarball's plain files under `target` only (Python 3.11.2's extractall has no filter=)."""
    import tarfile

    with tarfile.open(source) as tar:
        tar.extractall(target, members=[m for m in tar.getmembers() if m.isfile() and not m.name.startswith("/")
                                        and ".." not in Path(m.name).parts])


# The run under way between two sessions: a full run is longer than one, and the published reference stays
# whole until the run ends. `--keep` writes the run's folder here (its states and results, archived()); with
# no run folder on the machine, GO_ON=1 takes it up again. Publishing the run into docs/reference/ removes it.
UNDER_WAY = settings.ROOT / "docs" / "reference-under-way.tar.xz"
REMADE = ("publish/", "report/")   # what a run's folder holds that publishing writes again


def keep_under_way(folder: Path) -> Path:
    """The run in `folder` as one archive (UNDER_WAY): run.state, stages.state, the kept reference a
    restored run started from (restored/) and its results (archived())."""
    target = UNDER_WAY
    target.parent.mkdir(parents=True, exist_ok=True)
    archive(folder, target, lambda rel, path: not rel.startswith(REMADE) and (
        not rel.startswith("results/") or archived(rel.removeprefix("results/"), path)))
    return target


def take_up(source: Path | None = None) -> Path:
    """The run kept by keep_under_way() made the run under way here again (results/reference/<run>/)."""
    source = source or UNDER_WAY
    staging = RUNS / ".taking-up"
    shutil.rmtree(staging, ignore_errors=True)
    unpack(source, staging)
    run = json.loads((staging / "run.state").read_text())
    folder = RUNS / run["id"]
    if (folder / "run.state").exists():
        shutil.rmtree(staging)
        raise FileExistsError(f"{relative(folder)}: the run's folder is here; nothing to take up")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    (RUNS / "current").write_text(run["id"] + "\n")
    return folder


REPORT_FREE = {"fuzz"}   # stages whose results the report does not read: they may go on in a restored run


def restore(docs: Path | None = None) -> Path:
    """The run behind the committed docs/reference/ made the run under way again, when its folder
    (results/reference/<run>/, never committed) is gone with the machine it ran on: run.state and
    stages.state from index.json and each stage's compact result (its full record and noise guard),
    the published files under <run>/restored/, and its results from raw.tar.xz: the run goes on whole.
    A reference published before the archive existed has only its compact results (long sample lists
    cut to quantiles), so only a stage the report does not read (REPORT_FREE) may be added to it, and
    publish() keeps its report and adds that stage's results."""
    docs = docs or DOCS   # read at the call: a test points DOCS elsewhere
    index = results.validate(docs / "index.json")
    context = index["context"]
    host = {k: v for k, v in context.items() if k != "run"}
    folder = RUNS / index["run_id"]
    if (folder / "run.state").exists():
        raise FileExistsError(f"{relative(folder)}: the run's folder is here; nothing to restore")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(folder / "restored", ignore_errors=True)
    shutil.copytree(docs, folder / "restored")
    lossless = (docs / ARCHIVE).exists()
    if lossless:   # the run's results as they were: the run goes on whole, and its report is written again
        unpack(docs / ARCHIVE, folder / "results")
    stages = {}
    for name, s in index["stages"].items():
        sampled = context["run"]["stages"].get(name, {})
        guard = {"flagged": s["noise_flagged"], "reasons": s["noise_reasons"],
                 "before": {"loadavg": (sampled.get("loadavg") or [None, None])[0],
                            "calibration_us": (sampled.get("calibration_us") or [None, None])[0]},
                 "after": {"loadavg": (sampled.get("loadavg") or [None, None])[1],
                           "calibration_us": (sampled.get("calibration_us") or [None, None])[1]}}
        compact_path = docs / "results" / f"{name}.json"
        if compact_path.exists():    # a stage with results in the lab's format: its full noise record
            guard = results.read(compact_path)["noise"] or guard
        stages[name] = {"stage": name, "what": BY_NAME[name].what, **{k: s[k] for k in (
            "started", "seconds", "disk_bytes", "commands", "ok", "commit")}, "noise": guard}
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    run = {"id": index["run_id"], "scale": index["scale"], "commit": context["run"]["commit"],
           "started": context["run"]["started"], "host": host,
           "restored": {"date": now, "stages": [] if lossless else list(stages), "raw": index["raw"],
                        "report_commit": context["commit"],
                        "note": f"restored from docs/reference/{ARCHIVE} on {now}: every stage's results as they "
                                "were" if lossless else
                                f"restored from docs/reference/ on {now}: the stages {', '.join(stages)} are as "
                                "first published (raw results lost with the machine); later stages added"}}
    (folder / "run.state").write_text(json.dumps(run, indent=1) + "\n")
    (folder / "stages.state").write_text(json.dumps(stages, indent=1) + "\n")
    (RUNS / "current").write_text(run["id"] + "\n")
    return folder


STAMPED = re.compile(r"^(?P<name>.+)-\d{4}-\d{2}-\d{2}T\d{6}Z\.json$")   # lab.results.write's <name>-<stamp>.json


def superseded(path: Path) -> bool:
    """A dated result beside its instrument's <name>-latest.json: the same run's copy, or an earlier run
    of the instrument (a stage run again), which the latest replaces; kept once, as -latest."""
    found = STAMPED.match(path.name)
    return bool(found) and (path.parent / f"{found['name']}-latest.json").is_file()


def publish(folder: Path, docs: Path | None = None) -> list[Path]:
    """docs/reference/ from the run in `folder`, written anew (nothing of an earlier run kept). A run restored
    from the committed reference (restore()) keeps that reference's report, figures, findings and compact
    results of the stages it held, and adds the stages run since."""
    docs = docs or DOCS
    from lab.registry import discover
    from report.__main__ import write as write_report

    run = json.loads((folder / "run.state").read_text())
    stages = json.loads((folder / "stages.state").read_text())
    kept = run.get("restored", {}).get("stages", [])
    out = folder / "results"
    staging = folder / "publish"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "results").mkdir(parents=True)
    if kept:
        source = folder / "restored"
        page = report_page((source / "README.md").read_text())
        for name in ("report-figures", findings.FILE, *(f"results/{s}.json" for s in kept)):
            if (source / name).is_dir():
                shutil.copytree(source / name, staging / name)
            elif (source / name).is_file():
                shutil.copy(source / name, staging / name)
    else:
        report_dir = folder / "report"
        # head "": no "(work tree now …)" beside a result's commit; the stage table names each stage's commit
        write_report(out, report_dir, head="",
                     discovered=[i.name for i in discover() if i.serves("get")])
        page = (report_dir / "report.md").read_text()
        if (report_dir / "report-figures").exists():
            shutil.copytree(report_dir / "report-figures", staging / "report-figures")
        (staging / findings.FILE).write_text(findings_block(run, stages, out, staging))
    (staging / "README.md").write_text("\n".join(run_header(run, stages) + fuzz_header(out)) + "\n" + page)
    # compact results, one file per stage: the result files under the stage's folders
    raw: dict[str, int] = {}
    by_stage: dict[str, dict[str, Any]] = {}
    for path in sorted(out.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(out).as_posix()
        raw[rel] = path.stat().st_size
        if path.suffix != ".json" or superseded(path):
            continue
        try:
            data = results.read(path)
        except (OSError, results.ResultError):
            continue  # pytest-benchmark's own JSON, a profile's raw samples: sizes listed, not kept
        stage = stage_of(rel)
        if stage in kept:
            continue   # a stage the restored reference holds: its committed compact results stand
        by_stage.setdefault(stage, {})[rel] = compact(data)
    context = {**host_context(), "run": run_context(run, stages)}
    for stage, files in by_stage.items():
        record = stages.get(stage)   # None: results under no stage's folder (other.json)
        results.write("reference", stage, context,
                      {"run_id": run["id"], "stage": {k: v for k, v in record.items() if k != "noise"} if record
                       else None, "noise": record["noise"] if record else None, "results": files},
                      staging / "results", stamped=False)
    if not kept:   # a run restored without its raw results has none to keep
        archive(out, staging / ARCHIVE)
    files = {p.relative_to(staging).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256(p)}
             for p in sorted(staging.rglob("*")) if p.is_file()}
    big = [f"{name} ({f['bytes'] / 1e6:.1f} MB)" for name, f in files.items() if f["bytes"] > COMPACT_LIMIT]
    before = run["restored"]["raw"] if kept else {"bytes": 0, "files": 0, "largest": {}}  # the kept stages'
    index = {"run_id": run["id"], "scale": run["scale"],
             "stages": {name: {k: s[k] for k in ("started", "seconds", "disk_bytes", "ok", "commit", "commands")}
                        | {"noise_flagged": s["noise"]["flagged"], "noise_reasons": s["noise"]["reasons"]}
                        for name, s in stages.items()},
             "raw": {"bytes": before["bytes"] + sum(raw.values()), "files": before["files"] + len(raw),
                     "folder": relative(folder), "largest": dict(
                         sorted({**before["largest"], **raw}.items(), key=lambda kv: -kv[1])[:10])},
             "files": files, "large": big} | ({"restored": run["restored"]["note"]} if "restored" in run else {})
    results.write("reference-index", "index", context, index, staging, stamped=False)
    shutil.rmtree(docs, ignore_errors=True)
    shutil.copytree(staging, docs)
    if docs == DOCS:
        sync_readme(docs)
    under_way = UNDER_WAY if docs == DOCS else docs.with_name(UNDER_WAY.name)
    if under_way.exists():   # this run, published, is in raw.tar.xz now; another's kept run is left
        import tarfile

        with tarfile.open(under_way) as tar:
            kept_run = json.loads(tar.extractfile("run.state").read())["id"]
        if kept_run == run["id"]:
            under_way.unlink()
    committed = disk_bytes(docs)
    print(f"reference: {relative(docs)}/ written: {len(files) + 1} files, {committed / 1e6:.2f} MB "
          f"(the run's raw results: {index['raw']['bytes'] / 1e6:.0f} MB in {index['raw']['files']} files, "
          f"{index['raw']['folder']}, not committed)" + (f"; large: {', '.join(big)}" if big else ""), flush=True)
    return sorted(docs.rglob("*"))


README = settings.ROOT / "README.md"


def findings_block(run: dict[str, Any], stages: dict[str, Any], out: Path, staging: Path) -> str:
    """The README's findings (report/findings.py) from the run's results, with the run, machine and date."""
    from report.inputs import load as load_inputs

    host = run["host"]
    figure = "docs/reference/report-figures/summary.svg" if (staging / "report-figures" / "summary.svg").exists() \
        else None
    line = (f"From the reference run `{run['id']}` ({commits_text(run, stages)}, {host['cpu']['count']} × "
            f"{host['cpu']['model']}, started {run['started'][:16]} UTC; each stage's noise verdict and the whole "
            "report in [docs/reference/](docs/reference/README.md)), computed by `report/findings.py`:")
    return findings.block(line, findings.headline(load_inputs(out)), figure)


def sync_readme(docs: Path | None = None, readme: Path | None = None) -> bool:
    """README.md's findings block made docs/reference/readme-findings.txt; whether it changed."""
    docs, readme = docs or DOCS, readme or README   # read at the call: a test points them elsewhere
    source = docs / findings.FILE
    if not source.exists() or not readme.exists():
        return False
    text = readme.read_text()
    new = findings.replace_block(text, source.read_text())
    if new != text:
        readme.write_text(new)
    return new != text


def run_context(run: dict[str, Any], stages: dict[str, Any]) -> dict[str, Any]:
    return {"id": run["id"], "scale": run["scale"], "commit": run["commit"], "started": run["started"],
            "stages": {name: {"started": s["started"], "seconds": s["seconds"],
                              "calibration_us": [s["noise"].get("before", {}).get("calibration_us"),
                                                 s["noise"].get("after", {}).get("calibration_us")],
                              "loadavg": [s["noise"].get("before", {}).get("loadavg"),
                                          s["noise"].get("after", {}).get("loadavg")],
                              "noise_flagged": s["noise"]["flagged"]} for name, s in stages.items()}}


# Which stage wrote a result, by the folder the instruments write to (results/README.md).
FOLDERS = {"benchmarks": "latency", "capture": "capture", "sweep": "sweep", "profiles": "profiles",
           "fuzz": "fuzz", "setup": "studies"}   # setup/: connection-setup rounds, which a study's scenario runs


def stage_of(rel: str) -> str:
    top, _, rest = rel.partition("/")
    if top == "load":
        return "load" if rest.startswith(("sweep-", "paths-")) else "studies"
    return FOLDERS.get(top, "other")


def check(docs: Path | None = None, readme: Path | None = None) -> list[str]:
    """What is wrong with docs/reference/: a file not listed in index.json or not as listed there (edited by
    hand), a listed one missing, a result that does not validate or is of another run. [] when it is
    absent (no reference run committed yet) or as `make reference` wrote it."""
    docs = docs or DOCS
    if not docs.exists():
        return []
    index_path = docs / "index.json"
    if not index_path.exists():
        return [f"{docs}: no index.json, so not written by make reference"]
    problems = []
    try:
        index = results.validate(index_path)
    except results.ResultError as exc:
        return [str(exc)]
    listed = index["files"]
    present = {p.relative_to(docs).as_posix() for p in docs.rglob("*") if p.is_file()} - {"index.json"}
    problems += [f"docs/reference/{name}: not written by make reference (not in index.json)"
                 for name in sorted(present - set(listed))]
    problems += [f"docs/reference/{name}: listed in index.json but missing" for name in sorted(set(listed) - present)]
    for name in sorted(present & set(listed)):
        path = docs / name
        if sha256(path) != listed[name]["sha256"]:
            problems.append(f"docs/reference/{name}: changed since make reference wrote it (SHA-256 differs); "
                            "run the command again")
        if name.startswith("results/") and name.endswith(".json"):
            try:
                data = results.validate(path)
            except results.ResultError as exc:
                problems.append(str(exc))
                continue
            if data.get("run_id") != index["run_id"] or data["context"]["run"]["commit"] != \
                    index["context"]["run"]["commit"]:
                problems.append(f"docs/reference/{name}: of run {data.get('run_id')}, not {index['run_id']}")
    page = docs / "README.md"
    if page.exists() and f"run {index['run_id']}" not in page.read_text().splitlines()[0]:
        problems.append("docs/reference/README.md: its first line does not name the run")
    readme = readme or (README if docs == DOCS else None)   # another folder's: no README of its own
    return problems + (readme_problems(docs, readme) if readme else [])


def readme_problems(docs: Path | None = None, readme: Path | None = None) -> list[str]:
    """README.md's findings block is docs/reference/readme-findings.txt, as make reference copied it."""
    docs, readme = docs or DOCS, readme or README
    source = docs / findings.FILE
    if not source.exists():
        return []
    block = findings.current_block(readme.read_text()) if readme.exists() else None
    if block is None:
        return [f"{readme.name}: no findings block (the markers {findings.FINDINGS_START!r} ... "
                f"{findings.FINDINGS_END!r}); make reference writes it"]
    if block != source.read_text():
        return [f"{readme.name}: its findings differ from docs/reference/readme-findings.txt (edited by hand?); "
                "python -m report.reference --sync-readme copies them again"]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m report.reference", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="stages: " + "; ".join(f"{s.name}: {s.what}" for s in STAGES))
    parser.add_argument("--stages", default=os.environ.get("STAGES", ""),
                        help="a comma list of stages to run (again), default: every stage not yet ended (STAGES)")
    parser.add_argument("--scale", choices=SCALES, default=os.environ.get("REFERENCE_SCALE") or "full",
                        help="full (the instruments' full design) or smoke (minutes: checks the command end to end; "
                             "REFERENCE_SCALE)")
    parser.add_argument("--new", action="store_true", help="start a new run even if one is under way")
    parser.add_argument("--go-on", action="store_true", default=bool(os.environ.get("GO_ON")),
                        help="go on with the run under way at this commit though the code changed since it started "
                             "(a full run is longer than a working session): each stage keeps the commit it ran at, "
                             "and the report's stage table names it (GO_ON=1)")
    parser.add_argument("--check", action="store_true", help="check docs/reference/ against its index; run nothing")
    parser.add_argument("--list", action="store_true", help="the stages, their commands and expected cost")
    parser.add_argument("--publish", type=Path, metavar="RUN",
                        help="write docs/reference/ again from the ended run in folder RUN with this commit's report "
                             "code (the run's commit stays named; the report's beside it); run nothing")
    parser.add_argument("--keep", action="store_true",
                        help=f"write the run under way to {relative(UNDER_WAY)} (commit it): with its folder lost, "
                             "GO_ON=1 takes it up again; the published reference stays as it is; run nothing")
    parser.add_argument("--sync-readme", action="store_true",
                        help="copy docs/reference/readme-findings.txt into README.md's findings block; run nothing")
    args = parser.parse_args(argv)
    if args.sync_readme:
        changed = sync_readme()
        print("README.md: findings " + ("copied from docs/reference/readme-findings.txt" if changed else "unchanged"))
        return 0
    if args.publish:
        if not (args.publish / "run.state").exists():
            parser.error(f"{args.publish}: no run.state, so not a make reference run")
        publish(args.publish)
        return 0
    if args.keep:
        folder = current_run()
        if folder is None:
            parser.error("--keep: no run under way here (results/reference/current)")
        stages = json.loads((folder / "stages.state").read_text())
        target = keep_under_way(folder)
        print(f"reference: run {folder.name} ({len(stages)} of {len(STAGES)} stages ended: {', '.join(stages)}) "
              f"kept in {relative(target)}, {target.stat().st_size / 1e6:.2f} MB; commit it, and GO_ON=1 goes on "
              "with it where its folder is lost")
        return 0
    if args.check:
        problems = check()
        for problem in problems:
            print(problem)
        print(f"docs/reference/: {'as make reference wrote it' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    if args.list:
        for s in STAGES:
            print(f"{s.name}: {s.what}\n  expected at full design: {s.expected}")
            for c in s.commands(args.scale):
                print(f"  $ {c.text()}")
        return 0
    chosen = [n.strip() for n in args.stages.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(unknown)}; the stages: {', '.join(BY_NAME)}")
    folder = None if args.new else current_run()
    if folder is None and args.go_on and not args.new and UNDER_WAY.exists():
        folder = take_up()
        print(f"reference: no run under way here; took up {relative(folder)} from {relative(UNDER_WAY)}", flush=True)
    if folder is None and args.go_on and not args.new and (DOCS / "index.json").exists() \
            and not (RUNS / json.loads((DOCS / "index.json").read_text())["run_id"] / "run.state").exists():
        folder = restore(DOCS)
        print(f"reference: no run under way here; went on from the committed reference: {relative(folder)} "
              "restored from docs/reference/" + (f" with its results ({ARCHIVE})" if (folder / "results").exists()
                                              else " (its stages' records; no raw results kept there)"), flush=True)
    if folder is not None:
        run = json.loads((folder / "run.state").read_text())
        if args.go_on and git_commit().endswith("-dirty"):
            parser.error("--go-on: the checkout has uncommitted changes; a stage must name the commit it ran at")
        if run["scale"] != args.scale or not (args.go_on or same_code(run["commit"], git_commit())):
            print(f"reference: the run under way ({run['id']}) is at scale {run['scale']}, commit {run['commit']}; "
                  f"this is {args.scale}, {git_commit()}: starting a new run", flush=True)
            folder = None
    if folder is None:
        folder = new_run(args.scale)
    run = json.loads((folder / "run.state").read_text())
    stages_path = folder / "stages.state"
    ended = json.loads(stages_path.read_text())
    todo = [s for s in STAGES if (s.name in chosen if chosen else not ended.get(s.name, {}).get("ok"))]
    if run.get("restored", {}).get("stages"):
        refused = [s.name for s in todo if s.name not in REPORT_FREE | {"report"}]
        if refused:
            parser.error(f"the run {run['id']} went on from docs/reference/ without its raw results, which the report "
                         f"reads: stage(s) {', '.join(refused)} cannot be added to it; `make reference` without "
                         "GO_ON=1 starts a new run")
    print(f"reference: run {run['id']} ({relative(folder)}), scale {run['scale']}; stages "
          f"{', '.join(s.name for s in todo) or 'none left'}"
          + (f"; ended before: {', '.join(n for n in ended if ended[n]['ok'])}" if ended else ""), flush=True)
    failed = []
    for stage in todo:
        record = run_stage(stage, folder, run["scale"])
        ended = json.loads(stages_path.read_text())
        ended[stage.name] = record
        stages_path.write_text(json.dumps(ended, indent=1) + "\n")
        if not record["ok"]:
            failed.append(stage.name)
    total = sum(s["seconds"] for s in ended.values())
    print(f"reference: run {run['id']}: {len(ended)} of {len(STAGES)} stages ended, {total / 60:.1f} min in all, "
          f"{disk_bytes(folder) / 1e6:.0f} MB in {relative(folder)}"
          + (f"; failed: {', '.join(failed)} (make reference STAGES={','.join(failed)} runs them again)"
             if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
