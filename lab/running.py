"""The running lab, whichever mode started it (lab/stack.py natively, lab/host/compose.py
in Docker mode): its database, the implementations with their endpoints and
process ids, and clients and a store of its own for whoever holds it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clients import connect
from clients.base import GameClient
from lab.axes import LOOPBACK, NetworkPath, Site, parse_subject
from lab.database import Database
from lab.environment import client_options
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
    path: NetworkPath = LOOPBACK  # the network path between the lab's clients and it
    link: dict[str, Any] | None = None  # that path as set up and measured (lab.host.netpath Link.describe)
    # Docker mode: a service's container log, last lines (lab/host/compose.py); natively its process's log
    container_log: Callable[[str, int], str] | None = None

    @property
    def site(self) -> Site:
        return Site(self.mode, self.path)

    def implementation(self, name: str) -> Implementation:
        return next(i for i in self.implementations if i.name == name)

    def client(self, name: str, **options: Any) -> GameClient:
        """A new client of `name` ("rest/python_flask", ... or "direct"), connected, with
        what its variant sets on the client (lab/axes.py, Value.client: e.g. the compression
        it asks for); `options`: its protocol's client's own keywords, over those."""
        if name == "direct":
            return connect("direct", self.database.uri)
        impl = self.implementation(name)
        return connect(impl.protocol, self.endpoints[name], **{**client_options(impl), **options})

    def store(self) -> Store:
        """The lab's own access to the database (seeding, resets, checks of what is stored): not the
        subject, so it waits longer than a service (MONGODB_TIMEOUT_MS): in CI on 2026-11-26 a contended
        disk stalled the database past 5 s at 7 of 799 Docker-mode tests' resets and reads."""
        return Store(self.database.uri, timeout_ms=LAB_STORE_TIMEOUT_MS)

    def log_tail(self, name: str, lines: int = 30) -> str:
        """The last lines `name`'s server wrote (its process's log, or its container's), for a failing
        test's report: what the server said when its client timed out or was refused."""
        if name in self.processes:
            return self.processes[name].log_tail(lines)
        if self.container_log is not None and name in self.endpoints:
            return self.container_log(name, lines)
        return ""

    def exited(self) -> list[str]:
        """Each service the lab started that is no longer running: which, and why."""
        gone: list[str] = []
        if self.closing:
            return gone
        seen: set[int] = set()
        for name, process in self.processes.items():
            if id(process) in seen:  # one process serving several subjects (lab/registry.py, served_by)
                continue
            seen.add(id(process))
            status = process.popen.poll()
            if status is not None:
                why = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
                tail = process.log_tail(5)
                gone.append(f"{name} (pid {process.pid}) {why}" + (f"; its log ends:\n{tail}" if tail else ""))
        return gone


@dataclass
class Sites:
    """The labs of one run, one per site (a mode on a network path), and the subjects
    measured across them, by name: "rest/python_flask", "rest/python_flask@docker",
    "direct@rtt20ms" (lab/axes.py)."""
    labs: dict[Site, Lab]
    left_out: dict[Site, str] = field(default_factory=dict)   # a site this host could not run: why

    @classmethod
    def of(cls, lab: Lab) -> Sites:
        """The one site of `lab`."""
        return cls({lab.site: lab})

    @property
    def default(self) -> Lab:
        """The first site's lab: the one a run of a single site has."""
        return next(iter(self.labs.values()))

    def lab_of(self, subject: str) -> Lab:
        """The lab of `subject`'s site. A plain name (no "@") is native on loopback's, or, in a run
        without that site, the first site's: the tests name the subjects of a run of one site so
        (`make test-docker`: its only site is Docker's)."""
        _, site = parse_subject(subject)
        if "@" not in subject and site not in self.labs:
            return self.default
        try:
            return self.labs[site]
        except KeyError:
            raise KeyError(f"{subject}: its site ({site.name}) is not running in this run") from None

    def implementation_of(self, subject: str) -> Implementation | None:
        """The implementation behind `subject` (None for a site's `direct`)."""
        name, _ = parse_subject(subject)
        return None if name == "direct" else self.lab_of(subject).implementation(name)

    def client(self, subject: str, **options: Any) -> GameClient:
        name, _ = parse_subject(subject)
        return self.lab_of(subject).client(name, **options)

    def pid(self, subject: str) -> int | None:
        name, _ = parse_subject(subject)
        return self.lab_of(subject).pids.get(name)

    def subjects(self, serving: Any = None) -> list[str]:
        """Every implementation at every site (those `serving(impl)` accepts), then each site's `direct`."""
        out = []
        for site, lab in self.labs.items():
            out += [site.subject(i.name) for i in lab.implementations if serving is None or serving(i)]
        return out + [site.subject("direct") for site in self.labs]
