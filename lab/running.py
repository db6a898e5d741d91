"""The running lab, whichever mode started it (lab/stack.py natively, lab/host/compose.py
in Docker mode): its database, the implementations with their endpoints and
process ids, and clients and a store of its own for whoever holds it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clients import connect
from clients.base import GameClient
from lab.database import Database
from lab.processes import Process
from lab.registry import Implementation
from services.common.store import Store

LAB_STORE_TIMEOUT_MS = 60_000  # the lab's own database operations (Lab.store)


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

    def client(self, name: str, **options: Any) -> GameClient:
        """A new client of `name` ("rest/python_flask", ... or "direct"), connected;
        `options`: its protocol's client's own keywords."""
        if name == "direct":
            return connect("direct", self.database.uri)
        return connect(self.implementation(name).protocol, self.endpoints[name], **options)

    def store(self) -> Store:
        """The lab's own access to the database (seeding, resets, checks of what is stored): not the
        subject, so it waits longer than a service (MONGODB_TIMEOUT_MS): in CI on 2026-11-26 a contended
        disk stalled the database past 5 s at 7 of 799 Docker-mode tests' resets and reads."""
        return Store(self.database.uri, timeout_ms=LAB_STORE_TIMEOUT_MS)

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
