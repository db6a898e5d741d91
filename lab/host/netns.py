"""A veth link into a network namespace with a real Ethernet MTU (1500).

Loopback's MTU is 65,536, so a large message crosses `lo` as one huge frame.
Over this link segments are at most MSS bytes (1448 of payload with TCP
timestamps) in frames of at most 1514 bytes, as on a wired Ethernet link::

    with veth_namespace() as link:        # VethLink
        server = subprocess.Popen(link.exec_args("python", "-m", "..."))  # inside
        with Capture([port], interface=link.host_if, marker_host=link.ns_addr):
            ...clients on the host connect to (link.ns_addr, port)...

`veth_namespace(mtu=1500)` creates namespace `plcapXXXXXX` and a veth pair with
addresses in 198.18.0.0/16 (RFC 2544 benchmarking space, never a private
range): host side `.1/30`, namespace side `.2/30`.  Segmentation offloads are
limited (`gso_max_segs 1`) on both ends: otherwise the kernel hands the capture
64 KB GSO super-frames that only a NIC would cut up, and the capture would look
like loopback again.  Everything is removed by name on exit (deleting the
namespace deletes the pair).  Needs root (CAP_NET_ADMIN); raises
`NetnsUnavailable` when `ip netns add` is refused.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class NetnsUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class VethLink:
    namespace: str
    host_if: str     # capture here
    ns_if: str
    host_addr: str   # 198.18.x.y+1
    ns_addr: str     # 198.18.x.y+2; services inside the namespace bind here
    mtu: int

    def exec_args(self, *argv: str) -> list[str]:
        """argv prefixed to run inside the namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=False, capture_output=True, text=True,
                          timeout=30)


def _ip_ok(*args: str) -> None:
    done = _ip(*args)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _free_block(seed: int) -> tuple[str, str]:
    """Host and peer address of a /30 in 198.18.0.0/16 that the host does not use."""
    used = _ip("-4", "addr").stdout + _ip("-4", "route").stdout
    blocks = 65536 // 4
    for i in range(blocks):
        n = (seed + i) % blocks * 4
        net = f"198.18.{n // 256}.{n % 256}"
        host, peer = f"198.18.{n // 256}.{n % 256 + 1}", f"198.18.{n // 256}.{n % 256 + 2}"
        if not any(f"{a}/" in used for a in (net, host, peer)):
            return host, peer
    raise RuntimeError("no free /30 in 198.18.0.0/16")


@contextmanager
def veth_namespace(mtu: int = 1500, prefix: str = "plcap") -> Iterator[VethLink]:
    """The namespace and its veth pair, named `prefix` + 6 hex digits (+ h, n)."""
    if len(prefix) > 8:
        raise ValueError(f"prefix {prefix!r}: interface names must stay within 15 characters")
    tag = secrets.token_hex(3)
    ns, host_if, ns_if = f"{prefix}{tag}", f"{prefix}{tag}h", f"{prefix}{tag}n"
    added = _ip("netns", "add", ns)
    if added.returncode:
        raise NetnsUnavailable(f"ip netns add {ns}: {added.stderr.strip()}")
    try:
        host_addr, ns_addr = _free_block(secrets.randbelow(16384))
        _ip_ok("link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", ns)
        _ip_ok("addr", "add", f"{host_addr}/30", "dev", host_if)
        _ip_ok("link", "set", host_if, "mtu", str(mtu), "gso_max_segs", "1", "up")
        _ip_ok("-n", ns, "addr", "add", f"{ns_addr}/30", "dev", ns_if)
        _ip_ok("-n", ns, "link", "set", ns_if, "mtu", str(mtu), "gso_max_segs", "1", "up")
        _ip_ok("-n", ns, "link", "set", "lo", "up")
        yield VethLink(ns, host_if, ns_if, host_addr, ns_addr, mtu)
    finally:
        # The host end would normally vanish with the namespace; delete it by
        # name first in case the peer never got moved in.
        _ip("link", "del", host_if)
        _ip("netns", "del", ns)
