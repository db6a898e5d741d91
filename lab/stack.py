"""Bring the whole lab up — database and services — and down again.

    with running_lab() as lab:
        client = lab.client("rest/python_flask")

Everything started here is stopped on the way out, by process id, whatever
happened inside the block.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from clients import check_health, connect
from clients.base import GameClient
from lab import settings
from lab.database import Database, database
from lab.processes import Process, ProcessFailed, free_port
from lab.registry import Implementation, select
from services.common.store import Store

START_ATTEMPTS = 3  # a free port can be taken by someone else before we bind it


@dataclass
class Lab:
    mode: str
    database: Database
    implementations: list[Implementation]
    endpoints: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    processes: dict[str, Process] = field(default_factory=dict)  # native mode: what the lab started
    closing: bool = False  # set as the lab stops what it started

    def implementation(self, name: str) -> Implementation:
        return next(i for i in self.implementations if i.name == name)

    def client(self, name: str) -> GameClient:
        """A new client of `name` ("rest/python_flask", ... or "direct"), connected."""
        if name == "direct":
            return connect("direct", self.database.uri)
        return connect(self.implementation(name).protocol, self.endpoints[name])

    def store(self) -> Store:
        return Store(self.database.uri)

    def exited(self) -> list[str]:
        """Each service the lab started that is no longer running: which, and why."""
        gone: list[str] = []
        if self.closing:
            return gone
        for name, process in self.processes.items():
            status = process.popen.poll()
            if status is not None:
                why = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
                tail = process.log_tail(5)
                gone.append(f"{name} (pid {process.pid}) {why}" + (f"; its log ends:\n{tail}" if tail else ""))
        return gone


def _start_native(impl: Implementation, db: Database, logs: Path, fixed_port: int | None = None
                  ) -> tuple[Process, str]:
    host = settings.host()
    attempts = 1 if fixed_port else START_ATTEMPTS
    for attempt in range(1, attempts + 1):
        port = fixed_port or free_port(host)
        endpoint = impl.endpoint_for(settings.dial_host(), port)
        process = Process(
            impl.name, impl.argv(), logs / f"{impl.name.replace('/', '-')}.log",
            env={"PORT": str(port), "HOST": host, "MONGODB_URI": db.uri, **impl.env()},
            cwd=settings.ROOT)
        try:
            process.wait_until(lambda e=endpoint: check_health(impl.protocol, e) or True,
                               settings.STARTUP_TIMEOUT, "healthy")
            return process, endpoint
        except ProcessFailed:
            process.stop()
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


@contextmanager
def running_lab(names: Sequence[str] | None = None, mode: str | None = None,
                change_streams: bool | None = None) -> Iterator[Lab]:
    mode = mode or settings.mode()
    if mode == "docker":
        from lab import compose  # Docker mode only: native runs never import it

        with compose.running_stack(names, change_streams) as lab:
            yield lab
        return
    implementations = select(names)
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="protolab-logs-")))
        db = stack.enter_context(database(change_streams))
        lab = Lab(mode=mode, database=db, implementations=implementations)
        for impl in implementations:  # builds are cached: only changed inputs rebuild
            impl.build(logs / f"{impl.name.replace('/', '-')}.build.log")
        base = settings.port_base()
        for position, impl in enumerate(implementations):
            fixed = base + impl.port_offset(position) if base else None
            process, endpoint = _start_native(impl, db, logs, fixed)
            stack.callback(process.stop)
            lab.endpoints[impl.name] = endpoint
            lab.pids[impl.name] = process.pid
            lab.processes[impl.name] = process
        stack.callback(setattr, lab, "closing", True)  # runs first on the way out
        yield lab
