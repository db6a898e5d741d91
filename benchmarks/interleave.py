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

The baseline subject (`direct`) is visited `baseline_visits` times per cycle,
each visit at its own random place in the cycle: it is the denominator of
every ratio, so its sampling error moves all of them at once, and it is the
cheapest subject to sample (see README, "How many cycles a ±3 % ratio needs").

Hooks run outside the timed windows: after every untimed call, and after
every block (the insert benchmark deletes what it created there, so every
block of inserts starts from the same empty collection).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Design:
    block: int = 1        # timed calls per visit
    discard: int = 1      # untimed calls at the start of each visit
    blocks: int = 300     # cycles: every subject is visited this many times
    warmup: int = 30      # untimed calls per subject before the first cycle, at least ...
    warmup_s: float = 0.0     # ... and then on until this many seconds of them have passed,
    warmup_max: int = 1000    # or this many calls (Node.js's V8 speeds up over its first ~500 calls)
    baseline: str = "direct"
    baseline_visits: int = 1  # visits of the baseline per cycle

    @property
    def rounds(self) -> int:
        return self.block * self.blocks

    def visits(self, subject: str) -> int:
        return self.baseline_visits if subject == self.baseline else 1

    def per_cycle(self, subjects: list[str]) -> dict[str, int]:
        """Timed rounds per cycle of each subject (the bootstrap's groups)."""
        return {s: self.block * self.visits(s) for s in subjects}

    def describe(self) -> dict[str, Any]:
        return {"design": "interleaved" if self.blocks > 1 else "sequential",
                "block": self.block, "discard": self.discard,
                "blocks": self.blocks, "warmup": self.warmup, "warmup_s": self.warmup_s,
                "warmup_max": self.warmup_max, "rounds": self.rounds,
                "baseline": self.baseline, "baseline_visits": self.baseline_visits,
                "baseline_rounds": self.rounds * self.baseline_visits,
                "order": "every cycle visits every subject once (the baseline baseline_visits times), "
                         "in a fresh random order"}


@dataclass
class Measurement:
    times: dict[str, list[float]]            # subject -> seconds per timed call, cycle-major
    cpu_ns: dict[str, dict[str, int]]        # subject -> process -> CPU ns over its timed windows
    wall_ns: dict[str, int]                  # subject -> wall ns of its timed windows


def measure(calls: Mapping[str, Callable[[], Any]], design: Design, *, seed: int | None = None,
            clocks: Mapping[str, Any] | None = None,
            after_untimed: Callable[[str, Any], None] | None = None,
            between: Callable[[str, list[Any]], None] | None = None) -> Measurement:
    """Run the design. `clocks[subject].read()` -> {process: CPU ns} is read just
    before the first and `.read(closing=True)` just after the last timed call of each block;
    `after_untimed(subject, result)` runs after every warm-up or discarded call,
    `between(subject, results)` after every block, both outside the windows."""
    rng = random.Random(seed)
    clock = time.perf_counter_ns
    times: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, dict[str, int]] = {name: {} for name in calls}
    wall: dict[str, int] = dict.fromkeys(calls, 0)

    def untimed(name: str, n: int) -> None:
        call = calls[name]
        for _ in range(n):
            result = call()
            if after_untimed is not None:
                after_untimed(name, result)

    for name in calls:
        ends, done = time.monotonic() + design.warmup_s, design.warmup
        untimed(name, design.warmup)
        while done < design.warmup_max and time.monotonic() < ends:
            untimed(name, 1)
            done += 1
    order = [name for name in calls for _ in range(design.visits(name))]
    for _ in range(design.blocks):
        rng.shuffle(order)
        for name in order:
            untimed(name, design.discard)
            call, out, results = calls[name], times[name], []
            meter = clocks.get(name) if clocks else None
            before = meter.read() if meter else None
            window = clock()
            for _ in range(design.block):
                start = clock()
                results.append(call())
                out.append((clock() - start) / 1e9)
            wall[name] += clock() - window
            if meter is not None and before is not None:
                after = meter.read(closing=True)
                for process, ns in after.items():
                    cpu[name][process] = cpu[name].get(process, 0) + ns - before.get(process, ns)
            if between is not None:
                between(name, results)
    return Measurement(times, cpu, wall)


def sequential(calls: Mapping[str, Callable[[], Any]], rounds: int, warmup: int = 50) -> dict[str, list[float]]:
    """The old design, for comparison: each subject's rounds in one block, one after another."""
    return measure(calls, Design(block=rounds, discard=warmup, blocks=1, warmup=0), seed=0).times
