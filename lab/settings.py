"""Every knob the lab reads from the environment, in one place."""

from __future__ import annotations

import os
from pathlib import Path

from clients.protocols import PROTOCOLS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
MODES = ("native", "docker")
# The order of clients/protocols.py, the one place a protocol is described.
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
    return os.environ.get("LAB_HOST", "127.0.0.1")


def cache_dir() -> Path:
    base = os.environ.get("PROTOLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "protolab")
    return Path(base)


def mongodb_uri() -> str | None:
    return os.environ.get("MONGODB_URI") or None


# Seconds allowed for a database or service to become ready.
STARTUP_TIMEOUT = float(os.environ.get("LAB_STARTUP_TIMEOUT", "30"))
# Every network call of a client or health check.
CALL_TIMEOUT = 10.0
