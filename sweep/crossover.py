"""Crossovers along an axis, with the confidence behind them. Pure functions.

An axis orders the measured points of a line of cells that differ in one
coordinate only (payload: 1 < 10 < 100 < 1,000 games per response at one
compression value and path; path: 0 < 1 < 20 < 100 ms round trip at one
operation; compression: off < on). For every pair of entities (implementations;
named by their protocol where it has one implementation in the sweep) measured
at two or more points of a line, the paired ratio a ÷ b at each point and its
99 % interval say which is faster there, by the latency tables' rule: an order
holds at a point only where the interval excludes 1. Then one statement:

- **crossover**: the order holds one way at a point and the other way at a later
  one: "B overtakes A between p and q <unit>: the 99 % interval of their ratio
  excludes 1 at p (...) and from q on (...)" (q being the first point where the
  new order holds; points in between, where neither holds, are named);
- **unsupported**: the point estimates change order but the intervals never hold
  both orders: "order changes ... but not supported by the intervals (inside the
  interval at ...)";
- **none**: "no crossover in the range measured", with what held.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.99


@dataclass(frozen=True)
class Point:
    """a ÷ b at one measured point of an axis."""
    label: str            # "100" (with the axis' unit: "100 games per response")
    ratio: float
    ci: tuple[float, float]

    @property
    def relation(self) -> str:
        """'<' a faster (the interval below 1), '>' b faster, '~' neither shown."""
        low, high = self.ci
        return "<" if high < 1 else ">" if low > 1 else "~"

    @property
    def leader(self) -> str:
        """Which is faster by the point estimate alone: 'a', 'b' or '=' ."""
        return "a" if self.ratio < 1 else "b" if self.ratio > 1 else "="

    def text(self) -> str:
        return f"{self.ratio:.2f}, {self.ci[0]:.2f}–{self.ci[1]:.2f}"


@dataclass(frozen=True)
class Statement:
    a: str
    b: str
    kind: str                         # "crossover", "unsupported", "none"
    text: str
    between: tuple[str, str] | None   # the measured points the order changes between
    points: tuple[Point, ...]

    def describe(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "kind": self.kind, "text": self.text,
                "between": list(self.between) if self.between else None,
                "points": [{"label": p.label, "ratio": p.ratio, "ci": list(p.ci), "relation": p.relation}
                           for p in self.points]}


def _numeric(label: str) -> bool:
    return label.replace(",", "").replace(".", "").isdigit()


def with_unit(label: str, short: str) -> str:
    """ "100 games", "1 game", "0 (loopback)": the unit after a number only."""
    if not short or not _numeric(label):
        return label
    return f"{label} {'game' if label == '1' and short == 'games' else short}"


def _at(points: Sequence[Point], unit: str, indexes: Iterable[int]) -> str:
    labels = [points[i].label for i in indexes]
    if not labels:
        return ""
    if all(_numeric(label) for label in labels) and unit:   # "1, 10 and 100 games"
        return (", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else with_unit(labels[0], unit)) \
            + (f" {unit}" if len(labels) > 1 else "")
    labels = [with_unit(label, unit) for label in labels]
    return ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else labels[0]


def crossover(a: str, b: str, points: Sequence[Point], unit: str = "", confidence: float = CONFIDENCE) -> Statement:
    """The statement the intervals support about a and b along ordered `points` (a ÷ b at each)."""
    pct = f"{confidence * 100:g} %"
    short = unit.split(" ")[0]   # "games per response" once, then "games"
    points = [p for p in points if not (math.isnan(p.ratio) or math.isnan(p.ci[0]) or math.isnan(p.ci[1]))]
    name = {"<": a, ">": b}
    other = {"<": b, ">": a}
    held = [(i, p.relation) for i, p in enumerate(points) if p.relation != "~"]
    # a supported change: consecutive held points whose order differs
    changes = [(i, j) for (i, ri), (j, rj) in zip(held, held[1:], strict=False) if ri != rj]
    if changes:
        texts = []
        for i, j in changes:
            after = points[j].relation
            holds_on = all(points[k].relation == after for k in range(j, len(points)))
            middle = list(range(i + 1, j))
            where = f"from {with_unit(points[j].label, short)} on" if holds_on and j < len(points) - 1 else \
                f"at {with_unit(points[j].label, short)}"
            text = (f"{name[after]} overtakes {other[after]} between {points[i].label} and {points[j].label} {unit}: "
                    f"the {pct} interval of their ratio excludes 1 at {with_unit(points[i].label, short)} "
                    f"({a} ÷ {b} {points[i].text()}) and {where} ({points[j].text()})")
            if middle:
                text += f"; inside the interval at {_at(points, short, middle)}"
            texts.append(" ".join(text.split()))
        first = changes[0]
        return Statement(a, b, "crossover", "; then ".join(texts), (points[first[0]].label, points[first[1]].label),
                         tuple(points))
    leaders = [(i, p.leader) for i, p in enumerate(points) if p.leader != "="]
    moves = [(i, j) for (i, li), (j, lj) in zip(leaders, leaders[1:], strict=False) if li != lj]
    if moves:
        i, j = moves[0]
        inside = [k for k, p in enumerate(points) if p.relation == "~"]
        text = (f"{a} and {b} change order between {points[i].label} and {points[j].label} {unit} "
                f"({a} ÷ {b} {points[i].text()}, then {points[j].text()}), but not supported by the intervals "
                f"(inside the interval at {_at(points, short, inside)})")
        return Statement(a, b, "unsupported", " ".join(text.split()), (points[i].label, points[j].label),
                         tuple(points))
    span = f"{points[0].label}–{points[-1].label} {unit}".strip() if points else "nothing measured"
    if held:
        relation = held[0][1]
        shown = _at(points, short, [i for i, _ in held])
        text = (f"no crossover in the range measured ({span}): {name[relation]} faster than {other[relation]} "
                f"wherever the interval excludes 1 ({shown})")
    else:
        text = f"no crossover in the range measured ({span}): no order shown at any point"
    return Statement(a, b, "none", " ".join(text.split()), None, tuple(points))


# --- lines of cells along an axis ----------------------------------------------------------


@dataclass(frozen=True)
class Line:
    axis: str                      # "payload", the variant axis' name ("compression"), "rtt", "bandwidth"
    fixed: str                     # what the line's cells share: "fetch at identity on loopback"
    unit: str
    cells: tuple[dict[str, Any], ...]   # in the axis' order
    labels: tuple[str, ...]


def _link(cell: dict[str, Any]) -> dict[str, Any]:
    return cell["link"]


def lines(cells: Sequence[dict[str, Any]], variants: Sequence[str] = (),
          variant_axis: str = "compression") -> list[Line]:
    """Every line of two or more cells along each axis, each from the cells of one run (a cell
    measured by two runs, loopback in the payload and the path slice, sits on each run's lines);
    a line that another along the same axis and fixed coordinates covers (its points and its
    implementations) is left out."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        runs.setdefault(cell.get("run", {}).get("file", ""), []).append(cell)
    kept: list[Line] = []
    for members in runs.values():
        for line in _lines(members, variants, variant_axis):
            if any(_covers(other, line) for other in kept):
                continue
            kept = [other for other in kept if not _covers(line, other)] + [line]
    return kept


def _entities(line: Line) -> set[str]:
    return {n for c in line.cells for n in c["subjects"]}


def _covers(a: Line, b: Line) -> bool:
    """a holds b's points and b's implementations along the same axis and fixed coordinates."""
    return (a.axis, a.fixed) == (b.axis, b.fixed) and set(a.labels) >= set(b.labels) and _entities(a) >= _entities(b)


def cell_key(cell: dict[str, Any]) -> str:
    return f"{cell['operation']}|{cell['variant']}|{cell['path']}"


def _lines(cells: Sequence[dict[str, Any]], variants: Sequence[str], variant_axis: str) -> list[Line]:
    """Every line of two or more cells along each axis.

    payload: same family (games per response; a sized row by its bytes), variant and path, ordered by
    games (else bytes); the variant axis (compression): same operation and path, in the axis' order of
    values; rtt: same
    operation and variant, paths without a rate or loss, by round trip (loopback before a bare veth);
    bandwidth: same operation and variant, paths without added round trip or loss, fastest first."""
    order = {v: i for i, v in enumerate(variants)}
    out: list[Line] = []

    def grouped(key: Any, keep: Any) -> dict[Any, list[dict[str, Any]]]:
        found: dict[Any, list[dict[str, Any]]] = {}
        for cell in cells:
            if keep(cell):
                found.setdefault(key(cell), []).append(cell)
        return {k: v for k, v in found.items() if len(v) > 1}

    for (family, variant, path), members in grouped(lambda c: (c["family"], c["variant"], c["path"]),
                                                    lambda c: c.get("games") is not None or c.get("bytes")).items():
        by_games = family == "fetch" and all(c.get("games") is not None for c in members)
        members.sort(key=lambda c: (c["games"] if by_games else (c.get("bytes") or 0)))
        labels = [f"{c['games']:,}" if by_games else f"{c['operation'].partition(':')[2] or c['operation']} "
                  f"({c.get('bytes') or '?'} B)" for c in members]
        unit = "games per response" if by_games else "payload"
        if len({c["operation"] for c in members}) > 1:
            out.append(Line("payload", f"{family}{_variant_text(variant)} on {path}", unit, tuple(members),
                            tuple(labels)))
    for (operation, path), members in grouped(lambda c: (c["operation"], c["path"]), lambda c: True).items():
        members.sort(key=lambda c: order.get(c["variant"], 99))
        if len({c["variant"] for c in members}) > 1:
            out.append(Line(variant_axis, f"{operation} on {path}", "", tuple(members),
                            tuple(c["variant"] or "base" for c in members)))
    for (operation, variant), members in grouped(
            lambda c: (c["operation"], c["variant"]),
            lambda c: not _link(c).get("rate_mbit") and not _link(c).get("loss_pct")).items():
        members.sort(key=lambda c: (_link(c).get("rtt_ms") or 0.0, bool(_link(c).get("veth"))))
        labels = [("0 (loopback)" if not _link(c).get("veth") else "0 (veth)") if not _link(c).get("rtt_ms")
                  else f"{_link(c)['rtt_ms']:g}" for c in members]
        if len({_link(c).get("rtt_ms") or 0.0 for c in members}) > 1:
            out.append(Line("rtt", f"{operation}{_variant_text(variant)}", "ms round trip", tuple(members),
                            tuple(labels)))
    for (operation, variant), members in grouped(
            lambda c: (c["operation"], c["variant"]),
            lambda c: not _link(c).get("rtt_ms") and not _link(c).get("loss_pct")).items():
        members.sort(key=lambda c: (-(_link(c).get("rate_mbit") or math.inf), bool(_link(c).get("veth"))))
        labels = [f"{_link(c)['rate_mbit']:g}" if _link(c).get("rate_mbit") else
                  ("unlimited (loopback)" if not _link(c).get("veth") else "unlimited (veth)") for c in members]
        if any(_link(c).get("rate_mbit") for c in members):
            out.append(Line("bandwidth", f"{operation}{_variant_text(variant)}", "Mbit/s", tuple(members),
                            tuple(labels)))
    return out


def _variant_text(value: str) -> str:
    return f" at {value}" if value else ""


def names(cells: Sequence[dict[str, Any]]) -> dict[str, str]:
    """An entity's name in a statement: its protocol where that protocol has one implementation in
    these cells, else the implementation."""
    protocol_of: dict[str, str] = {}
    for cell in cells:
        for impl, row in cell["subjects"].items():
            protocol_of[impl] = row.get("protocol") or impl
    count: dict[str, int] = {}
    for protocol in protocol_of.values():
        count[protocol] = count.get(protocol, 0) + 1
    return {impl: protocol if count[protocol] == 1 else impl for impl, protocol in protocol_of.items()}


def pair_at(cell: dict[str, Any], a: str, b: str) -> Point | None:
    for pair in cell.get("pairs", []):
        if {pair["a"], pair["b"]} == {a, b}:
            if pair["a"] == a:
                return Point("", pair["ratio"], (pair["ci"][0], pair["ci"][1]))
            return Point("", 1 / pair["ratio"], (1 / pair["ci"][1], 1 / pair["ci"][0]))
    return None


def statements(cells: Sequence[dict[str, Any]], variants: Sequence[str] = (), variant_axis: str = "compression",
               confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Per line, per pair of entities measured at two or more of its points: the statement."""
    label_of = names(cells)
    out = []
    for line in lines(cells, variants, variant_axis):
        entities = sorted({impl for cell in line.cells for impl in cell["subjects"]})
        for i, a in enumerate(entities):
            for b in entities[i + 1:]:
                points = []
                for cell, label in zip(line.cells, line.labels, strict=True):
                    found = pair_at(cell, a, b)
                    if found is not None:
                        points.append(Point(label, found.ratio, found.ci))
                if len(points) < 2:
                    continue
                statement = crossover(label_of.get(a, a), label_of.get(b, b), points, line.unit, confidence)
                out.append({"axis": line.axis, "line": line.fixed, "unit": line.unit,
                            "implementations": [a, b], "cells": [cell_key(c) for c in line.cells],
                            "run": line.cells[0].get("run", {}).get("file", ""),
                            **statement.describe()})
    return out
