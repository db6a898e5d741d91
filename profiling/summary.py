"""A profile in numbers: the top frames by self-CPU share and the split into
categories (profiling/categories.toml, one table per language)."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from profiling.fold import Stacks

CATEGORIES_FILE = Path(__file__).with_name("categories.toml")
OTHER = "other"
CATEGORY_ORDER = ("protocol library", "encoding", "database driver", "contract checks", "runtime",
                  "the lab's own code", "database server", OTHER)
TOP = 5


@cache
def table(language: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(category, one regex of its patterns), in the order the table writes them."""
    data = tomllib.loads(CATEGORIES_FILE.read_text())[language]
    return tuple((category, re.compile("|".join(f"(?:{p})" for p in patterns))) for category, patterns in data.items())


def category(frames: list[str], language: str) -> str:
    """The category of a stack (root first): its first frame from the leaf that a pattern matches."""
    rules = table(language)
    for frame in reversed(frames):
        for name, pattern in rules:
            if pattern.search(frame):
                return name
    return OTHER


def summarize(stacks: Stacks, language: str, top: int = TOP) -> dict[str, Any]:
    total = sum(stacks.values())
    self_time: Counter = Counter()
    split: Counter = Counter()
    leaf_split: dict[str, Counter] = {}  # a leaf's samples by their stacks' category
    for stack, n in stacks.items():
        frames = stack.split(";")
        name = category(frames, language)
        self_time[frames[-1]] += n
        split[name] += n
        leaf_split.setdefault(frames[-1], Counter())[name] += n
    share = (lambda n: round(n / total, 4)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "top": [{"frame": frame, "self_share": share(n), "category": leaf_split[frame].most_common(1)[0][0]}
                for frame, n in self_time.most_common(top)],
        "categories": {c: share(split[c]) for c in CATEGORY_ORDER if split[c]},
    }
