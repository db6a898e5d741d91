"""Services and database on one set of CPUs, the load generator on another,
so neither steals the other's cycles (recorded in every result).

With n ≥ 2 CPUs: the generator gets the last ⌊n/2⌋ (at least one), the
services and the database the rest. Fewer CPUs, or pinning turned off:
everything shares the machine, and the result says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Pinning:
    enabled: bool
    services: frozenset[int]
    generator: frozenset[int]

    def describe(self) -> dict[str, object]:
        return {"enabled": self.enabled, "services_and_database_cpus": sorted(self.services),
                "generator_cpus": sorted(self.generator), "how": "sched_setaffinity on every thread "
                "of each service and database process tree; taskset for every Locust process" if self.enabled else
                "off: every process may run on every CPU"}


def plan(enabled: bool = True) -> Pinning:
    cpus = sorted(os.sched_getaffinity(0))
    if not enabled or len(cpus) < 2:
        return Pinning(False, frozenset(cpus), frozenset(cpus))
    half = max(1, len(cpus) // 2)
    return Pinning(True, frozenset(cpus[:-half]), frozenset(cpus[-half:]))


def pin_tree(pid: int, cpus: frozenset[int]) -> int:
    """Every thread of a process and its descendants onto `cpus`; new threads
    inherit it. Returns how many threads were pinned."""
    pinned = 0
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for proc in procs:
        try:
            tids = [t.id for t in proc.threads()]
        except psutil.NoSuchProcess:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(tid, cpus)
                pinned += 1
            except (ProcessLookupError, PermissionError):
                pass
    return pinned
