"""Bring the whole lab up — database and services — and down again.

    with running_lab() as lab:
        client = lab.client("rest/python_flask")

Everything started here is stopped on the way out, by process id, whatever
happened inside the block.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from clients import check_health
from lab import settings
from lab.axes import LOOPBACK, NetworkPath, Site
from lab.build import build_all
from lab.database import Database, database
from lab.environment import client_options, native_environment
from lab.host import compose, dockerd
from lab.processes import Process, ProcessFailed, free_ports, listens_on
from lab.registry import Implementation, select, services_of
from lab.running import Lab, Sites  # defined apart so that Docker mode (lab.host.compose) makes one too

START_ATTEMPTS = 3  # a free port can be taken by someone else before we bind it


@dataclass(frozen=True)
class Where:
    """Where a native site's services bind and are dialled, and the argv prefix that
    runs a process there (inside a network path's namespace, or as it is)."""
    host: str
    dial_host: str
    prefix: tuple[str, ...] = ()

    @property
    def namespaced(self) -> bool:
        return bool(self.prefix)


def _here() -> Where:
    return Where(settings.host(), settings.dial_host())


# Inside a path's namespace (ours, empty) the services take ports from here.
NAMESPACE_PORTS = 20000


def _launch(impl: Implementation, db: Database, logs: Path, port: int, where: Where) -> tuple[Process, str]:
    process = Process(
        impl.name, [*where.prefix, *impl.argv()], logs / f"{impl.name.replace('/', '-').replace('+', '-')}.log",
        env=native_environment(impl, host=where.host, port=port, mongodb_uri=db.uri), inherit=False,
        cwd=settings.ROOT)
    return process, impl.endpoint_for(where.dial_host, port)


def _start_native(implementations: Sequence[Implementation], db: Database, logs: Path,
                  fixed_ports: Sequence[int | None], owned: list[Process],
                  where: Where | None = None) -> dict[str, tuple[Process, str]]:
    """Start every implementation at once and wait for them side by side (a
    service's start is mostly its own imports and one health call). Every
    process launched is appended to `owned` at once, for the caller to stop.
    One that failed (its free port taken by someone else before it bound it)
    is started again on another port."""
    where = where or _here()
    if where.namespaced:  # the namespace is the lab's own and empty: no one else takes a port there
        fixed_ports = [fixed or NAMESPACE_PORTS + i for i, fixed in enumerate(fixed_ports)]
    pending = list(zip(implementations, fixed_ports, strict=True))
    started: dict[str, tuple[Process, str]] = {}
    for attempt in range(1, START_ATTEMPTS + 1):
        # Processes are spawned from this thread only: a child's parent-death
        # signal (die_with_parent) fires when the thread that spawned it ends.
        launched = []
        ports = iter(free_ports(sum(1 for _, fixed in pending if not fixed), settings.host()))
        for impl, fixed in pending:
            port = fixed or next(ports)
            process, endpoint = _launch(impl, db, logs, port, where)
            owned.append(process)
            launched.append((impl, fixed, process, endpoint, port))

        def ready(impl: Implementation, process: Process, endpoint: str, port: int) -> bool:
            # healthy, and on its own port: not another process answering there
            check_health(impl.protocol, endpoint, **client_options(impl))  # raises until it answers
            # psutil reads the lab's own network namespace: inside a path's, the health call says it all
            return where.namespaced or listens_on(process.pid, port)
        with ThreadPoolExecutor(max_workers=len(launched) or 1) as pool:
            waits = [pool.submit(process.wait_until, lambda a=(impl, process, endpoint, port): ready(*a),
                                 settings.STARTUP_TIMEOUT, "healthy on its own port")
                     for impl, _, process, endpoint, port in launched]
        pending = []
        for (impl, fixed, process, endpoint, _), wait in zip(launched, waits, strict=True):
            error = wait.exception()
            if error is None:
                started[impl.name] = (process, endpoint)
                continue
            process.stop()
            if not isinstance(error, ProcessFailed) or fixed or attempt == START_ATTEMPTS:
                raise error
            pending.append((impl, fixed))
        if not pending:
            break
    return {impl.name: started[impl.name] for impl in implementations}


def stop_all(processes: Sequence[Process]) -> None:
    """Stop them side by side: each gets its own grace period at the same time."""
    with ThreadPoolExecutor(max_workers=len(processes) or 1) as pool:
        list(pool.map(lambda p: p.stop(), processes))


@contextmanager
def running_lab(names: Sequence[str] | None = None, mode: str | None = None,
                change_streams: bool | None = None,
                implementations: Sequence[Implementation] | None = None,
                path: NetworkPath = LOOPBACK) -> Iterator[Lab]:
    """The lab, its database and the services `names` (all when None) running; in
    native mode `implementations` may name them instead, as changed copies of the
    registry's (an experiment that runs a service with another command). `path`:
    the database and the services on the far side of that network path (native
    mode), so that the client and `direct` cross it."""
    mode = mode or settings.mode()
    if implementations is not None and (names is not None or mode == "docker"):
        raise ValueError("implementations replace names, in native mode only")
    if mode == "docker":
        if path.veth:
            raise SystemExit(f"Docker mode runs on loopback only: {path.name} is not measured in Docker mode")
        with compose.running_stack(names, change_streams) as lab:
            yield lab
        return
    implementations = list(implementations) if implementations is not None else select(names)
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="protolab-logs-")))
        where, link = _here(), None
        if path.veth:
            from lab.host.netpath import calibrate, network_path  # a path's namespace, link and emulators
            link = stack.enter_context(network_path(path))
            calibrate(link)  # measured before use: the result carries the measured values beside the set ones
            print(f"protolab: path {path.name} ({link.mechanism}): measured {link.measured}", flush=True)
            where = Where(link.ns_addr, link.ns_addr, tuple(link.exec_args()))
        db = stack.enter_context(database(change_streams, host=where.host if link else "127.0.0.1",
                                          prefix=where.prefix))
        lab = Lab(mode=mode, database=db, implementations=implementations, path=path,
                  link=link.describe() if link is not None else None)
        # One process per service: a subject whose variant changes only the lab's client (lab/axes.py,
        # Value.client_only) is served by the process of the subject without it (registry.services_of).
        serving = services_of(implementations)
        services = list({impl.name: impl for impl in serving.values()}.values())
        build_all(services, logs)  # cached: only changed inputs rebuild
        base = settings.port_base()
        fixed = [base + impl.port_offset(position) if base else None
                 for position, impl in enumerate(services)]
        owned: list[Process] = []
        stack.callback(stop_all, owned)
        started = _start_native(services, db, logs, fixed, owned, where)
        for impl in implementations:
            process, endpoint = started[serving[impl.name].name]
            lab.endpoints[impl.name] = endpoint
            lab.pids[impl.name] = process.pid
            lab.processes[impl.name] = process
        stack.callback(setattr, lab, "closing", True)  # runs first on the way out
        yield lab


