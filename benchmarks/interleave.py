"""Measure the subjects of one operation interleaved, so that a slow spell of
the machine lands on all of them alike.

    times = measure({"rest/python_flask": lambda: rest.get(i), "direct": ...},
                    Design(block=20, discard=3, blocks=15), seed=1)
    times["direct"]   # [seconds per timed call, ...] in the order taken

A *cycle* visits every subject once, in a fresh random order; a visit is a
*block*: `discard` untimed calls (they bring the subject's service, client
code and database path back into a warm state) then `block` timed calls.
`blocks` cycles give every subject blocks × block timed calls, spread over
the whole measurement. Design(block=1, discard=0) is per-call interleaving;
a single block of everything per subject is the old sequential design.

`after(subject, result)` runs after every call, untimed (the insert
benchmark deletes the document it just created, so every insert meets the
same empty collection).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Design:
    block: int = 20       # timed calls per visit
    discard: int = 3      # untimed calls at the start of each visit
    blocks: int = 15      # cycles: every subject is visited this many times
    warmup: int = 30      # untimed calls per subject before the first cycle

    @property
    def rounds(self) -> int:
        return self.block * self.blocks

    def describe(self) -> dict[str, Any]:
        return {"design": "interleaved blocks", "block": self.block, "discard": self.discard,
                "blocks": self.blocks, "warmup": self.warmup, "rounds": self.rounds,
                "order": "every cycle visits every subject once, in a fresh random order"}


def measure(calls: Mapping[str, Callable[[], Any]], design: Design, *, seed: int | None = None,
            after: Callable[[str, Any], None] | None = None,
            between: Callable[[str], None] | None = None) -> dict[str, list[float]]:
    """{subject: [seconds per timed call]}; `between(subject)` runs untimed after each visit."""
    rng = random.Random(seed)
    clock = time.perf_counter_ns
    times: dict[str, list[float]] = {name: [] for name in calls}

    def untimed(name: str, n: int) -> None:
        call = calls[name]
        for _ in range(n):
            result = call()
            if after is not None:
                after(name, result)

    for name in calls:
        untimed(name, design.warmup)
    order = list(calls)
    for _ in range(design.blocks):
        rng.shuffle(order)
        for name in order:
            untimed(name, design.discard)
            call, out = calls[name], times[name]
            for _ in range(design.block):
                start = clock()
                result = call()
                out.append((clock() - start) / 1e9)
                if after is not None:
                    after(name, result)
            if between is not None:
                between(name)
    return times


def sequential(calls: Mapping[str, Callable[[], Any]], rounds: int, warmup: int = 50, *,
               after: Callable[[str, Any], None] | None = None) -> dict[str, list[float]]:
    """The old design, for comparison: each subject's rounds in one block, one after another."""
    return measure(calls, Design(block=rounds, discard=warmup, blocks=1, warmup=0), seed=0, after=after)
