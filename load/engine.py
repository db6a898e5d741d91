"""One Locust run: a master and N worker processes (Locust's distributed
mode), or one local process (N = 0), on the generator's CPUs, the workers
optionally each in a network namespace; the merged result the master writes
(load/locustfile.py), and each process's CPU from the kernel's account.

    run = LocustRun(plan, workers=2, cpus={1}).start()
    ... (the caller samples the services' CPU meanwhile) ...
    run.wait(timeout=60)
    result = run.result()       # {"workers": [...], "locust_requests": ...}
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from lab.processes import free_port, terminate
from lab.settings import ROOT

LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"


def locust_version() -> str:
    return version("locust")


@dataclass
class Plan:
    """What every Locust process of a run is told (the locustfile's --lab-* options)."""
    implementation: str
    protocol: str
    endpoint: str
    operation: str = "fetch-one"
    model: str = "closed"
    users: int = 10
    rate: float = 0.0
    warmup_s: float = 0.5
    steady_s: float = 2.0
    duration_s: float = 3.0
    calls: int = 0
    timeout_s: float = 10.0
    connect_s: float = 10.0    # messaging: the window waits this long at most for every connection
    client_options: dict[str, Any] = field(default_factory=dict)  # what its variant sets on the client (lab/axes.py)
    share_connection: bool = False  # every user of a Locust process on one connection, a stream each (HTTP/2)

    def argv(self, result: Path) -> list[str]:
        return ["--lab-impl", self.implementation, "--lab-operation", self.operation,
                "--lab-model", self.model, "--lab-rate", f"{self.rate:g}",
                "--lab-warmup", f"{self.warmup_s:g}", "--lab-steady", f"{self.steady_s:g}",
                "--lab-duration", f"{self.duration_s:g}", "--lab-calls", str(self.calls),
                "--lab-timeout", f"{self.timeout_s:g}", "--lab-connect-s", f"{self.connect_s:g}",
                "--lab-result", str(result), *(["--lab-share-connection"] if self.share_connection else [])]

    def targets(self) -> str:
        target: dict[str, Any] = {"protocol": self.protocol, "endpoint": self.endpoint}
        if self.client_options:
            target["options"] = self.client_options
        return json.dumps({self.implementation: target})


def locust_command() -> list[str]:
    return [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path
    cpu_s: float | None = None
    rss_peak_bytes: int | None = None

    def poll(self) -> int | None:
        """Its exit code once it has exited (reaped with its CPU account), else None."""
        if self.popen.returncode is not None:
            return self.popen.returncode
        pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        if not pid:
            return None
        self.cpu_s = usage.ru_utime + usage.ru_stime
        self.rss_peak_bytes = usage.ru_maxrss * 1024  # KiB on Linux
        self.popen.returncode = os.waitstatus_to_exitcode(status)
        return self.popen.returncode

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class LocustRun:
    plan: Plan
    workers: int = 1                       # 0: one local process, no master
    cpus: set[int] | None = None           # taskset for every Locust process
    netns: list[tuple[str, str]] = field(default_factory=list)  # worker i: (namespace, the host address it dials)
    extra: list[str] = field(default_factory=list)                # more --lab-* options for every process
    processes: list[Process] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="protolab-locust-"))
        self.result_path = self.dir / "result.json"

    def _spawn(self, name: str, argv: list[str], netns: str | None = None, dial: str | None = None) -> Process:
        if self.cpus:
            argv = ["taskset", "-c", ",".join(map(str, sorted(self.cpus))), *argv]
        if netns:
            argv = ["ip", "netns", "exec", netns, *argv]
        env = {**os.environ, "LAB_LOAD_TARGETS": self.plan.targets(), "PYTHONUNBUFFERED": "1"}
        env.pop("LAB_LOAD_DIAL", None)
        if dial:
            env["LAB_LOAD_DIAL"] = dial
        log = self.dir / f"{name}.log"
        with open(log, "wb") as out:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=ROOT, start_new_session=True)
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def start(self) -> LocustRun:
        p = self.plan
        common = ["--headless", "-u", str(p.users), "-r", str(max(p.users, 1)), "--loglevel", "WARNING",
                  "--only-summary", "--stop-timeout", "0", "--exit-code-on-error", "0",
                  *p.argv(self.result_path), *self.extra]
        if self.workers == 0:
            self._spawn("locust", [*locust_command(), *common])
            return self
        bind = "*" if self.netns else "127.0.0.1"
        port = free_port()
        self._spawn("master", [*locust_command(), *common, "--master", "--expect-workers", str(self.workers),
                               "--master-bind-host", bind, "--master-bind-port", str(port)])
        for i in range(self.workers):
            namespace, dial = self.netns[i % len(self.netns)] if self.netns else (None, None)
            self._spawn(f"worker{i}", [*locust_command(), "--worker", "--master-host", dial or "127.0.0.1",
                                       "--master-port", str(port), "--loglevel", "WARNING"],
                        netns=namespace, dial=dial)
        return self

    @property
    def pids(self) -> dict[str, int]:
        """{"generator": pid} for one process, else {"generator:master": ..., "generator:worker0": ...}."""
        if len(self.processes) == 1:
            return {"generator": self.processes[0].popen.pid}
        return {f"generator:{p.name}": p.popen.pid for p in self.processes}

    def wait(self, timeout: float) -> None:
        """Until every process has exited (the master quits once it has written
        the result; its workers quit with it); past `timeout`, they are stopped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(p.poll() is not None for p in self.processes):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"Locust did not finish within {timeout:.0f} s:\n{self.failures() or self.logs()}")

    def stop(self) -> None:
        for p in self.processes:
            if p.popen.returncode is None:
                terminate(p.popen, grace=3.0, group=True)
                p.poll()

    def failures(self) -> str:
        bad = [p for p in self.processes if p.popen.returncode not in (0, None)]
        return "\n".join(f"{p.name} exited with {p.popen.returncode}:\n{p.tail()}" for p in bad)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.tail()}" for p in self.processes)

    def result(self) -> dict[str, Any]:
        if not self.result_path.exists():
            raise RuntimeError(f"Locust wrote no result:\n{self.logs()}")
        return json.loads(self.result_path.read_text())

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
