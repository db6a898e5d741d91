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
cheapest subject to sample (see benchmarks/README.md, "How many cycles a ±3 % ratio needs").

Before the measured cycles every subject gets untimed warm-up calls, all
subjects at the same time, one thread each (warm_up): `warmup` each, or the
number its manifest asks for (`[bench] warmup_calls`: the Node.js services
ask for 6,000, since V8 keeps speeding them up for about 5,000 fetch-one
calls here), at most `warmup_max_s` seconds of its share of the time. Then
`settle_cycles` untimed cycles exactly like the measured ones. Both are
counted in calls, not seconds, so every run gives every subject the same
history whatever the machine's speed that hour (a runtime that tiers up or
resizes its heap by what it has executed reaches the same state). An
earlier rule settled by time (untimed cycles until no ratio to the baseline
still fell by 2 % a 20 s window): it settled runs for different lengths and
so left Node.js services at different points of their speed-up (README,
"Warmed by count, not by time").

Hooks run outside the timed windows: after every untimed call, and after
every block (the insert benchmark deletes what it created there, so every
block of inserts starts from the same empty collection).

Through the measured cycles the process's objects from before are frozen
(gc.freeze()), so CPython's full collections do not walk the whole harness
inside some subject's timed call; what the collector did meanwhile is
recorded (GcRecord).
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.axes import parse_subject
from lab.workload import untimed_calls


@dataclass(frozen=True)
class Design:
    block: int = 1        # timed calls per visit
    discard: int = 1      # untimed calls at the start of each visit
    blocks: int = 300     # cycles: every subject is visited this many times
    warmup: int = 30      # untimed calls per subject before anything else (a subject's own count overrides it)
    warmup_max_s: float = 45.0     # ... but at most this long per subject
    warmup_lanes: int = 4          # ... at most this many warm-up calls in flight (warm_up)
    settle_cycles: int = 0         # then this many untimed cycles
    baseline: str = "direct"
    baseline_visits: int = 1  # visits of the baseline per cycle
    max_seconds: float | None = None   # measured cycles stop after the one that ends past this (None: all blocks)
    min_blocks: int = 20      # ... but not before this many (the fewest a paired bootstrap interval is read from)

    @property
    def rounds(self) -> int:
        return self.block * self.blocks

    def visits(self, subject: str) -> int:
        """Every site's baseline ("direct", "direct@docker") is visited baseline_visits times a cycle."""
        return self.baseline_visits if parse_subject(subject)[0] == self.baseline else 1

    def per_cycle(self, subjects: list[str]) -> dict[str, int]:
        """Timed rounds per cycle of each subject (the bootstrap's groups)."""
        return {s: self.block * self.visits(s) for s in subjects}

    def describe(self) -> dict[str, Any]:
        return {"design": "interleaved" if self.blocks > 1 else "sequential",
                "block": self.block, "discard": self.discard,
                "blocks": self.blocks, "warmup": self.warmup, "warmup_max_s": self.warmup_max_s,
                "warmup_lanes": self.warmup_lanes,
                "settle_cycles": self.settle_cycles,
                "rounds": self.rounds,
                "baseline": self.baseline, "baseline_visits": self.baseline_visits,
                "max_seconds": self.max_seconds,
                "baseline_rounds": self.rounds * self.baseline_visits,
                "order": f"every cycle visits every subject once (the baseline {self.baseline_visits} times), "
                         "in a fresh random order"}


@dataclass
class Measurement:
    times: dict[str, list[float]]            # subject -> seconds per timed call, cycle-major
    cpu_ns: dict[str, dict[str, int]]        # subject -> process -> CPU ns over its timed windows
    wall_ns: dict[str, int]                  # subject -> wall ns of its timed windows
    settle: dict[str, Any] = field(default_factory=dict)  # before the measured cycles: warm-up and settle cycles
    gc: dict[str, Any] = field(default_factory=dict)      # the client's garbage collection while measured (GcRecord)
    cycles: int = 0                                       # measured (fewer than design.blocks: stopped at a look)
    # how the measured cycles ended: stopped_at (= cycles), cap (design.blocks), their seconds, and stopped_by
    # ("cycles": the cap; "the sequential rule"; "time budget (N s)"). The suite adds the rule's looks to it:
    # one record, context.settings.benchmark.stopping (lab/schemas/latency.schema.json)
    stopped: dict[str, Any] = field(default_factory=dict)


