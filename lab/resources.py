"""CPU time and memory of the lab's processes, each with its threads and children.

    before = cpu_times({"rest/python_flask": pid, "database": db_pid})
    ... the timed work ...
    used = cpu_delta(before, cpu_times(...))        # {name: CPU seconds}

    with Sampler({"rest/python_flask": pid}) as sampler:   # 1 Hz, in a thread
        ... a load run ...
    sampler.summary()   # {name: {cpu_percent_mean, cpu_s, rss_max, rss_mean, samples}}

A process tree is its root and every descendant alive at the moment of the
reading, so gunicorn's workers and a Node.js or Go server's threads count.
In Docker mode the lab passes the containers' main processes as seen from
the host (docker inspect's State.Pid): their trees are the containers' work.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psutil


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process tree so far (children that have
    exited and been waited for are counted by their parent's children_* times)."""
    total = 0.0
    for proc in _tree(pid):
        try:
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def rss_bytes(pid: int) -> int:
    total = 0
    for proc in _tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def cpu_times(pids: dict[str, int]) -> dict[str, float]:
    """{name: CPU seconds so far}; this process is "client" unless named."""
    out = {name: cpu_seconds(pid) for name, pid in pids.items()}
    if "client" not in out:
        t = psutil.Process(os.getpid()).cpu_times()
        out["client"] = t.user + t.system
    return out


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: after[name] - before[name] for name in before if name in after}


class Sampler:
    """CPU % of one core and RSS of each named process tree, every `interval` s
    and once more at the end (so a run shorter than `interval`, or one whose
    sampling thread a loaded machine held back, still has a reading of each).
    A reading is taken under a lock, and none after the end's: a thread that
    outlived the join's timeout (JOIN_TIMEOUT) finishes its reading before the
    end's and takes no other."""

    JOIN_TIMEOUT = 5.0

    def __init__(self, pids: dict[str, int], interval: float = 1.0):
        self.pids = dict(pids)
        self.interval = interval
        self.samples: dict[str, list[tuple[float, float, int]]] = {n: [] for n in self.pids}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="protolab-sampler", daemon=True)
        self._start_cpu: dict[str, float] = {}
        self._last: dict[str, tuple[float, float]] = {}
        self._start = 0.0
        self.elapsed = 0.0
        self.cpu_s: dict[str, float] = {}

    def _sample(self) -> None:
        for name, pid in self.pids.items():
            now, cpu = time.monotonic(), cpu_seconds(pid)
            t0, c0 = self._last[name]
            percent = 100.0 * (cpu - c0) / (now - t0) if now > t0 else 0.0
            self.samples[name].append((now, percent, rss_bytes(pid)))
            self._last[name] = (now, cpu)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self._stop.is_set():
                    return
                self._sample()

    def __enter__(self) -> Sampler:
        self._start = time.monotonic()
        self._start_cpu = {n: cpu_seconds(p) for n, p in self.pids.items()}
        self._last = {n: (self._start, c) for n, c in self._start_cpu.items()}
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.JOIN_TIMEOUT)
        with self._lock:
            self._sample()
            self.elapsed = time.monotonic() - self._start
            self.cpu_s = {n: cpu_seconds(p) - self._start_cpu[n] for n, p in self.pids.items()}

    def summary(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, rows in self.samples.items():
            rss = [r for _, _, r in rows]
            out[name] = {
                "cpu_s": self.cpu_s.get(name, 0.0),
                "cpu_percent_mean": 100.0 * self.cpu_s.get(name, 0.0) / self.elapsed if self.elapsed else 0.0,
                "cpu_percent_max": max((p for _, p, _ in rows), default=0.0),
                "rss_max": max(rss, default=0), "rss_mean": sum(rss) / len(rss) if rss else 0,
                "samples": len(rows),
            }
        return out


def _thread_ns(pid: int) -> int:
    """Nanoseconds on CPU of every live thread of one process (/proc/<pid>/task/*/schedstat)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split(None, 1)[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


class CpuClock:
    """CPU nanoseconds of named process trees, cheap enough to read around
    every block of a benchmark: the trees' members are found once, and each
    reading sums the scheduler's own nanosecond counters of their threads
    (/proc/<pid>/task/<tid>/schedstat) instead of cpu_times' 10 ms ticks.
    "client" is this process (all its threads). A thread that exits between
    two readings takes its time with it: read around work, not across a
    restart."""

    def __init__(self, pids: dict[str, int]):
        self.members = {name: [p.pid for p in _tree(pid)] for name, pid in pids.items()}

    def read(self, *, closing: bool = False) -> dict[str, int]:
        """The client's own clock is read last when a window opens and first
        when it closes (closing=True), so the cost of reading /proc for the
        other trees never lands in the client's window."""
        client = time.process_time_ns() if closing else None
        out = {name: sum(_thread_ns(p) for p in procs) for name, procs in self.members.items()}
        out["client"] = client if client is not None else time.process_time_ns()
        return out
