"""The report's order and grouping: by protocol (clients/<protocol>/__init__.py order),
and by language within a protocol (the manifest's `language`; Python, the
reference, first)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from clients.protocols import PROTOCOLS, label
from lab.registry import LANGUAGE_ORDER

LANGUAGE_LABEL = {"python": "Python", "go": "Go", "node": "Node.js"}


def language_label(language: str) -> str:
    return LANGUAGE_LABEL.get(language, language)


def _rank(value: str, order: Sequence[str]) -> int:
    return order.index(value) if value in order else len(order)


def grouped(subjects: Sequence[str], protocol_of: Callable[[str], str],
            language_of: Callable[[str], str]) -> list[str]:
    """Subjects by protocol, then by language within it; otherwise as given; `direct` last."""
    protocols = list(PROTOCOLS)
    position = {s: i for i, s in enumerate(subjects)}
    return sorted(subjects, key=lambda s: (s == "direct", _rank(protocol_of(s), protocols),
                                           _rank(language_of(s), LANGUAGE_ORDER), position[s]))


def library_of(subject: str) -> str:
    """"rest/go_nethttp" -> "nethttp" (the folder's library part)."""
    return subject.split("/")[-1].partition("_")[2] or subject


def protocol_language_grid(rows: dict[str, dict[str, Any]], subjects: Sequence[str],
                           protocol_of: Callable[[str], str], language_of: Callable[[str], str],
                           stat: str = "median") -> tuple[list[str], list[list[str]]]:
    """(head, body): one row per protocol, one column per language, the cell the
    `stat` (µs) of each implementation of that protocol in that language
    ("123 (gorilla) · 130 (coder)" when a language has several)."""
    present = [s for s in subjects if s in rows and s != "direct"]
    languages = sorted({language_of(s) for s in present}, key=lambda x: _rank(x, LANGUAGE_ORDER))
    protocols = list(dict.fromkeys(protocol_of(s) for s in present))
    body = []
    for protocol in protocols:
        row = [label(protocol)]
        for language in languages:
            mine = [s for s in present if protocol_of(s) == protocol and language_of(s) == language]
            cells = [f"{rows[s][stat]:,.0f}" + (f" ({library_of(s)})" if len(mine) > 1 else "") for s in mine]
            row.append(" · ".join(cells) or "–")
        body.append(row)
    return ["protocol", *(language_label(x) for x in languages)], body
