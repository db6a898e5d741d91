"""Locust workers on simulated hosts: each worker in its own network
namespace, joined to the host (where the database, the services and the
Locust master run) by a veth pair at MTU 1,500 (lab/host/netns.py's link, as
`make capture NETNS=1` uses). The services bind one address (LAB_HOST, here
0.0.0.0) and each worker dials another: its link's host-side address, where
it finds the master too.

    with worker_namespaces(settings, 2):   # fills settings.netns
        runner.run(...)                    # worker i runs in namespace i
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from lab.host.netns import NetnsUnavailable, veth_namespace
from load.runner import Settings


@contextmanager
def worker_namespaces(s: Settings, count: int) -> Iterator[list[tuple[str, str]]]:
    with ExitStack() as stack:
        links = []
        for _ in range(count):
            try:
                links.append(stack.enter_context(veth_namespace(mtu=1500)))
            except NetnsUnavailable as exc:
                raise SystemExit(f"--netns needs root (ip netns add): {exc}") from None
        s.netns = [(link.namespace, link.host_addr) for link in links]
        s.workers = max(s.workers, count)
        try:
            yield s.netns
        finally:
            s.netns = []
