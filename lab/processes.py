"""Start, watch and stop the lab's processes, by their process id.

Each process runs in its own session, so stopping it (SIGTERM to its process
group, SIGKILL after a grace period) takes its children (gunicorn's workers)
along and nothing else on the machine.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: if the lab itself is killed outright
    (SIGKILL, a crashed runner), the kernel sends the child SIGTERM, so
    nothing the lab started outlives it."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class ProcessFailed(RuntimeError):
    pass


class Process:
    def __init__(self, name: str, argv: Sequence[str], log_path: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None):
        self.name = name
        self.log_path = log_path
        log = open(log_path, "wb")
        try:
            self.popen = subprocess.Popen(
                list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True,
                preexec_fn=die_with_parent)
        finally:
            log.close()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_until(self, ready: Callable[[], object], timeout: float, what: str) -> object:
        """Poll ready() until it returns a truthy value without raising."""
        deadline = time.monotonic() + timeout
        last: BaseException | None = None
        delay = 0.01
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise ProcessFailed(
                    f"{self.name} exited with status {self.popen.returncode} before {what}:\n"
                    f"{self.log_tail()}")
            try:
                value = ready()
                if value:
                    return value
            except Exception as exc:  # not ready yet; keep the reason for the report
                last = exc
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        self.stop()
        raise ProcessFailed(
            f"{self.name} not {what} within {timeout:.0f} s (last error: {last!r}):\n{self.log_tail()}")

    def stop(self, grace: float = 5.0) -> None:
        terminate(self.popen, grace, group=True)


def terminate(popen: subprocess.Popen, grace: float = 5.0, *, group: bool = False) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds. With
    `group`, to the process group it leads: its children too, also those that
    outlived it."""
    def send(sig: signal.Signals) -> None:
        try:
            if group:
                os.killpg(popen.pid, sig)
            else:
                popen.send_signal(sig)
        except ProcessLookupError:
            pass
    if popen.poll() is None:
        send(signal.SIGTERM)
        try:
            popen.wait(grace)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            popen.wait(grace)
    if group:
        send(signal.SIGKILL)
