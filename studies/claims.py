"""Every published claim as data, each with a verdict this code computes from
the lab's saved results.

    .venv/bin/python -m studies.claims                  # the table (Markdown) and the count of verdicts
    .venv/bin/python -m studies.claims --results DIR    # from another results folder
    .venv/bin/python -m studies.claims --study fernando --json

A claim lives in its study's `published.json` (`claims`, lab/schemas/published.schema.json):
the sentence, the figures it rests on (value, unit, statistic, condition), its
form and the lab's cell that answers it (instrument, subjects by manifest fields,
operation or scenario, metric). Its verdict, never typed by hand:

- agrees:       a value or a ratio ("A is N× B"): the study's figure lies within the
                lab's interval; an order ("A faster than B", "A ~ B"): the lab's ranking
                rule says so (A ÷ B's 99 % interval below 1, above 1, or holding 1);
- differs:      it does not, and by how much;
- not measured: no result of the instrument, or none for the cell: the command that makes it;
- invalid:      the result exists but the lab's own validity check says no (the noise guard,
                the load generator's CPU limit, errors, a capture problem), with the reason.
                A latency ratio, paired by cycle, is judged by its own drift over the run
                (lab/stats/noise.py, paired_drift); an absolute latency by the run's guard.

Each instrument's figure has the interval its data allow, named beside it: the latency
suite's paired 99 % bootstrap interval of a ratio (the ranking's own), the range of the
run means where a scenario repeats runs, a mean's 99 % normal interval over its messages;
a figure from one run or a byte count has none (its interval is the figure itself).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clients.protocols import push_ways
from lab import results as lab_results
from lab import settings
from lab.page import Bullets, Heading, Page, Para, Table
from lab.stats import noise

VERDICTS = ("agrees", "differs", "not measured", "invalid")
Z99 = 2.5758293035489  # the normal distribution's 99.5 % quantile: a two-sided 99 % interval


class NotMeasured(Exception):
    """No result answers the cell: the message says what is missing and the command that makes it."""


@dataclass(frozen=True)
class Figure:
    """The lab's figure for one subject (or one ratio), with its interval and what the interval is."""
    value: float
    low: float
    high: float
    unit: str
    how: str
    invalid: tuple[str, ...] = ()   # the lab's validity check's reasons, if it says no
    source: str = ""                # the result file and the subject it came from

    @classmethod
    def point(cls, value: float, unit: str, how: str, **kw: Any) -> Figure:
        return cls(value, value, value, unit, how, **kw)

    def over(self, other: Figure) -> Figure:
        """self ÷ other, its interval from the two intervals (the widest the pair allows)."""
        if not other.value or other.low <= 0:
            raise NotMeasured(f"{other.source}: {other.value} cannot divide")
        both = "; ".join(dict.fromkeys([self.how, other.how]))
        points = self.low == self.high and other.low == other.high
        return Figure(self.value / other.value, self.low / other.high, self.high / other.low, "×",
                      both if points else f"interval from the two figures' intervals ({both})",
                      self.invalid + other.invalid, f"{self.source} ÷ {other.source}")


@dataclass(frozen=True)
class Instrument:
    """What answers a cell: where its result lives, what makes it, how to read a figure from it."""
    name: str
    kind: str                                   # lab/results.py's kind of its file
    files: Callable[[dict[str, Any]], list[str]]   # cell -> the result files, relative to results/, first found
    command: Callable[[dict[str, Any]], str]    # cell -> the command that writes it
    figure: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Figure]   # (data, cell, subject)
    ratio: Callable[[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]], Figure] | None = None

    def load(self, results_dir: Path, cell: dict[str, Any]) -> tuple[dict[str, Any], str]:
        tried = self.files(cell)
        for rel in tried:
            try:
                return lab_results.read(results_dir / rel, self.kind), rel
            except FileNotFoundError:
                continue
            except (OSError, lab_results.ResultError) as exc:
                raise NotMeasured(f"`results/{rel}` unreadable ({exc}): run `{self.command(cell)}`") from exc
        raise NotMeasured(f"no {' or '.join(f'`results/{rel}`' for rel in tried)}: run `{self.command(cell)}`")


# --- which implementation a subject is -------------------------------------------------------

ROW_FIELDS = ("transport", "mode")   # selector keys that a row or a run's site answers, not a manifest


