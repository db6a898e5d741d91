"""The sweep's grid: which cells, grouped into which runs of the latency suite,
with how many cycles, and what each run's command and environment are.

Everything here is data from the lab's tables: the operations from the
workload table (lab/workload.py), the variant axis from lab/axes.py, the
network paths by their names (lab/axes.py NetworkPath), the implementations
from the registry. A name this lab does not have (an operation, the
compression axis, a value an implementation does not support) is left out
with a line that says why, never failed: the same grid runs once those land.

The time plan (28 minutes for the default grid: its 30, less a margin). A
cycle visits every subject once (one untimed and one timed call) and `direct`
four times, at every site of the run, so a cycle costs the sum over sites of
2 × (subjects + 4) calls. A call's planned time is

    base(bytes) + round trips × rtt + bytes on the wire / rate

base(bytes) fitted per implementation through its medians in the newest saved
latency run that has it (calibration()), else ~0.5 ms plus ~30 ns a byte (the
Python client decodes every response); round trips 1 plus TCP's slow-start
rounds for the response (initial window 10 segments, doubling: an idle
connection starts over, as Linux does after an idle spell); the rate per
direction. Start-up (STARTUP_S a run) and warm-up (each subject's own count of
calls, at most WARMUP_MAX_S) come off the budget first; what is left is shared
between the slices (SHARES, relative), and a slice's cycles are its part ÷ its
cycle's planned time, between MIN_CYCLES and MAX_CYCLES, with a twentieth of
them (2–10) as untimed settle cycles. `python -m sweep --dry-run` prints the
plan; what each run took is in its result beside it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lab import axes, registry, settings, workload

VARIANT_AXIS = "compression"        # the sweep's variant axis (lab/axes.py); --variant-axis names another
PAYLOAD_OPERATIONS = ("fetch-1", "fetch-10", "fetch-100", "fetch-1000")
COMPRESSION_OPERATIONS = ("fetch-100", "fetch-1000")
PATH_OPERATIONS = ("fetch-1", "fetch-100")
PATHS = ("loopback", "veth", "rtt1ms", "rtt20ms", "rtt100ms", "10mbit")
FULL_PATHS = ("loopback", "veth", "rtt1ms", "rtt20ms", "rtt100ms", "100mbit", "10mbit", "rtt20ms_10mbit",
              "loss1pct")
SIZES = ("smallest", "p10", "median", "p90", "largest")   # the workload table's sized rows: insert:<size> ...

BUDGET_S = 30 * 60          # the default grid must fit this (module docstring of sweep/)
MARGIN_S = 2 * 60           # ... planned to end this much before it: what the plan does not see
FULL_BUDGET_S = 3 * 60 * 60  # the full grid's cycles are planned for this
MIN_CYCLES = 20
MAX_CYCLES = 400
SETTLE_CYCLES = 10
WARMUP_MAX_S = 10.0
OVERRUN = 1.25               # an operation's measured cycles stop at its planned time × this (time_budgets)
CALL_LIMIT_S = 1.0          # the default grid leaves out of a slice a subject planned slower a call than this
STARTUP_S = 60.0            # a run's lab: the database, the services, the dataset, the noise probes at both ends
LANGUAGE_PREFERENCE = ("go",)   # one implementation per protocol: the first of these languages present
SHARES = {"payload": 0.22, "compression": 0.15, "path": 0.63}   # of what the budget leaves after start-up and warm-up
# the time model (see the module docstring), from this machine's runs
BASE_S, PER_BYTE_S, SEGMENT = 0.0005, 30e-9, 1448


# --- payload: what a response (or request) carries --------------------------------------------

_FETCH_N = re.compile(r"^fetch-(\d+)$")


def games_of(operation: str) -> int | None:
    """Games per response: fetch-<N> lists N, fetch-one (and its sized rows) one; others none."""
    match = _FETCH_N.match(operation)
    if match:
        return int(match.group(1))
    if operation.split(":")[0] == "fetch-one":
        return 1
    return None


def family_of(operation: str) -> str:
    """The payload line an operation sits on: "fetch" (games per response), or a sized row's
    own operation ("fetch-one:size", "insert:size"); others their own name."""
    if _FETCH_N.match(operation) or operation == "fetch-one":
        return "fetch"
    base, _, size = operation.partition(":")
    return f"{base}:size" if size else operation


@functools.cache
def payload_bytes(operation: str) -> int | None:
    """The payload's JSON bytes: the workload table's payload_bytes where it has one, else the
    dataset's games as the operation carries them; None where neither says."""
    own = getattr(workload, "payload_bytes", None)
    if own is not None:
        try:
            value = own(operation)
        except (TypeError, KeyError, ValueError, AttributeError):
            try:
                value = own(workload.get(operation))
            except Exception:  # another signature, or not a payload operation: say nothing
                value = None
        if isinstance(value, dict):  # lab.workload.payload_bytes: {"games", "json", "protobuf"}
            value = value.get("json")
        if value is not None:
            return int(value)
    try:
        if operation == "fetch-one":
            return len(json.dumps(workload.fetch_games()[len(workload.fetch_games()) // 2]))
        if operation == "insert":
            return len(json.dumps(workload.insert_game()))
        games = games_of(operation)
        if games is not None and games <= len(workload.fetch_games()):
            return len(json.dumps(list(workload.fetch_games()[:games])))
    except Exception:  # the dataset is not here: the bytes are unknown, not wrong
        return None
    return None


def known(operation: str) -> bool:
    """A row of the workload table or one of its parametric operations (fetch-<N>, insert:<size>, ...)."""
    try:
        workload.get(operation)
    except (KeyError, ValueError):
        return False
    return True


# --- the time model -------------------------------------------------------------------------

def round_trips(response_bytes: float) -> int:
    """1 + the slow-start rounds a response of this size needs from a window of 10 segments."""
    segments = max(1, math.ceil(response_bytes / SEGMENT))
    window, sent, trips = 10, 0, 0
    while sent < segments:
        sent += window
        window *= 2
        trips += 1
    return trips


@dataclass(frozen=True)
class Cost:
    """A call's time on loopback: fixed + per_byte × the payload's bytes (s)."""
    fixed: float = BASE_S
    per_byte: float = PER_BYTE_S

    def at(self, size: float) -> float:
        return self.fixed + self.per_byte * size


DEFAULT_COST = Cost()


def calibration(directory: Any = None) -> tuple[dict[str, Cost], str]:
    """Each implementation's cost on loopback, fitted through its medians at the smallest and the
    largest payload of the newest saved latency run that has it (results/benchmarks/native-latest.json
    first, then results/sweep/runs/ newest first); and the files it came from ("" when none)."""
    from pathlib import Path

    from lab import results as lab_results

    root = Path(directory) if directory is not None else settings.RESULTS
    candidates = [root / "benchmarks" / "native-latest.json",
                  *sorted((p for p in (root / "sweep" / "runs").glob("*.json") if not p.name.endswith("-latest.json")),
                          key=lambda p: p.stat().st_mtime, reverse=True)]
    costs: dict[str, Cost] = {}
    used: list[str] = []
    for path in candidates:   # the newest first; each implementation from the newest run that has it
        try:
            run = lab_results.read(path, "latency")
        except (OSError, ValueError):
            continue
        points: dict[str, list[tuple[int, float]]] = {}
        for operation, rows in run.get("results", {}).items():
            size = payload_bytes(operation)
            if size is None or operation.startswith("insert"):
                continue
            for subject, row in rows.items():
                name = subject.split("+")[0]
                if "@" in subject or not row.get("median") or name in costs:
                    continue
                points.setdefault(name, []).append((size, row["median"] / 1e6))
        for name, found in points.items():
            found.sort()
            (s0, t0), (s1, t1) = found[0], found[-1]
            per_byte = max(0.0, (t1 - t0) / (s1 - s0)) if s1 > s0 else PER_BYTE_S
            costs[name] = Cost(max(t0 - per_byte * s0, 50e-6), per_byte)
        if points:
            used.append(str(path))
    return costs, ", ".join(used)


def call_seconds(operation: str, path: str, compressed: bool = False, cost: Cost = DEFAULT_COST) -> float:
    """The planned time of one call of `operation` across `path`."""
    size = payload_bytes(operation) or (games_of(operation) or 1) * 1500
    link = axes.NetworkPath.parse(path)
    wire = size * (0.3 if compressed else 1.0)   # JSON of games compresses to about a third or less
    seconds = cost.at(size) + (link.veth and 50e-6)
    seconds += round_trips(wire) * link.rtt_ms / 1e3
    if link.rate_mbit:
        seconds += wire * 8 / (link.rate_mbit * 1e6)
    if link.loss_pct:
        seconds += link.loss_pct / 100 * round_trips(wire) * 0.2   # a lost segment: about one RTO
    return seconds


# --- the grid -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Group:
    """One run of the latency suite: its operations, network paths and variant values, the
    implementations measured, and its design (cycles, settle cycles, warm-up cap)."""
    name: str                          # "payload", the variant axis' name (e.g. "compression"), "path"
    operations: tuple[str, ...]
    paths: tuple[str, ...]
    variants: tuple[str, ...]          # values on the variant axis, its base first
    implementations: tuple[str, ...]   # bases
    cycles: int
    variant_axis: str = VARIANT_AXIS
    settle_cycles: int = SETTLE_CYCLES
    warmup_max_s: float = WARMUP_MAX_S
    left_out: tuple[str, ...] = ()     # what this group would have held but cannot here, and why
    costs: tuple[tuple[str, Cost], ...] = ()   # the time plan's calibration (calibration())
    axis: str = ""                     # the slice: "payload", "compression" or "path" (grid()'s axes_wanted)

    @property
    def base_value(self) -> str:
        return self.variants[0]

    def subjects(self) -> list[str]:
        """LAB_ONLY: every implementation, then each in every non-base value it supports."""
        out = list(self.implementations)
        for value in self.variants[1:]:
            for impl in self.implementations:
                if supports(impl, value):
                    out.append(f"{impl}+{value}")
        return out

    def env(self, results_dir: str) -> dict[str, str]:
        env = {"LAB_MODE": "native", "LAB_PATHS": ",".join(self.paths), "LAB_ONLY": ",".join(self.subjects()),
               "LAB_BENCH_OPERATIONS": ",".join(self.operations), "LAB_BENCH_CYCLES": str(self.cycles),
               "LAB_BENCH_SETTLE_CYCLES": str(self.settle_cycles),
               # every cell its fixed cycles: the sweep's own intervals (sweep/cells.py, at 99 %) are
               # computed from the raw rounds, which a sequential stop would flatter (lab/stats/sequential.py)
               "LAB_BENCH_TARGET": "0",
               "LAB_BENCH_WARMUP_MAX_S": f"{self.warmup_max_s:g}", "LAB_BENCH_RESULTS": results_dir,
               "LAB_BENCH_MAX_S": self.time_budgets(),
               "LAB_VARIANTS": self.variant_axis if len(self.variants) > 1 else ""}
        return env

    def command(self) -> list[str]:
        return [sys.executable, "-m", "pytest", "benchmarks", "--benchmark-only", "-p", "no:xdist", "-q",
                "-o", "console_output_style=classic"]

    def cells(self) -> list[dict[str, Any]]:
        return [{"operation": op, "variant": value, "path": path}
                for op in self.operations for value in self.variants for path in self.paths]

    def call(self, subject: str, operation: str, path: str) -> float:
        base, _, value = subject.partition("+")
        return call_seconds(operation, path, compressed=bool(value) and value != self.base_value,
                            cost=dict(self.costs).get(base, DEFAULT_COST))

    def cycle_seconds(self, operations: Sequence[str] | None = None) -> float:
        """A measured cycle's planned time: every site, every subject and `direct` (4 visits), 2 calls each."""
        return sum(2 * self.call(subject, op, path) for op in (operations or self.operations) for path in self.paths
                   for subject in [*self.subjects(), *["direct"] * 4])

    def time_budgets(self) -> str:
        """LAB_BENCH_MAX_S: each operation's measured cycles may take its plan × OVERRUN, then stop
        (benchmarks/suite.py max_seconds): a plan made with the model's defaults (a fresh clone)
        can be far off for one implementation, and the grid must still end near its budget."""
        return ",".join(f"{op}={OVERRUN * self.cycles * self.cycle_seconds([op]):.0f}" for op in self.operations)

    def planned_seconds(self) -> float:
        """Start-up, then per operation: warm-up, settle cycles and the measured cycles."""
        warmup = sum(min(self.warmup_max_s, warmup_calls(subject) * self.call(subject, op, path))
                     for op in self.operations for path in self.paths for subject in [*self.subjects(), "direct"])
        return STARTUP_S + warmup + (self.cycles + self.settle_cycles) * self.cycle_seconds()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "operations": list(self.operations), "paths": list(self.paths),
                "variant_axis": self.variant_axis, "variants": list(self.variants),
                "implementations": list(self.implementations), "subjects": self.subjects(),
                "cycles": self.cycles, "settle_cycles": self.settle_cycles, "warmup_max_s": self.warmup_max_s,
                "planned_s": round(self.planned_seconds()), "left_out": list(self.left_out),
                "calibrated": bool(self.costs)}


def warmup_calls(subject: str) -> int:
    """The untimed calls the suite makes before measuring a subject: its manifest's, else 30."""
    if subject.split("+")[0] == "direct":
        return 30
    try:
        own = registry.variant(subject).warmup_calls
    except ValueError:
        own = None
    return own if own is not None else 30


def supports(implementation: str, value: str) -> bool:
    try:
        registry.variant(f"{implementation}+{value}")
    except ValueError:
        return False
    return True


def default_implementations(languages: Sequence[str] = LANGUAGE_PREFERENCE) -> list[str]:
    """One implementation per protocol that serves the CRUD calls and can run here: the first
    of `languages` present, else the first in the registry's order (lab.registry.one_per_protocol)."""
    return registry.one_per_protocol(languages)


def every_implementation() -> list[str]:
    return [impl.name for impl in registry.bases() if impl.serves(*registry.CRUD_CALLS) and not impl.missing()]


def variant_values(axis: str) -> tuple[tuple[str, ...], str | None]:
    """The axis' values, its base first, or () and why it cannot be swept here."""
    found = axes.VARIANT_AXES.get(axis)
    if found is None:
        return (), f"lab/axes.py has no {axis!r} axis here (axes: {', '.join(axes.VARIANT_AXES) or 'none'})"
    return tuple(v.name for v in found.values), None


def scaled_cycles(group: Group, share_s: float, cap: int = MAX_CYCLES) -> int:
    """As many cycles as the group's share of the budget holds, between MIN_CYCLES and `cap`."""
    per_cycle = group.cycle_seconds()
    fits = int(share_s / per_cycle) if per_cycle > 0 else cap
    return max(MIN_CYCLES, min(cap, fits))


def _operations(wanted: Sequence[str], notes: list[str]) -> tuple[str, ...]:
    here = []
    for op in wanted:
        if known(op):
            here.append(op)
        else:
            notes.append(f"{op}: not in this lab's workload table (lab/workload.py): left out")
    return tuple(here)


def path_unavailable(path: axes.NetworkPath) -> str | None:
    """Why this host cannot run a path (None: it can): root, and the lab's module that sets paths up."""
    if not path.veth:
        return None
    if os.geteuid() != 0:
        return "a network path needs root (network namespaces, qdiscs)"
    if importlib.util.find_spec("lab.host.netpath") is None:
        return "this lab has no lab.host.netpath (the module that sets a network path up)"
    return None


def _paths(wanted: Sequence[str], notes: list[str]) -> tuple[str, ...]:
    out = []
    for name in wanted:
        path = axes.NetworkPath.parse(name)
        why = path_unavailable(path)
        if why:
            notes.append(f"{name}: {why}: left out")
        else:
            out.append(path.name)
    return tuple(dict.fromkeys(out))


def grid(kind: str = "default", axes_wanted: Sequence[str] = ("payload", "compression", "path"),
         implementations: Sequence[str] | None = None, cycles: int | None = None,
         operations: Sequence[str] | None = None, paths: Sequence[str] | None = None,
         variant_axis: str = VARIANT_AXIS, check_host: bool = True,
         costs: dict[str, Cost] | None = None, budget_s: float | None = None) -> list[Group]:
    """The groups of a sweep. kind "default" (module docstring) or "full" (every implementation,
    the sized payload rows as well, more paths). `axes_wanted`: the slices to run. `operations`,
    `paths`: the points of the payload (or path) slice instead of the grid's. `cycles`: every
    group's, instead of the time plan's. `budget_s`: the seconds the groups' plan must fit (default:
    the grid's budget less its margin; the runner passes what is left after the slices already run)."""
    full = kind == "full"
    if costs is None:
        costs = calibration()[0]
    impls = tuple(implementations or (every_implementation() if full else default_implementations()))
    out: list[Group] = []
    shares: list[float] = []
    for name in axes_wanted:
        notes: list[str] = []
        values: tuple[str, ...] = ()
        if name == "payload":
            wanted = list(operations or PAYLOAD_OPERATIONS)
            if full and not operations:
                wanted += [f"{op}:{size}" for op in ("fetch-one", "insert") for size in SIZES]
            ops, group_paths = _operations(wanted, notes), ("loopback",)
        elif name == "compression":
            ops, group_paths = _operations(operations or COMPRESSION_OPERATIONS, notes), ("loopback",)
            values, why = variant_values(variant_axis)
            if why:
                notes.append(f"the {name} slice: {why}: left out")
        elif name == "path":
            ops = _operations(operations or PATH_OPERATIONS, notes)
            wanted_paths = paths or (FULL_PATHS if full else PATHS)
            group_paths = _paths(wanted_paths, notes) if check_host else tuple(
                axes.NetworkPath.parse(p).name for p in wanted_paths)
        else:
            raise ValueError(f"no axis {name!r}: expected payload, compression or path")
        if name != "compression":
            base, _ = variant_values(variant_axis)
            values = base[:1]
        if name == "compression" and values:
            unsupported = [i for i in impls if not any(supports(i, v) for v in values[1:])]
            if unsupported:
                notes.append(f"{', '.join(unsupported)}: no {variant_axis} variant here (its manifest's [variants]): "
                             f"measured in the base value only")
        slice_impls = impls
        if not full and not implementations and ops:
            slow = {i: max(call_seconds(op, "loopback", cost=costs.get(i, DEFAULT_COST)) for op in ops) for i in impls}
            slice_impls = tuple(i for i in impls if slow[i] <= CALL_LIMIT_S)
            notes += [f"{i}: left out of the {name} slice: planned at {slow[i]:.1f} s a call at its largest payload "
                      f"(over the default grid's {CALL_LIMIT_S:g} s; --impl or --grid full keeps it)"
                      for i in impls if i not in slice_impls]
        if name == "path" and len(group_paths) < 2:
            notes.append(f"the path slice needs two paths or more; here only {', '.join(group_paths) or 'none'}")
            ops = ()
        if not ops or (name == "compression" and not values):
            print(f"sweep: the {name} slice is empty here: " + "; ".join(notes), file=sys.stderr)
            continue
        label = variant_axis if name == "compression" else name   # the variant slice by its axis' name
        group = Group(label, ops, group_paths, values or ("",), slice_impls, cycles or MIN_CYCLES, variant_axis,
                      left_out=tuple(notes), costs=tuple(sorted(costs.items())), axis=name)
        out.append(group)
        shares.append(SHARES[name])
    if budget_s is None:
        budget_s = (FULL_BUDGET_S if full else BUDGET_S) - MARGIN_S
    return out if cycles is not None else fitted(out, shares, budget_s)


def fitted(groups: list[Group], shares: list[float], budget: float) -> list[Group]:
    """Each group's cycles from its share of what the budget leaves after every group's start-up and
    warm-up (the shares taken relative to each other), its settle cycles a twentieth of them (2–10)."""
    overhead = sum(g.planned_seconds() - (g.cycles + g.settle_cycles) * g.cycle_seconds() for g in groups)
    left = max(budget - overhead, 0.0)
    out = []
    for group, share in zip(groups, shares, strict=True):
        part = left * share / sum(shares)
        cycles = scaled_cycles(group, part * 20 / 21)   # room for the settle cycles
        out.append(Group(**{**group.__dict__, "cycles": cycles,
                            "settle_cycles": max(2, min(SETTLE_CYCLES, cycles // 20))}))
    return out


@dataclass
class Plan:
    groups: list[Group] = field(default_factory=list)

    @property
    def planned_seconds(self) -> float:
        return sum(g.planned_seconds() for g in self.groups)


def results_dir() -> str:
    """Where the runs' latency files go: results/sweep/runs/ (never over results/benchmarks/)."""
    return str(settings.RESULTS / "sweep" / "runs")
