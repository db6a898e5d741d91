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

    def implementation(self, name: str) -> Implementation:
        return next(i for i in self.implementations if i.name == name)

    def client(self, name: str) -> GameClient:
        """A new client of `name` ("rest/python_flask", ... or "direct"), connected."""
        if name == "direct":
            return connect("direct", self.database.uri)
        return connect(self.implementation(name).protocol, self.endpoints[name])

    def store(self) -> Store:
        return Store(self.database.uri)


def _start_native(impl: Implementation, db: Database, logs: Path) -> tuple[Process, str]:
    host = settings.host()
    for attempt in range(1, START_ATTEMPTS + 1):
        port = free_port(host)
        endpoint = impl.endpoint_for(host, port)
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
            if attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


@contextmanager
def running_lab(names: Sequence[str] | None = None, mode: str | None = None) -> Iterator[Lab]:
    mode = mode or settings.mode()
    if mode == "docker":
        from lab import compose  # Docker mode only: native runs never import it

        with compose.running_stack(names) as lab:
            yield lab
        return
    implementations = select(names)
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="protolab-logs-")))
        db = stack.enter_context(database())
        lab = Lab(mode=mode, database=db, implementations=implementations)
        for impl in implementations:  # builds are cached: only changed inputs rebuild
            impl.build(logs / f"{impl.name.replace('/', '-')}.build.log")
        for impl in implementations:
            process, endpoint = _start_native(impl, db, logs)
            stack.callback(process.stop)
            lab.endpoints[impl.name] = endpoint
            lab.pids[impl.name] = process.pid
        yield lab