def fields_of(name: str, context: dict[str, Any]) -> dict[str, Any]:
    """An implementation's manifest fields as the result's context recorded them (else from its name)."""
    recorded = context.get("implementations", {}).get(name)
    if isinstance(recorded, dict):
        return recorded
    protocol, _, folder = name.partition("/")
    return {"protocol": protocol, "language": folder.split("_")[0]}


def matches(fields: dict[str, Any], selector: dict[str, Any]) -> bool:
    return all(fields.get(k) == v for k, v in selector.items() if k not in ROW_FIELDS)


def resolve(selector: dict[str, Any], names: list[str], context: dict[str, Any]) -> list[str]:
    """The base implementations (not a variant: a name of its own base) among `names` whose manifest
    fields match, in the result's order."""
    return [n for n in names if "@" not in n and "+" not in n and fields_of(n, context).get("base", n) == n
            and matches(fields_of(n, context), selector)]


def describe(selector: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in selector.items())


def _one(selector: dict[str, Any], names: list[str], context: dict[str, Any], where: str, command: str) -> str:
    found = resolve(selector, names, context)
    if not found:
        raise NotMeasured(f"no implementation with {describe(selector)} in {where}: run `{command}`")
    return found[0]


# --- the latency suite (make bench) ------------------------------------------------------------

def _latency_files(cell: dict[str, Any]) -> list[str]:
    modes = {s.get("mode", "native") for s in cell.get("_subjects", [{}])}
    if len(modes) > 1:
        return ["benchmarks/native+docker-latest.json"]
    mode = modes.pop()   # one mode: its own run, else a run of both (make reference's), read as that mode's site
    return [f"benchmarks/{mode}-latest.json", "benchmarks/native+docker-latest.json"]


def _latency_command(cell: dict[str, Any]) -> str:
    modes = {s.get("mode", "native") for s in cell.get("_subjects", [{}])}
    return ("make bench LAB_MODE=native,docker" if len(modes) > 1
            else settings.RUN_COMMAND["docker" if "docker" in modes else "native"])


def _noise(data: dict[str, Any]) -> tuple[str, ...]:
    noise = data.get("context", {}).get("noise") or {}
    if not noise.get("flagged"):
        return ()
    reasons = noise.get("reasons") or ["the machine's speed moved during the run"]
    return (f"the noise guard flagged the run ({data['context'].get('date', '?')}): " + "; ".join(reasons[:2])
            + (f" (+{len(reasons) - 2} more)" if len(reasons) > 2 else ""),)


