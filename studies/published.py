"""Reading a study's published figures (studies/<name>/published.json, the
shape of Tables 4-7 there: table, row, statistic, column, with the table's
unit) and rankings compared with the lab's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clients.protocols import label


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def name(protocol: str) -> str:
    return label(protocol)


def latency_table(study: dict[str, Any], operation: str) -> tuple[str, dict[str, Any]] | None:
    """(table number, table) of the study's Tables 4-6 for one operation."""
    for number, table in study["tables"].items():
        if table.get("operation") == operation and "statistics" in table:
            return number, table
    return None


def study_latency(study: dict[str, Any], operation: str, environment: str,
                  stat: str = "mean") -> dict[str, float]:
    """{lab protocol: value in µs} from the study's table for `operation`."""
    found = latency_table(study, operation)
    if found is None:
        return {}
    protocols = study["protocols"]
    return {protocols[p]: row[stat][environment] for p, row in found[1]["rows"].items()}


def study_bytes(study: dict[str, Any]) -> dict[str, dict[str, int]]:
    """{operation: {lab protocol: bytes}} from Table 7."""
    out: dict[str, dict[str, int]] = {}
    for row in study["tables"]["7"]["rows"].values():
        out[row["operation"]] = {study["protocols"][p]: v for p, v in row.items() if p in study["protocols"]}
    return out


def ranking(values: dict[str, float]) -> list[str]:
    """Smallest first; ties by name so the order is stable."""
    return sorted(values, key=lambda k: (values[k], k))


def ranking_text(order: list[str]) -> str:
    return " < ".join(name(p) for p in order)


def ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def disagreement(study_order: list[str], lab_order: list[str], study_label: str = "the study",
                 lab_label: str = "the lab", best: str = "best") -> str | None:
    """A plain sentence on where two rankings (best first) differ, or None
    when they agree on the protocols both have."""
    common = [p for p in study_order if p in lab_order]
    s = [p for p in study_order if p in common]
    lab = [p for p in lab_order if p in common]
    if s == lab:
        return None
    moved = [f"{name(p)} {ordinal(s.index(p) + 1)} → {ordinal(lab.index(p) + 1)}"
             for p in s if s.index(p) != lab.index(p)]
    if s[0] != lab[0]:
        head = f"{study_label[0].upper()}{study_label[1:]} finds {name(s[0])} {best}, {lab_label} {name(lab[0])}"
    else:
        head = f"Both find {name(s[0])} {best}, but the order below differs"
    return f"{head}; places that differ ({study_label} → {lab_label}): {', '.join(moved)}."