@contextmanager
def running_sites(sites: Sequence[Site], names: Sequence[str] | Mapping[Site, Sequence[str]] | None = None,
                  change_streams: bool | None = None) -> Iterator[Sites]:
    """Every site's lab at once (lab.axes.Site: a mode on a network path), each with its
    database and the services `names` (all when None; a mapping: each site's own); a site
    this host cannot run is left out with the reason printed, unless it is the only one."""
    with ExitStack() as stack:
        labs: dict[Site, Lab] = {}
        left_out: dict[Site, str] = {}
        for site in sites:
            reason = site_unavailable(site)
            if reason and len(sites) > 1:
                left_out[site] = reason
                print(f"protolab: site {site.name} left out: {reason}", flush=True)
                continue
            chosen = names.get(site, []) if isinstance(names, Mapping) else names
            labs[site] = stack.enter_context(running_lab(chosen, site.mode, change_streams, path=site.path))
        yield Sites(labs, left_out)


def site_unavailable(site: Site) -> str | None:
    """Why this host cannot run `site` (None: it can)."""
    if site.mode == "docker" and site.path.veth:
        return "Docker mode runs on loopback only (its containers' network is Docker's own)"
    if site.mode == "docker":
        reason = dockerd.docker_unavailable_reason()
        if reason:
            return f"Docker cannot run here: {reason}"
    if site.path.veth and os.geteuid() != 0:
        return "a network path needs root (network namespaces, qdiscs)"
    return None


@contextmanager
def second_process(lab: Lab, name: str, db: Database | None = None) -> Iterator[str]:
    """Another process of `name`, already running in the native `lab`, on the same
    database (or on `db`), known to `lab` as f"{name}#2" for as long as the block
    runs (the study of process executions measures the two side by side, so that
    the machine's moments land on both and only the process differs)."""
    if lab.mode != "native":
        raise ValueError("a second process of a service is started in native mode only")
    impl = lab.implementation(name)
    twin = replace(impl, name=f"{name}#2")
    owned: list[Process] = []
    with tempfile.TemporaryDirectory(prefix="protolab-logs-") as logs, ExitStack() as stack:  # stopped, then removed
        stack.callback(stop_all, owned)
        process, endpoint = _start_native([impl], db or lab.database, Path(logs), [None], owned)[name]
        lab.implementations.append(twin)
        lab.endpoints[twin.name], lab.pids[twin.name], lab.processes[twin.name] = endpoint, process.pid, process
        try:
            yield twin.name
        finally:
            lab.implementations.remove(twin)
            for known in (lab.endpoints, lab.pids, lab.processes):
                known.pop(twin.name, None)
