"""The saved results the report is made of, and what is missing from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.protocols import PROTOCOLS, label
from lab import results
from lab.settings import MODES, RUN_COMMAND
from lab.workload import LATENCY
from report import grouping

__all__ = ["MODES", "LATENCY", "RUN_COMMAND", "Inputs", "load", "missing"]



@dataclass
class Inputs:
    results_dir: Path
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # mode -> benchmark run
    wire: dict[str, Any] | None = None
    wire_netns: dict[str, Any] | None = None
    repeated: dict[str, Any] | None = None  # make bench-runs: results/runs-latest.json
    side_by_side: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> a run of several sites
    sources: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable files

    def operations(self) -> list[str]:
        found = {op for run in self.runs.values() for op in run["results"]}
        return [*(op for op in LATENCY if op in found), *sorted(found - set(LATENCY))]

    def subjects(self) -> list[str]:
        """Implementations by protocol, then by language within a protocol (report.grouping),
        else as the runs list them; `direct` last."""
        out: list[str] = []
        for run in self.runs.values():
            for name in [*run["context"].get("implementations", {}),
                         *(s for rows in run["results"].values() for s in rows)]:
                if name not in out and name != "direct":
                    out.append(name)
        return [*grouping.grouped(out, self.protocol_of, self.language_of), "direct"]

    def language_of(self, subject: str) -> str:
        """The manifest's language, as the runs recorded it ("" for `direct`)."""
        for run in self.runs.values():
            impl = run["context"].get("implementations", {}).get(subject)
            if impl and impl.get("language"):
                return str(impl["language"])
        if subject == "direct":
            return ""
        return subject.split("/")[-1].split("_")[0]  # the folder: <language>_<library>

    def protocol_of(self, subject: str) -> str:
        for run in self.runs.values():
            impl = run["context"].get("implementations", {}).get(subject)
            if impl:
                return impl["protocol"]
        if self.wire and subject in self.wire.get("protocols", {}):
            return self.wire["protocols"][subject]
        return "direct" if subject == "direct" else subject.split("/")[0]


def _read(path: Path, inputs: Inputs, kind: str, want: tuple[str, ...]) -> dict[str, Any] | None:
    try:
        data = results.read(path, kind)
    except FileNotFoundError:
        return None
    except OSError as exc:
        inputs.problems.append(f"`{path.name}` could not be read ({exc}); left out")
        return None
    except results.ResultError as exc:
        inputs.problems.append(f"`{path.name}` left out: {exc}")
        return None
    if any(k not in data for k in want):
        inputs.problems.append(f"`{path.name}` is not a complete {kind} result (no {', '.join(want)}); left out")
        return None
    inputs.sources.append(path)
    return data


def load(results_dir: Path) -> Inputs:
    inputs = Inputs(results_dir)
    for mode in MODES:
        run = _read(results_dir / "benchmarks" / f"{mode}-latest.json", inputs, "latency",
                    ("context", "results"))
        if run is not None:
            inputs.runs[mode] = run
    # Runs of several sites at once (LAB_MODE=native,docker; LAB_PATHS=...): their one-axis comparisons.
    for path in sorted((results_dir / "benchmarks").glob("*+*-latest.json")):
        run = _read(path, inputs, "latency", ("context", "results"))
        if run is not None:
            inputs.side_by_side[path.name.removesuffix("-latest.json")] = run
    for mode in MODES:  # a mode measured only beside another (make reference: LAB_MODE=native,docker)
        if mode not in inputs.runs:
            for key, run in inputs.side_by_side.items():
                derived = one_site(run, mode, key)
                if derived is not None:
                    inputs.runs[mode] = derived
                    break
    inputs.wire = _read(results_dir / "capture" / "wire.json", inputs, "capture", ("context", "new_connection"))
    inputs.wire_netns = _read(results_dir / "capture" / "wire-netns.json", inputs, "capture",
                              ("context", "new_connection"))
    inputs.repeated = _read(results_dir / "runs-latest.json", inputs, "runs", ("summary", "modes", "runs_per_mode"))
    return inputs


