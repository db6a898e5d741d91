"""A page of the report as a list of blocks: what every section builds, the
lab's own (report/) and the studies' (studies/<name>/report.py), which sit
below the report and so cannot import it; report/page.py writes a page out."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Heading:
    level: int
    text: str
    anchor: str = ""


@dataclass
class Para:
    text: str
    cls: str = ""


@dataclass
class Bullets:
    items: list[str]
    cls: str = ""


@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]
    caption: str = ""
    anchor: str = ""


@dataclass
class Figure:
    stem: str  # file name for the Markdown copy, and the element id
    svg: str
    caption: str


@dataclass
class Page:
    title: str
    blocks: list = field(default_factory=list)

    def add(self, *blocks: object) -> None:
        self.blocks.extend(blocks)


def svg(fig: Any, stem: str) -> str:
    """A matplotlib figure as SVG text, closed after."""
    import matplotlib.pyplot as plt  # the caller has drawn with it: already imported

    buf = io.StringIO()
    # Text as text (small, searchable) and ids salted per figure, so that
    # several inline SVGs on one page never share an id.
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": stem}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()