def _latency_subject(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> str:
    op = cell["operation"]
    rows = data.get("results", {}).get(op) or {}
    suffix = "@docker" if selector.get("mode") == "docker" and data["context"].get("mode") != "docker" else ""
    names = [n for n in data["context"].get("implementations", {}) if n + suffix in rows or n in rows]
    name = _one(selector, names, data["context"], f"the latency run's {op} rows",
                _latency_command(cell))
    return name + suffix


def _latency_figure(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> Figure:
    name = _latency_subject(data, cell, selector)
    row = data["results"][cell["operation"]][name]
    metric = cell.get("metric", "median")
    if metric == "median" and row.get("median_ci95"):
        low, high = row["median_ci95"]
        how = "median, its 95 % CI"
    else:
        low = high = row[metric]
        how = f"{metric} (no interval)"
    return Figure(row[metric], low, high, "µs", how, _noise(data), name)


def _pair(ranking: dict[str, Any] | None, a: str, b: str) -> tuple[float, float, float] | None:
    for p in (ranking or {}).get("pairs", []) + (ranking or {}).get("_comparisons", []):
        if (p["a"], p["b"]) == (a, b):
            return p["ratio"], p["ci"][0], p["ci"][1]
        if (p["a"], p["b"]) == (b, a):
            return 1 / p["ratio"], 1 / p["ci"][1], 1 / p["ci"][0]
    return None


def _latency_ratio(data: dict[str, Any], cell: dict[str, Any], sa: dict[str, Any], sb: dict[str, Any]) -> Figure:
    op = cell["operation"]
    a, b = _latency_subject(data, cell, sa), _latency_subject(data, cell, sb)
    suffix = "@docker" if a.endswith("@docker") and b.endswith("@docker") else ""
    ranking = (data.get("site_rankings", {}).get(op, {}).get(suffix) if suffix or data.get("site_rankings")
               else None) or data.get("rankings", {}).get(op)
    ranking = {**(ranking or {}), "_comparisons": data.get("comparisons", {}).get(op, [])}
    found = _pair(ranking, a, b)
    if found is None:
        raise NotMeasured(f"the latency run has no paired ratio {a} ÷ {b} for {op}: run `{_latency_command(cell)}`")
    confidence = ranking.get("confidence", 0.99)
    invalid, note = _ratio_noise(data, op, a, b)
    return Figure(*found, "×", f"median over cycles of the paired ratio, {confidence * 100:g} % bootstrap CI"
                  + note, invalid, f"{a} ÷ {b}")


def _ratio_noise(data: dict[str, Any], op: str, a: str, b: str) -> tuple[tuple[str, ...], str]:
    """A ratio paired by cycle is judged by its own drift over the run (lab/stats/noise.py, paired_drift,
    ratio_moved): a change of the machine's speed that moved both subjects alike, which flags the run's
    absolute times, cancels in it. (its reasons if it moved, a note of how much it moved)"""
    found = noise.paired_drift(data, op, a, b)
    if found is None:   # no rounds kept: the run's own guard, as for an absolute figure
        return _noise(data), ""
    threshold = (data.get("context", {}).get("noise") or {}).get("drift_threshold", noise.DRIFT_THRESHOLD)
    moved, (low, high) = found
    how = (f"{a} ÷ {b} moved {moved:+.1%} from the first fifth of the cycles to the last "
           f"(99 % interval {low:+.1%} to {high:+.1%}; counted beyond ±{threshold:.0%} with 0 outside it)")
    if noise.ratio_moved(found, threshold):
        return (f"the paired ratio {how}",), ""
    return (), f"; {how}" + (": the run's absolute times, flagged by the noise guard, moved alike"
                             if _noise(data) else "")


# --- the wire capture (make capture) ---------------------------------------------------------

def _capture_figure(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> Figure:
    op, column = cell["operation"], cell.get("metric", "new_connection")
    names = [n for n in data.get("new_connection", {}) if op in data["new_connection"][n]]
    name = _one(selector, names, data["context"], f"the wire capture's {op} rows", "make capture")
    new = data["new_connection"][name][op]["total"]["total"]["frame_bytes"]
    if column == "steady":
        value = data["steady"][name][op]["total"]["frame_bytes"]
    elif column == "new_connection_with_db":
        value = new + data["database"][name][op]["new_connection"]["total"]["frame_bytes"]
    else:
        value = new
    problems = tuple(f"capture problem: {p}" for p in data.get("problems", []) if name in p)
    return Figure.point(value, "bytes", f"frame bytes, {column.replace('_', ' ')}; a count (no interval)",
                        invalid=problems, source=name)


# --- Locust scenarios: Feathers (python -m studies feathers), Fernando & Engel -----------------

def _feathers_value(row: dict[str, Any], metric: str) -> float | None:
    if metric == "bytes_per_call":
        b = row.get("bytes_per_call") or {}
        return (b.get("sent", 0) + b.get("received", 0)) if b else None
    if metric == "connect_ms":
        c = row.get("connect_us") or {}
        return c["mean"] / 1000 if c.get("mean") is not None else None
    return row.get(metric)


def _reduce(cell: dict[str, Any], values: list[tuple[float, dict[str, Any], str]], where: str,
            command: str) -> tuple[float, dict[str, Any], str]:
    if not values:
        raise NotMeasured(f"{where}: run `{command}`")
    if cell.get("reduce") == "max":
        return max(values, key=lambda v: v[0])
    return values[0]


def _feathers_why(row: dict[str, Any]) -> list[str]:
    """Why the scenario marked a row invalid: its reasons, its errors, the calls it did not make."""
    why = list(row.get("invalid_reasons") or [])
    errors = row.get("errors") or {}
    if errors:
        why.append(f"{sum(errors.values())} errors ({', '.join(f'{k} {v}' for k, v in errors.items())})")
    asked = row.get("calls_per_connection", 0) * row.get("connections", 0)
    if row.get("ops") is not None and asked and row["ops"] != asked:
        why.append(f"{row['ops']:,} of the {asked:,} calls made")
    return why or ["marked invalid"]


def _feathers_command(cell: dict[str, Any]) -> str:
    calls = cell.get("calls")
    calls = calls if isinstance(calls, list) else [calls] if calls else []
    return ("python -m studies feathers" + (f" --calls {' '.join(map(str, calls))}" if calls else "")
            + (f" --path {cell['path']}" if cell.get("path") else ""))


def _at_path(names: list[str], cell: dict[str, Any]) -> dict[str, str]:
    """{implementation: its subject name} of the subjects measured on the cell's network path
    (loopback: no suffix; another: "<implementation>@<path>")."""
    path = cell.get("path") or "loopback"
    if path == "loopback":
        return {n: n for n in names if "@" not in n}
    return {n.removesuffix(f"@{path}"): n for n in names if n.endswith(f"@{path}")}


def _feathers_figure(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> Figure:
    metric, command = cell["metric"], _feathers_command(cell)
    where = "the Feathers run" + (f" on {cell['path']}" if cell.get("path") else "")
    if metric in ("per_call_bytes", "setup_bytes"):
        split = _at_path(list(data.get("bytes_split", {})), cell)
        name = _one(selector, list(split), data["context"], f"{where}'s bytes split (every call count)", command)
        fit = data["bytes_split"][split[name]]
        rows = data.get("results", {}).get(split[name], [])
        bad = [r for r in rows if not r.get("valid", True)]
        invalid = tuple(f"{name} at {r['calls_per_connection']:,} calls: " + "; ".join(_feathers_why(r))
                        for r in bad)
        return Figure.point(fit[metric], "bytes", f"least squares over {len(fit['points'])} call counts "
                            "(bytes per connection on calls per connection; no interval)", invalid=invalid,
                            source=f"{split[name]}, {metric.replace('_', ' ')}")
    subjects = _at_path(list(data.get("results", {})), cell)
    name = _one(selector, list(subjects), data["context"], where, command)
    calls = cell["calls"] if isinstance(cell["calls"], list) else [cell["calls"]]
    found = [(v, row, f"{subjects[name]} at {row['calls_per_connection']:,} calls")
             for row in data["results"][subjects[name]]
             if row["calls_per_connection"] in calls and (v := _feathers_value(row, metric)) is not None]
    value, row, source = _reduce(cell, found, f"the Feathers run has no {metric} of {subjects[name]} at "
                                 f"{'/'.join(f'{c:,}' for c in calls)} calls per connection", command)
    invalid = () if row.get("valid", True) else (f"{source}: " + "; ".join(_feathers_why(row)),)
    unit = {"requests_per_s": "requests/s", "bytes_per_call": "bytes", "connect_ms": "ms"}.get(metric, metric)
    how = "one run (no interval)" + (", the highest of the calls asked" if cell.get("reduce") == "max" else "")
    return Figure.point(value, unit, how, invalid=invalid, source=source)


# --- a new connection's setup across a network path (benchmarks/connection_setup.py) ----------

def _setup_command(cell: dict[str, Any]) -> str:
    return f"python -m benchmarks.connection_setup --paths {cell['path']}"


def _setup_figure(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> Figure:
    command = _setup_command(cell)
    paths = [p for p in data.get("paths", []) if p["path"] == cell["path"]]
    if not paths:
        raise NotMeasured(f"the connection-setup run has no path {cell['path']}: run `{command}`")
    path = paths[-1]
    name = _one(selector, list(path["subjects"]), data["context"], f"the connection-setup run on {cell['path']}",
                command)
    figure = path["subjects"][name][cell["metric"]]
    low, high = figure["ci95_ms"]
    rtt = path.get("rtt_ms")
    how = (f"median of {figure['n']} rounds' {'new − kept call' if cell['metric'] == 'setup' else cell['metric']}, "
           f"its 95 % CI; path {cell['path']}" + (f" (measured round trip {rtt:.1f} ms)" if rtt else ""))
    return Figure(figure["median_ms"], low, high, "ms", how, (), f"{name} on {cell['path']}")


def _fernando_value(test: str, row: dict[str, Any], metric: str) -> float | None:
    if metric == "messages_per_s":
        return row.get("messages_per_s")
    if test == "broadcast":
        return (row.get("latency_ms") or {}).get("mean")
    return (row.get(metric) or {}).get("mean")


def _fernando_command(cell: dict[str, Any]) -> str:
    return f"python -m studies fernando --clients {cell['clients']}"


def _fernando_figure(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> Figure:
    test, clients, metric, command = cell["test"], cell["clients"], cell["metric"], _fernando_command(cell)
    rows_by = data.get("results", {}).get(test, {})
    name = _one(selector, list(rows_by), data["context"], f"the Fernando & Engel {test} runs", command)
    runs = [r for r in rows_by[name] if r["clients"] == clients]
    values = [v for r in runs if (v := _fernando_value(test, r, metric)) is not None]
    if not values:
        raise NotMeasured(f"no {test} run of {name} at {clients:,} clients: run `{command}`")
    bad = [r for r in runs if not r.get("valid", True)]
    reasons = list(dict.fromkeys(x for r in bad for x in r.get("invalid_reasons") or ["marked invalid"]))
    invalid = (f"{len(bad)} of {len(runs)} {test} runs of {name} at {clients:,} clients invalid: "
               + "; ".join(reasons[:2]),) if bad else ()
    unit = "msg/s" if metric == "messages_per_s" else "ms"
    source = f"{name}, {test}, {clients:,} clients"
    spread = (runs[0].get("latency_ms") if test == "broadcast" else runs[0].get(metric)) or {}
    if len(values) == 1 and metric != "messages_per_s" and spread.get("stddev") and (spread.get("count") or 0) > 1:
        half = Z99 * spread["stddev"] / math.sqrt(spread["count"])
        return Figure(values[0], values[0] - half, values[0] + half, unit,
                      f"mean, 99 % normal interval over {spread['count']:,} samples (one run)", invalid, source)
    how = (f"mean of {len(values)} run means; interval: their range" if len(values) > 1
           else "one run (no interval)")
    return Figure(sum(values) / len(values), min(values), max(values), unit, how, invalid, source)


# --- the push instrument (python -m studies push) ----------------------------------------------

def _push_command(cell: dict[str, Any]) -> str:
    return f"python -m studies push --scenario {cell['scenario'].split('-')[0]}"


def _push_base(row: dict[str, Any]) -> str:
    """The implementation a push row measured: a way that needs a variant of it (SSE over HTTP/2
    over TLS: its http=h2 subject) is that implementation's way, not another subject."""
    way = push_ways().get(row["transport"])
    name = row["implementation"]
    return name.removesuffix(f"+{way.variant}") if way is not None and way.variant else name


def _push_figure(data: dict[str, Any], cell: dict[str, Any], selector: dict[str, Any]) -> Figure:
    metric, command = cell["metric"], _push_command(cell)
    clients = cell["clients"] if isinstance(cell["clients"], list) else [cell["clients"]]
    rows = [r for r in data.get("rows", []) if r["scenario"] == cell["scenario"] and r["clients"] in clients
            and r["batch"] == cell.get("batch", r["batch"])
            and r["transport"] == selector.get("transport", r["transport"])
            and resolve(selector, [_push_base(r)], data["context"])]

    def value(r: dict[str, Any]) -> float | None:
        head, _, tail = metric.partition(".")
        v = r.get(head)
        return v.get(tail) if tail and isinstance(v, dict) else v
    found = [(v, r, f"{r['implementation']} {r['transport']} c{r['clients']} b{r['batch']}")
             for r in rows if (v := value(r)) is not None]
    v, row, source = _reduce(cell, found, f"the push run has no {cell['scenario']} row with {describe(selector)} "
                             f"at {'/'.join(f'{c:,}' for c in clients)} clients", command)
    invalid = []
    if row.get("errors"):
        invalid.append(f"{source}: {row['errors']} errors {row.get('errors_by_kind') or ''}".strip())
    if row.get("client_bound"):
        invalid.append(f"{source}: the push client used ≥ 90 % of its CPUs (the client was the bottleneck)")
    if metric == "latency_ms.mean" and row.get("latency_ms", {}).get("sd") is not None and row.get("messages"):
        half = Z99 * row["latency_ms"]["sd"] / math.sqrt(row["messages"])
        return Figure(v, v - half, v + half, "ms", f"mean, 99 % normal interval over {row['messages']:,} "
                      "messages (one run)", tuple(invalid), source)
    highest = ", the highest of the rows asked" if cell.get("reduce") == "max" else ""
    if metric == "events_per_s" and row.get("receiving_clients") and row.get("seconds"):
        # A count over a window: at each of its two edges one message per receiving client may fall either
        # side, so the rate is known to ± 2 × clients × batch / seconds (its resolution, not a spread)
        half = 2 * row["receiving_clients"] * row["batch"] / row["seconds"]
        how = (f"one run, ± its counting resolution ({half:,.0f} events/s: a message per receiving client at "
               f"each edge of the window){highest}")
        return Figure(v, v - half, v + half, "events/s", how, tuple(invalid), source)
    units = {"events_per_s": "events/s", "server_rss_mb": "MB"}
    unit = units.get(metric, "%" if metric.endswith("cpu_percent") else metric)
    return Figure.point(v, unit, f"one run (no interval){highest}", invalid=tuple(invalid), source=source)


INSTRUMENTS: dict[str, Instrument] = {i.name: i for i in (
    Instrument("latency", "latency", _latency_files, _latency_command, _latency_figure, _latency_ratio),
    Instrument("capture", "capture", lambda c: ["capture/wire.json"], lambda c: "make capture", _capture_figure),
    Instrument("feathers", "feathers", lambda c: ["load/feathers-latest.json"], _feathers_command, _feathers_figure),
    Instrument("fernando", "fernando", lambda c: ["load/fernando-latest.json"], _fernando_command, _fernando_figure),
    Instrument("push", "push", lambda c: ["load/push-latest.json"], _push_command, _push_figure),
    Instrument("setup", "connection-setup", lambda c: ["setup/connection-setup-latest.json"], _setup_command,
               _setup_figure),
)}


# --- the verdict -----------------------------------------------------------------------------

@dataclass
class Result:
    study: str
    claim: dict[str, Any]
    verdict: str
    study_figure: str
    lab_figure: str
    reason: str
    explanation: str = ""

    def row(self) -> dict[str, Any]:
        return {"study": self.study, "id": self.claim["id"], "sentence": self.claim["sentence"],
                "study_figure": self.study_figure, "lab_figure": self.lab_figure, "verdict": self.verdict,
                "reason": self.reason, "explanation": self.explanation}


def num(x: float) -> str:
    """1,350,000; 185.96 -> 186; 17.81; 0.57; 0.012 (up to two decimals, three significant below 1)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    digits = 2 if abs(x) >= 1 else max(2, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{digits}f}".rstrip("0").rstrip(".")


def lab_text(f: Figure) -> str:
    unit = "" if f.unit == "×" else f" {f.unit}"
    if f.low == f.high:
        return f"{num(f.value)}{unit} ({f.how})"
    return f"{num(f.value)}{unit} ({num(f.low)}–{num(f.high)}: {f.how})"


def figure_of(claim: dict[str, Any], label: str) -> dict[str, Any]:
    for f in claim["figures"]:
        if f["of"] == label:
            return f
    raise ValueError(f"claim {claim['id']}: no figure of {label!r}")


def study_value(claim: dict[str, Any], label: str) -> str:
    f = figure_of(claim, label)
    if f["value"] is None:
        return f"{label}: no figure in its text"
    unit = "" if f["unit"] == "×" else f" {f['unit']}"
    return f"{label} {'~' if f.get('approximate') else ''}{num(f['value'])}{unit}"


def study_ratio(claim: dict[str, Any]) -> tuple[float, str]:
    """The study's ratio: a figure it states, or a ÷ b from its figures (computed, never typed)."""
    form = claim["form"]
    if "figure" in form:
        f = figure_of(claim, form["figure"])
        return f["value"], f"{form['a']} ÷ {form['b']} {'~' if f.get('approximate') else ''}{num(f['value'])}"
    a, b = figure_of(claim, form["a"]), figure_of(claim, form["b"])
    r = a["value"] / b["value"]
    return r, (f"{form['a']} ÷ {form['b']} = {num(r)} ({num(a['value'])} / {num(b['value'])} {a['unit']}, "
               f"{a['statistic']})")


def _statistic(claim: dict[str, Any]) -> str:
    return "/".join(dict.fromkeys(f["statistic"] for f in claim["figures"]))


def condition_text(claim: dict[str, Any]) -> str:
    """The figures' condition (clients, calls, payload, ...), once where they share it."""
    conditions = list(dict.fromkeys(json.dumps(f["condition"], ensure_ascii=False) for f in claim["figures"]))
    return " | ".join(", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in json.loads(c).items())
                      for c in conditions)


def study_text(claim: dict[str, Any]) -> str:
    return f"{_study_text(claim)} [{condition_text(claim)}]"


def _study_text(claim: dict[str, Any]) -> str:
    form = claim["form"]
    kind = form["kind"]
    if kind == "value":
        f = figure_of(claim, form["of"])
        return f"{study_value(claim, form['of'])} ({f['statistic']})"
    if kind == "ratio":
        return study_ratio(claim)[1]
    symbol = {"<": "<", ">": ">", "~": "≈"}[form["relation"]]
    values = [study_value(claim, f["of"]) for f in claim["figures"]]
    head = (f"{form['a']} {symbol} {', '.join(form['b'])}" if "a" in form
            else f" {symbol} ".join(form["among"]))
    return head + (f" ({'; '.join(values)}, {_statistic(claim)})" if values else "")


def _pairs(form: dict[str, Any]) -> list[tuple[str, str]]:
    if "among" in form:
        among = form["among"]
        return [(x, y) for i, x in enumerate(among) for y in among[i + 1:]]
    return [(form["a"], b) for b in form["b"]]


def lab_ratio(instrument: Instrument, data: dict[str, Any], cell: dict[str, Any], a: dict[str, Any],
              b: dict[str, Any]) -> Figure:
    if instrument.ratio is not None:
        return instrument.ratio(data, cell, a, b)
    return instrument.figure(data, cell, a).over(instrument.figure(data, cell, b))


def outside(x: float, f: Figure) -> str:
    """By how much x lies outside f's interval, said against the lab's figure."""
    side = "above" if x > f.high else "below"
    times = x / f.value if f.value else float("inf")
    interval = "the lab's figure" if f.low == f.high else f"the lab's interval ({num(f.low)}–{num(f.high)})"
    factor = f"{times:.2f}×" if 0.5 <= times <= 2 else f"{num(times)}×"
    return f"the study's {num(x)} is {side} {interval}: {factor} the lab's {num(f.value)}"


def relation_holds(relation: str, f: Figure) -> bool:
    return {"<": f.high < 1, ">": f.low > 1, "~": f.low <= 1 <= f.high}[relation]


def relation_text(a: str, b: str, relation: str, f: Figure) -> str:
    """What the lab's interval says about a ÷ b when the claim's relation does not hold."""
    ratio = f"{a} ÷ {b} {num(f.value)}" + ("" if f.low == f.high else f" ({num(f.low)}–{num(f.high)})")
    if relation == "~" and f.low == f.high:   # one run: no interval that could hold 1, so any difference counts
        return f"one run, no interval to call them alike: {a} ÷ {b} {f.value:.3f}"
    if relation == "~":
        return f"the lab tells them apart: {ratio}"
    if f.low <= 1 <= f.high:
        return f"the lab cannot tell them apart: {ratio}"
    return f"the lab finds the opposite: {ratio}"


def judge(study: str, claim: dict[str, Any], results_dir: Path) -> Result:
    """The verdict on one claim, from the saved results under results_dir."""
    lab = dict(claim["lab"])
    form = claim["form"]
    instrument = INSTRUMENTS[lab["instrument"]]
    subjects = lab["subjects"]
    lab["_subjects"] = list(subjects.values())
    text = study_text(claim)
    explanation = claim.get("explanation", "")

    def result(verdict: str, lab_figure: str, reason: str) -> Result:
        return Result(study, claim, verdict, text, lab_figure, reason,
                      explanation if verdict in ("differs", "invalid") else "")
    source = "?"
    try:
        data, source = instrument.load(results_dir, lab)
        if form["kind"] == "value":
            figure = instrument.figure(data, lab, subjects[form["of"]])
            figures = [figure]
            x = figure_of(claim, form["of"])["value"]
            holds = figure.low <= x <= figure.high
            reason = "" if holds else outside(x, figure)
            shown = lab_text(figure)
        elif form["kind"] == "ratio":
            figure = lab_ratio(instrument, data, lab, subjects[form["a"]], subjects[form["b"]])
            figures = [figure]
            x, _ = study_ratio(claim)
            holds = figure.low <= x <= figure.high
            reason = "" if holds else outside(x, figure)
            shown = f"{form['a']} ÷ {form['b']} " + lab_text(figure)
        else:
            figures, parts, failed = [], [], []
            for a, b in _pairs(form):
                figure = lab_ratio(instrument, data, lab, subjects[a], subjects[b])
                figures.append(figure)
                parts.append(f"{a} ÷ {b} {num(figure.value)}"
                             + ("" if figure.low == figure.high else f" ({num(figure.low)}–{num(figure.high)})"))
                if not relation_holds(form["relation"], figure):
                    failed.append(relation_text(a, b, form["relation"], figure))
            holds = not failed
            reason = "; ".join(failed)
            hows = "; ".join(dict.fromkeys(f.how for f in figures))
            shown = "; ".join(parts) + f" ({hows})"
    except NotMeasured as exc:
        return result("not measured", "–", str(exc))
    except KeyError as exc:  # a result of an older layout, without what this cell reads
        return result("not measured", "–", f"`results/{source}` has no {exc} for this cell: run "
                      f"`{instrument.command(lab)}`")
    shown += f" [`results/{source}`]"
    invalid = list(dict.fromkeys(r for f in figures for r in f.invalid))
    if invalid:
        would = "agree" if holds else "differ"
        return result("invalid", shown, "; ".join(invalid) + f" (were it valid, the figures would {would})")
    return result("agrees" if holds else "differs", shown, reason)


# --- every study's claims ----------------------------------------------------------------------

def claims_of(published: dict[str, Any]) -> list[dict[str, Any]]:
    return list(published.get("claims", []))


def judge_all(results_dir: Path, studies: list[Any] | None = None) -> list[Result]:
    from studies import STUDIES

    out = []
    for s in STUDIES if studies is None else studies:
        published = s.published()
        for claim in claims_of(published):
            out.append(judge(published["citation"]["short"], claim, results_dir))
    return out


def counts(found: list[Result]) -> dict[str, int]:
    return {v: sum(1 for r in found if r.verdict == v) for v in VERDICTS}


def count_text(found: list[Result]) -> str:
    c = counts(found)
    return (f"{len(found)} claims: {c['agrees']} agree, {c['differs']} differ, {c['not measured']} not measured, "
            f"{c['invalid']} invalid")


HEAD = ["study", "claim", "study's figure", "lab's figure", "verdict", "why / explanation"]


def table_rows(found: list[Result]) -> list[list[str]]:
    rows = []
    for r in found:
        why = r.reason + (f" — {r.explanation}" if r.explanation else "")
        rows.append([r.study, f"{r.claim['sentence']} ({r.claim['where']})", r.study_figure, r.lab_figure,
                     f"**{r.verdict}**", why or "–"])
    return rows


def markdown(found: list[Result]) -> str:
    def cell(x: str) -> str:
        return x.replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in table_rows(found)]
    return "\n".join(lines) + f"\n\n{count_text(found)}.\n"


def section(page: Page, results_dir: Path, studies: list[Any] | None = None) -> list[str]:
    """The report's part: every study's headline claims beside the lab, and the count of verdicts."""
    found = judge_all(results_dir, studies)
    page.add(Heading(2, "The studies' claims beside the lab", "claims"),
             Para("Each study's headline claims, kept as data in its `published.json` (`claims`), each with the "
                  "lab's figure that answers it and a verdict computed from the saved results "
                  "(`python -m studies.claims` prints this table alone): **agrees** — the study's figure, or its "
                  "ratio, lies within the lab's interval, or the order it states is the one the lab's ranking rule "
                  "supports (A ÷ B's 99 % interval excludes 1; for 'about the same', holds 1); **differs** — not, "
                  "and by how much; **not measured** — no result for the cell, and the command that makes it; "
                  "**invalid** — measured, but the lab's validity check says no, and why."),
             Table(HEAD, table_rows(found), count_text(found) + ".", "claims-table"))
    if not found:
        page.add(Bullets(["No study has claims in its published.json."]))
    return [f"claims: {count_text(found)}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.claims", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--results", type=Path, default=settings.RESULTS, help="the results folder (default results/)")
    parser.add_argument("--study", action="append", help="only this study (its folder name); repeatable")
    parser.add_argument("--json", action="store_true", help="one JSON object per claim instead of the table")
    args = parser.parse_args(argv)
    from studies import BY_NAME

    unknown = [s for s in args.study or [] if s not in BY_NAME]
    if unknown:
        parser.error(f"no study named {', '.join(unknown)}; the studies: {', '.join(BY_NAME)}")
    found = judge_all(args.results, [BY_NAME[s] for s in args.study] if args.study else None)
    if args.json:
        for r in found:
            print(json.dumps(r.row(), ensure_ascii=False))
    else:
        print(markdown(found), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