def one_site(run: dict[str, Any], mode: str, key: str) -> dict[str, Any] | None:
    """A run of several sites seen as a run of one: `mode` on loopback, its subjects' names without the
    site's suffix, its ranking the site's own (against its own `direct`); None when it has no such site.
    Its context says where it came from (`one_site_of`)."""
    from benchmarks.conftest import without_suffix
    from lab.axes import LOOPBACK, Site

    site = Site(mode, LOOPBACK)
    if mode not in key.split("+"):
        return None
    results = {op: {name.removesuffix(site.suffix): row for name, row in rows.items()
                    if (name.endswith(site.suffix) if site.suffix else "@" not in name)}
               for op, rows in run["results"].items()}
    if not any(results.values()):
        return None
    rankings = {op: without_suffix((run.get("site_rankings", {}).get(op) or {}).get(site.suffix, {}), site.suffix)
                for op in results}
    described = [s for s in run["context"].get("sites", []) if s.get("suffix") == site.suffix]
    context = {**run["context"], "mode": mode, "one_site_of": f"{key}-latest.json"}
    if mode == "docker" and described and "docker" not in context and described[0].get("docker"):
        context["docker"] = described[0]["docker"]   # else not recorded: the page says so, not "Docker None"
    return {**run, "context": context, "results": results, "rankings": rankings}


def _serves_crud(name: str, ctx: dict[str, Any], discovered: list[str] | None) -> bool:
    """By the run's own record of its operations; an older run's, by the lab's now."""
    operations = ctx["implementations"][name].get("operations")
    if operations is not None:
        return "get" in operations
    return discovered is None or name in discovered


def missing(inputs: Inputs, discovered: list[str] | None = None) -> list[str]:
    """Sentences naming what the page cannot show, and why. `discovered`: the
    implementations the lab has now that serve CRUD (the latency suite and
    `make capture` measure those; push-only ones have their own sections)."""
    out = list(inputs.problems)
    for mode in MODES:
        run = inputs.runs.get(mode)
        if run is None:
            out.append(f"**{mode} mode: not run** — no `results/benchmarks/{mode}-latest.json`; "
                       f"run `{RUN_COMMAND[mode]}`.")
            continue
        ctx = run["context"]
        if ctx.get("mode") != mode:
            out.append(f"`{mode}-latest.json` says it is a {ctx.get('mode')} run.")
        results = run["results"]
        for op in LATENCY:
            if op not in results:
                out.append(f"{mode} mode: no **{op}** results (run filtered or failed); "
                           f"run `{RUN_COMMAND[mode]}`.")
        listed = list(ctx.get("implementations", {}))
        # A push-only implementation (its manifest's operations have no
        # "get") never has a latency row; older runs listed them without saying.
        crud = [name for name in listed if _serves_crud(name, ctx, discovered)]
        for op, rows in results.items():
            for name in [*crud, "direct"]:
                if name not in rows:
                    out.append(f"{mode} mode, {op}: **{name}** has no result (it failed or was deselected).")
            for name, row in rows.items():
                if not row.get("data_s"):
                    out.append(f"{mode} mode, {op}: {name} has no per-round times; no box plot for it.")
        for name in discovered or []:
            if name not in listed:
                out.append(f"{mode} mode: **{name}** is in the lab now but not in this run "
                           f"({ctx.get('date')}); rerun `{RUN_COMMAND[mode]}`.")
        if mode == "docker" and not ctx.get("docker"):
            out.append("docker mode: the run does not record the Docker side (daemon version, "
                       "userland proxy); rerun `make bench-docker` with the current lab.")
    present = [m for m in MODES if m in inputs.runs]
    if len(present) == 2:
        for name in inputs.subjects():
            where = [m for m in present if any(name in rows for rows in inputs.runs[m]["results"].values())]
            if len(where) == 1:
                other = next(m for m in present if m not in where)
                out.append(f"**{name}** ran only in {where[0]} mode, not in {other} mode.")
    if inputs.wire is None:
        out.append("**wire capture: not run** — no `results/capture/wire.json`; run `make capture`.")
    else:
        for problem in inputs.wire.get("problems", []):
            out.append(f"wire capture problem: {problem}")
        by_design: dict[str, list[str]] = {}   # protocol -> its subjects `make capture` leaves out, and why
        for name in discovered or []:
            if name in inputs.wire.get("protocols", {}):
                continue
            protocol = inputs.protocol_of(name)
            if protocol in PROTOCOLS and PROTOCOLS[protocol].no_capture:
                by_design.setdefault(protocol, []).append(name)
            else:
                out.append(f"wire capture: **{name}** is in the lab now but was not captured; "
                           "rerun `make capture`.")
        for protocol, names in by_design.items():
            out.append(f"wire capture: {len(names)} {label(protocol)} subjects ({', '.join(names)}) are left out of "
                       f"`make capture` by design: {PROTOCOLS[protocol].no_capture}; "
                       f"`python -m capture --only {names[0]} --name wire-{protocol}` captures one alone.")
    if inputs.wire_netns is None:
        out.append("wire capture at MTU 1,500 (veth namespace): not run — optional, "
                   "`make capture NETNS=1`.")
    return out