class GcRecord:
    """This process's garbage collections while the cycles are measured: how many
    of each generation, their time, and how much of it fell inside timed calls.

    Before the measured cycles measure() collects and freezes every object the
    process holds (gc.freeze(): pytest, every client, the dataset; ~220,000
    objects), so a full collection walks only what was made since, and
    unfreezes them after: full collections of the whole harness took ~210 ms
    each and landed inside timed calls (figures: README, "The client's garbage
    collector"). A client's own garbage is still collected inside its calls,
    as in any client."""

    def __init__(self) -> None:
        self.collections = [0, 0, 0]
        self.ns = 0
        self.timed_ns = 0
        self.largest_ns = 0
        self.timing = False  # inside a timed call now
        self.frozen = 0
        self._start = 0
        self._timed_start = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start, self._timed_start = time.perf_counter_ns(), self.timing
            return
        took = time.perf_counter_ns() - self._start
        self.collections[info["generation"]] += 1
        self.ns += took
        self.largest_ns = max(self.largest_ns, took)
        if self._timed_start:
            self.timed_ns += took

    def __enter__(self) -> GcRecord:
        gc.collect()
        gc.freeze()
        self.frozen = gc.get_freeze_count()
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)
        gc.unfreeze()

    def describe(self) -> dict[str, Any]:
        # to the µs: one collection on a frozen heap can take less than one
        return {"frozen_objects": self.frozen, "collections": list(self.collections),
                "ms": round(self.ns / 1e6, 3), "in_timed_calls_ms": round(self.timed_ns / 1e6, 3),
                "largest_ms": round(self.largest_ns / 1e6, 3)}


def warm_up(calls: Mapping[str, Callable[[], Any]], asked: Mapping[str, int], max_s: float | None,
            untimed: Callable[[str, int], int], lanes: int = 4) -> dict[str, dict[str, Any]]:
    """Every subject's warm-up calls at the same time, in at most `lanes` threads that
    take the subjects in turn (one call of the next subject not being called, then the
    next), so no subject sits idle while another warms and at most `lanes` calls are in
    flight; a subject's own calls stay one after another, as measured. A subject stops at
    its count or when it has used up `max_s` of its share of the time: a call's wall time
    divided by the number of calls in flight while it ran (so a limit means what it meant
    when the subjects took turns). {subject: {calls, asked, seconds (its share), wall}}.

    At the same time, not in turn: warmed one after another, a Node.js service warmed
    earlier read 2-7 % slower than the same service warmed later (methodology.md,
    "Warmed by count, not by time"), so no subject may sit idle for minutes while the
    others warm; until 2026-12-03 they went round-robin, one call of each in turn, and
    the whole warm-up waited on the sum of every call: the Node.js services' 6,000 calls
    each, one at a time, ~109 s of insert's first table. In threads, a subject's calls
    overlap the others' (the services are other processes, the client waits on sockets
    with the GIL released). Bounded, not a thread per subject: 45 subjects' fetch-100
    warm-ups at once kept 45 list queries in the one database and one waited past the
    client's 5 s deadline (2026-12-03, 13:32 UTC), which stopped the whole operation.
    LAB_BENCH_WARMUP_LANES sets `lanes` (4: the two cores' services and database kept busy,
    the database never queued deeper than that)."""
    import threading
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    warmed = {name: {"calls": 0, "asked": asked[name], "seconds": 0.0, "wall": 0.0} for name in calls}
    lock = threading.Lock()
    active = [0]
    halt = threading.Event()  # set when one subject failed or the run is interrupted (Ctrl-C): the others stop
    waiting = deque(name for name in calls if asked[name] > 0)  # subjects whose next call no lane is making
    began = time.monotonic()

    def lane() -> None:
        while not halt.is_set():
            with lock:
                if not waiting:
                    return  # every subject left is being called by another lane, or done
                name = waiting.popleft()
                active[0] += 1
                sharing = active[0]
            row = warmed[name]
            started = time.monotonic()
            try:
                untimed(name, 1)
            except BaseException:
                halt.set()
                raise
            finally:
                with lock:
                    sharing = max(sharing, active[0])  # the busiest the call saw, at its start or end
                    active[0] -= 1
            row["calls"] += 1
            row["seconds"] += (time.monotonic() - started) / sharing
            done = row["calls"] >= asked[name] or (max_s is not None and row["seconds"] >= max_s)
            with lock:
                if done:
                    row["wall"] = time.monotonic() - began
                else:
                    waiting.append(name)

    count = min(max(1, lanes), len(waiting))
    if count:
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix="warm-up") as pool:
            try:
                for future in [pool.submit(lane) for _ in range(count)]:
                    future.result()  # a subject's failure stops the run, as any call's does
            except BaseException:  # that failure, or Ctrl-C in this thread: every lane ends after its call
                halt.set()
                raise
    for row in warmed.values():
        row["seconds"], row["wall"] = round(row["seconds"], 1), round(row["wall"], 1)
    return warmed


