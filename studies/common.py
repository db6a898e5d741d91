"""What the studies' sections share with the report's own sections: reading a
saved result, the number formats, the push tables' cells. (Here, not in
report/, because the studies sit below the report: the report imports them.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clients.protocols import push_ways
from lab import results
from lab.page import Page, Para


def read_json(path: Path, kind: str, page: Page | None = None) -> dict[str, Any] | None:
    """A saved result file of `kind` (through lab/results.py), or None when it is
    missing or unreadable (the section says "not measured"); with `page`, a file
    that is not such a result says why on the page."""
    try:
        return results.read(path, kind)
    except OSError:
        return None
    except results.ResultError as exc:
        if page is not None:
            page.add(Para(f"`{path.name}` left out: {exc}", "missing"))
        return None


def n0(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


def ratio(x: float | None, base: float | None) -> str:
    return "–" if not x or not base else f"{x / base:.2f}"


# The push tables' names of the push ways (their descriptors' short labels: "sse-h1" -> "SSE h1").
LABELS = {key: way.short for key, way in push_ways().items()}


def eps(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:,.0f} k" if x >= 1e4 else f"{x:,.0f}"


def series(rows: list[dict[str, Any]], scenario: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["scenario"] == scenario:
            out.setdefault((r["implementation"], r["transport"]), []).append(r)
    return out


def cell(r: dict[str, Any]) -> str:
    mark = "*" if r.get("client_bound") else ""
    errors = f", {r['errors']} err" if r.get("errors") else ""
    return f"{eps(r['events_per_s'])}{mark} ({r['client_cpu_percent']:.0f} / {r['server_cpu_percent']:.0f} %{errors})"


def opt(x: float | None) -> str:
    return "–" if x is None else eps(x)
