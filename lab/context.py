"""What every result file says about the run that produced it."""

from __future__ import annotations

import datetime
import functools
import os
import platform
import subprocess
from importlib import metadata
from typing import Any

from clients.protocols import PROTOCOLS
from lab import interpreter, settings
from lab.axes import LOOPBACK, NetworkPath
from lab.database import Database
from lab.host import compose
from lab.registry import Implementation

# Every protocol's client packages (clients/<protocol>/__init__.py), the baseline's driver and the timer.
CLIENT_PACKAGES = (*dict.fromkeys(p for d in PROTOCOLS.values() for p in d.client_packages),
                   "pymongo", "pytest-benchmark")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@functools.cache
def git_commit() -> str:
    """The lab's commit, as first read in this process: a run reads it as it starts (the code it
    loaded), so a checkout that moves on during a long run does not relabel its results."""
    return _read_commit()


def _read_commit() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=settings.ROOT, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=settings.ROOT, capture_output=True, text=True, timeout=10).stdout
        return commit + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def host_context(**extra: Any) -> dict[str, Any]:
    """What a result file says about where and when it was made, for the results
    that do not run the lab's stack themselves (a summary of runs, a fault test)."""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": {"model": cpu_model(), "count": os.cpu_count()},
        "commit": git_commit(),
        **extra,
    }


def run_context(mode: str, database: Database, implementations: list[Implementation],
                docker: dict[str, Any] | None = None, path: NetworkPath = LOOPBACK,
                **extra: Any) -> dict[str, Any]:
    """`docker`: the Docker side of a docker-mode run (daemon settings, images);
    by default the running stack's own description (lab.host.compose). `path`: the
    network path the run's clients crossed (a run of several sites says them all)."""
    if docker is None and "docker" in mode.split("+"):   # a docker-mode run, or one beside native (native+docker)
        docker = compose.active_description()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "sites": [{"mode": mode, "path": path.describe()}] if "+" not in mode else [],
        "database": database.describe(),
        **({"docker": docker} if docker is not None else {}),
        "implementations": {
            i.name: {"protocol": i.protocol, "language": i.language, "library": i.library,
                     "server": i.server, "operations": list(i.operations),
                     # how it was started: the manifest's [run] command, with its runtime's flags
                     "command": list(i.command), "versions": i.versions(),
                     # what was tuned beyond the idiomatic code, and why (services/README.md)
                     **({"tuned": i.tuned} if i.tuned else {}),
                     # its subject: the folder it runs from and its variant's values (lab/axes.py)
                     "base": i.base, "variant": dict(i.values)}
            for i in implementations},
        "client_versions": {p: _version(p) for p in CLIENT_PACKAGES},
        "python": platform.python_version(),
        # The services' interpreter: in Docker mode the containers' (see "docker").
        "service_interpreter": (docker or {}).get("interpreter") or interpreter.probe(),
        "platform": platform.platform(),
        "cpu": {"model": cpu_model(), "count": os.cpu_count()},
        "commit": git_commit(),
        "settings": {"service_threads": settings.threads(), "service_processes": 1,
                     "host": settings.host(), **extra},
    }
