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
from contextlib import ExitStack
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: if the lab itself is killed outright
    (SIGKILL, a crashed runner), the kernel sends the child SIGTERM, so
    nothing the lab started outlives it."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` ports free now and distinct from one another: each stays bound
    until all are chosen (one at a time, the kernel may hand a just-released
    port out again, and two services started together then race for it)."""
    with ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket())
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


def tcp_sockets(pid: int, port: int, status: str) -> int:
    """The process's and its children's TCP sockets on local `port` in
    `status` (psutil.CONN_LISTEN, CONN_ESTABLISHED, ...)."""
    import psutil  # not at the top: `make db` imports this module before .venv has psutil
    try:
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    count = 0
    for proc in tree:
        try:
            count += sum(1 for c in proc.net_connections(kind="tcp")
                         if c.status == status and c.laddr and c.laddr.port == port)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return count


def listens_on(pid: int, port: int) -> bool:
    """Whether the process or one of its children listens on TCP `port` (a
    service that lost its port to another process may still look healthy
    for a moment: the other one answers)."""
    return tcp_sockets(pid, port, "LISTEN") > 0  # psutil.CONN_LISTEN


class ProcessFailed(RuntimeError):
    pass


class Process:
    def __init__(self, name: str, argv: Sequence[str], log_path: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None, inherit: bool = True):
        """`env` over the lab's own environment, or (`inherit` False) the whole environment."""
        self.name = name
        self.log_path = log_path
        log = open(log_path, "wb")
        try:
            self.popen = subprocess.Popen(
                list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**(os.environ if inherit else {}), **(env or {})}, cwd=cwd, start_new_session=True,
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
