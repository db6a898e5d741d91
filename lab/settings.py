"""Every knob the lab reads from the environment, in one place."""

from __future__ import annotations

import os
from pathlib import Path

from clients.base import CALL_TIMEOUT as BASE_CALL_TIMEOUT
from clients.protocols import PROTOCOLS

ROOT = Path(__file__).resolve().parent.parent
# Where the instruments write (LAB_RESULTS; default results/): make reference gives each run its own
# folder, results/reference/<run>/, so that nothing of an earlier run is read as this one's.
RESULTS = Path(os.environ["LAB_RESULTS"]).resolve() if os.environ.get("LAB_RESULTS") else ROOT / "results"
MODES = ("native", "docker")
RUN_COMMAND = {"native": "make bench", "docker": "make bench-docker"}  # what measures each mode
# The order of clients/<protocol>/__init__.py, the one place a protocol is described.
PROTOCOL_ORDER = tuple(PROTOCOLS)


def mode() -> str:
    value = os.environ.get("LAB_MODE", "native")
    if value not in MODES:
        raise SystemExit(f"LAB_MODE={value!r}: expected one of {', '.join(MODES)}")
    return value


def threads() -> int:
    """Worker threads of every service: one process each, the same budget for all."""
    return int(os.environ.get("LAB_THREADS", "4"))


def host() -> str:
    """The address services bind (LAB_HOST), e.g. 0.0.0.0 for every interface."""
    return os.environ.get("LAB_HOST", "127.0.0.1")


def dial_host() -> str:
    """The address clients dial and endpoints name (LAB_DIAL_HOST): by default
    the bound one, or loopback when that is a wildcard."""
    bound = host()
    return os.environ.get("LAB_DIAL_HOST") or ("127.0.0.1" if bound in ("0.0.0.0", "::", "") else bound)


def only() -> list[str]:
    """LAB_ONLY: a comma list of subjects' implementations ("rest/go_nethttp,ws/go_gorilla"):
    the test and latency runs generate tests for these alone (empty: every one)."""
    return [n.strip() for n in os.environ.get("LAB_ONLY", "").split(",") if n.strip()]


def port_base() -> int | None:
    """LAB_PORT_BASE=N: fixed ports, the database on N and each service on N +
    its manifest's port_offset; unset: free ports chosen at run time."""
    value = os.environ.get("LAB_PORT_BASE")
    return int(value) if value else None


def cache_dir() -> Path:
    base = os.environ.get("PROTOLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "protolab")
    return Path(base)


def change_streams() -> bool:
    """The embedded database in replica-set mode, so the push feed `changes` works
    (lab/database.py). The test suite turns it on; measurements leave it off."""
    return os.environ.get("LAB_CHANGE_STREAMS", "0") == "1"


def db_sync_on_commit() -> bool:
    """The embedded database fsyncs its log at every commit (LAB_DB_SYNC_ON_COMMIT=0: not)."""
    return os.environ.get("LAB_DB_SYNC_ON_COMMIT", "1") != "0"


# Where the embedded database keeps its files when LAB_DB_IN_MEMORY=1: a RAM file system.
MEMORY_DIR = Path("/dev/shm")


def db_in_memory() -> bool:
    """The embedded database keeps its files in memory (LAB_DB_IN_MEMORY=1): natively in a
    directory on MEMORY_DIR (a tmpfs), in Docker mode on a tmpfs mount of its container.
    Otherwise on the disk (the system's temporary directory; the container's volume)."""
    return os.environ.get("LAB_DB_IN_MEMORY", "0") == "1"


def testing() -> None:
    """Settings of the test suite, unless set by the user: the embedded database keeps its
    files in memory. The tests check behaviour, not the disk, and on a contended host disk
    the database's fsyncs stall: with a neighbour writing 8 GB, resetting the seeded
    collection took up to 4.5 s on the disk and at most 0.11 s in memory (fsync at every
    commit in both; README, "The database"), and in CI on 2026-11-27 one reset or read
    stalled past the lab's 60 s. Measurements keep the disk."""
    os.environ.setdefault("LAB_DB_IN_MEMORY", "1")


def measuring() -> None:
    """Settings of a measurement (make bench, make load), unless set by the user:
    the embedded database does not fsync at every commit. A fsync per insert
    (median 1.3 -> 5.1 ms per direct insert here) would swamp the protocols'
    differences, and MongoDB's own default (w:1, journal committed every
    100 ms) does not wait for it either. Every result records the setting
    (context.database.durability); tests and `protolab serve` keep it on."""
    os.environ.setdefault("LAB_DB_SYNC_ON_COMMIT", "0")


def mongodb_uri() -> str | None:
    return os.environ.get("MONGODB_URI") or None


# Seconds allowed for a database or service to become ready.
STARTUP_TIMEOUT = float(os.environ.get("LAB_STARTUP_TIMEOUT", "30"))
# Every network call of a client or health check: the clients' own default (clients/base.py).
CALL_TIMEOUT = BASE_CALL_TIMEOUT