def measure(calls: Mapping[str, Callable[[], Any]], design: Design, *, seed: int | None = None,
            clocks: Mapping[str, Any] | None = None,
            after_untimed: Callable[[str, Any], None] | None = None,
            between: Callable[[str, list[Any]], None] | None = None,
            warmup: Mapping[str, int] | None = None,
            progress: Callable[[str], None] | None = None, progress_s: float = 60.0,
            looks: Sequence[int] = (), look: Callable[[dict[str, list[float]], int], bool] | None = None
            ) -> Measurement:
    """Run the design. `clocks[subject].read()` -> {process: CPU ns} is read just
    before the first and `.read(closing=True)` just after the last timed call of each block;
    `after_untimed(subject, result)` runs after every warm-up or discarded call,
    `between(subject, results)` after every block (settling ones too), both outside the windows;
    `warmup[subject]` replaces design.warmup for that subject; `progress(text)`,
    between cycles, says how far the run is: when warm and settled, then at
    most every `progress_s` seconds (a slow machine's fetch-100 takes most of an
    hour: a silent terminal looks hung). `look(times, cycles)` is called after each
    cycle count in `looks` (outside every timed window, the machine idle meanwhile);
    when it returns True the measurement ends there (lab.stats.sequential decides);
    Measurement.cycles says how many cycles were measured."""
    rng = random.Random(seed)
    clock = time.perf_counter_ns
    times: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, dict[str, int]] = {name: {} for name in calls}
    wall: dict[str, int] = dict.fromkeys(calls, 0)

    def untimed(name: str, n: int) -> int:
        after = None if after_untimed is None else lambda result: after_untimed(name, result)
        return untimed_calls(calls[name], n, after=after)

    order = [name for name in calls for _ in range(design.visits(name))]
    record = GcRecord()  # the client's collections while measured (frozen heap: GcRecord)

    def cycle(measured: bool) -> dict[str, list[float]]:
        """One cycle; {subject: seconds of its timed calls in it}."""
        rng.shuffle(order)
        took: dict[str, list[float]] = {name: [] for name in calls}
        for name in order:
            untimed(name, design.discard)
            call, out, results = calls[name], took[name], []
            meter = clocks.get(name) if clocks and measured else None
            before = meter.read() if meter else None
            record.timing = measured
            window = clock()
            for _ in range(design.block):
                start = clock()
                results.append(call())
                out.append((clock() - start) / 1e9)
            if measured:
                wall[name] += clock() - window
            record.timing = False
            if meter is not None and before is not None:
                after = meter.read(closing=True)
                for process, ns in after.items():
                    cpu[name][process] = cpu[name].get(process, 0) + ns - before.get(process, ns)
            if between is not None:
                between(name, results)
        return took

    started = time.monotonic()
    warmed = warm_up(calls, {name: (warmup or {}).get(name, design.warmup) for name in calls},
                     design.warmup_max_s, untimed, design.warmup_lanes)
    warm_s = round(time.monotonic() - started, 1)
    started = time.monotonic()
    for _ in range(design.settle_cycles):
        cycle(False)
    settle = {"cycles": design.settle_cycles, "seconds": round(time.monotonic() - started, 1), "warmup": warmed,
              "warmup_s": warm_s}
    if progress is not None:
        progress(f"warmed up in {warm_s:.0f} s and settled in "
                 f"{settle['seconds']:.0f} s; measuring {design.blocks} cycles"
                 + (f" at most, looking at {', '.join(map(str, looks))}" if look is not None and looks else ""))
    started = last = time.monotonic()
    stopped_by, done = "cycles", 0
    stops = set(looks)
    with record:
        for done in range(1, design.blocks + 1):
            for name, took in cycle(measured=True).items():
                times[name] += took
            if look is not None and done in stops:
                record.timing = False
                if look(times, done):
                    if done < design.blocks:   # a look at the cap stops where the cycles would have
                        stopped_by = "the sequential rule"
                    break
            now = time.monotonic()
            if (design.max_seconds is not None and now - started >= design.max_seconds
                    and design.min_blocks <= done < design.blocks):
                # A time budget: when to stop does not depend on what was measured, so the
                # cycles kept are an unbiased sample (fewer of them: wider intervals, which say so)
                stopped_by = f"time budget ({design.max_seconds:g} s)"
                break
            if progress is not None and now - last >= progress_s and done < design.blocks:
                last = now
                progress(f"{done} of at most {design.blocks} cycles in {now - started:.0f} s, "
                         f"about {(now - started) / done * (design.blocks - done):.0f} s left at most")
    stopped = {"stopped_at": done, "cap": design.blocks, "seconds": round(time.monotonic() - started, 1),
               "stopped_by": stopped_by}
    if progress is not None and stopped_by not in ("cycles", "the sequential rule"):
        progress(f"stopped by its {stopped_by} after {done} of {design.blocks} cycles")
    return Measurement(times, cpu, wall, settle, record.describe(), cycles=done, stopped=stopped)


def sequential(calls: Mapping[str, Callable[[], Any]], rounds: int, warmup: int = 50) -> dict[str, list[float]]:
    """The old design, for comparison: each subject's rounds in one block, one after another."""
    return measure(calls, Design(block=rounds, discard=warmup, blocks=1, warmup=0), seed=0).times
