"""The axes a subject varies along, defined once, as data (beside the workload
table, lab/workload.py).

A **subject** is what a measurement compares: an implementation, in one
variant, in one mode, over one network path::

    rest/python_flask                  the implementation as its manifest runs it
    rest/python_flask+gthread          a variant: one value of a variant axis
    ws/go_gorilla@docker               the same code in another mode
    ws/go_gorilla@rtt20ms_10mbit       ... across a shaped link
    direct@docker                      the baseline on that mode's (or path's) database

Each variant axis lists its values: what a value sets on the service (its
environment, through lab.environment.service_environment, the one function
both the native launcher and the Compose renderer call), on the lab's client
(keyword options of the protocol's client), on the capture (framing,
transport), and what it needs of the host. A manifest opts into the values
it supports (`[variants]`, the first value of an axis being the one it runs
without a suffix); the registry expands the subjects (lab.registry.subjects).
A value an implementation does not support is left out of that cell with the
reason printed, never failed.

Modes and network paths are axes of the same table: a run may hold the same
implementation natively and in Docker, on loopback and across 20 ms, each
measured interleaved and paired with the others, each anchored to `direct`
on its own mode and path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from clients.protocols import PROTOCOLS

# --- variants -----------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """One value of an axis."""
    name: str
    summary: str
    service_env: Mapping[str, str] = field(default_factory=dict)   # set on the service's environment
    client: Mapping[str, Any] = field(default_factory=dict)        # the protocol client's keyword options
    capture: Mapping[str, Any] = field(default_factory=dict)       # what the wire capture must know:
    #   "transport" and "payload": how it frames the wire when not as its protocol's descriptor
    #   says (clients/protocols.py; lab.registry Implementation.framing), e.g. HTTP/2 DATA frames;
    #   "tls": the TLS version it is wrapped in (the capture decodes it with the clients' key log)
    requires: tuple[str, ...] = ()                                 # of the host: "root", "docker", "netns"
    not_in_docker: str = ""                                        # why Docker mode leaves it out ("": it runs there)
    port_shift: int = 0   # added to the manifest's port_offset, unless its [variant.<value>] sets one
    # The value changes only the lab's client (a protocol's own axis: clients/protocols.py, ClientAxis):
    # its subject is served by the process of the subject without it (lab/registry.py, served_by).
    client_only: bool = False
    # A client-only value served by the process of the subject with this value of its axis in its place
    # (h1tls: the h2 subject's), not by the axis' base ("": the base's).
    served_with: str = ""
    # Values of its axis whose subjects a run divides by this value's subject too, besides by their base
    # (benchmarks/suite.py, counterparts): h2 ÷ h1tls, the client library the same.
    reference_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class Axis:
    name: str
    summary: str
    values: tuple[Value, ...]
    in_default_run: bool = False   # make bench and make test measure every declared value, not the base alone

    def value(self, name: str) -> Value:
        for value in self.values:
            if value.name == name:
                return value
        raise ValueError(f"axis {self.name!r} has no value {name!r}: expected one of "
                         f"{', '.join(v.name for v in self.values)}")


def _frozen(**env: str) -> Mapping[str, str]:
    return MappingProxyType(dict(env))


# The variant axes. A manifest's `[variants]` names, per axis, the values its
# implementation supports, its base first.
VARIANT_AXES: dict[str, Axis] = {a.name: a for a in (
    Axis("workers", "the worker model of a Python WSGI service under gunicorn", (
        Value("gevent", "1 process, one greenlet per connection (worker_connections 4096)",
              service_env=_frozen(LAB_WORKER_MODEL="gevent")),
        Value("gthread", "1 process x LAB_THREADS threads, a thread per request: a new connection "
                         "holds a thread until its request is read",
              service_env=_frozen(LAB_WORKER_MODEL="gthread")),
    ), in_default_run=True),
    # TLS on every protocol. The lab makes the run's CA and server certificate (lab/tls.py)
    # and expands the placeholders: the service gets its certificate chain and key, the
    # lab's client the CA it verifies against; the endpoint's scheme becomes the secure one
    # (https://, wss://; a bare host:port's client makes its channel secure: clients/protocols.py, secure_endpoint).
    # In Docker mode the same files, mounted into the service's container (lab/host/compose.py).
    Axis("tls", "TLS between the client and the service (the lab's own CA, made at run time)", (
        Value("plain", "no TLS: cleartext TCP"),
        Value("tls13", "TLS 1.3 only (the service refuses 1.2), the lab's CA verified by the client",
              service_env=_frozen(LAB_TLS="1.3", LAB_TLS_CERT="{tls_cert}", LAB_TLS_KEY="{tls_key}"),
              client=MappingProxyType({"ca_file": "{tls_ca}"}), capture=MappingProxyType({"tls": "1.3"}),
              port_shift=200),
        Value("tls12", "TLS 1.2 only (the service refuses 1.3), the lab's CA verified by the client",
              service_env=_frozen(LAB_TLS="1.2", LAB_TLS_CERT="{tls_cert}", LAB_TLS_KEY="{tls_key}"),
              client=MappingProxyType({"ca_file": "{tls_ca}"}), capture=MappingProxyType({"tls": "1.2"}),
              port_shift=300),
    )),
    # HTTP/2 for the protocols whose calls are HTTP requests or whose feeds are HTTP streams.
    # h2 is HTTP/2 over TLS 1.3, chosen by ALPN (the service offers h2 and http/1.1; the tls axis'
    # certificate, key and CA); h2c is cleartext HTTP/2 with prior knowledge (RFC 9113, 3.3). The
    # lab's client speaks HTTP/2 (httpx with h2) and checks every answer came in HTTP/2: an h2c
    # subject that answers in HTTP/1.1 is an error, never a silent fallback (clients/http.py).
    Axis("http", "the HTTP version between the client and the service: HTTP/1.1 (the base), HTTP/2 over "
                 "TLS by ALPN (h2), or cleartext HTTP/2 with prior knowledge (h2c). Not measured by "
                 "default: LAB_VARIANTS=http", (
        Value("h1", "HTTP/1.1 as the service runs it without a suffix; the lab's client as it is"),
        Value("h2", "HTTP/2 over TLS 1.3: the service offers h2 and http/1.1 by ALPN, the lab's client "
                    "(httpx with h2) verifies the lab's CA and that h2 was chosen",
              service_env=_frozen(LAB_HTTP="h2", LAB_TLS="1.3", LAB_TLS_CERT="{tls_cert}", LAB_TLS_KEY="{tls_key}"),
              client=MappingProxyType({"http": "h2", "ca_file": "{tls_ca}"}),
              capture=MappingProxyType({"transport": "http2", "payload": "http2_data", "tls": "1.3"}),
              port_shift=400),
        Value("h2c", "cleartext HTTP/2 with prior knowledge: the lab's client opens with the connection "
                     "preface, and an answer in HTTP/1.1 is an error",
              service_env=_frozen(LAB_HTTP="h2c"),
              client=MappingProxyType({"http": "h2c"}),
              capture=MappingProxyType({"transport": "http2", "payload": "http2_data"}),
              port_shift=500),
        # h2 ÷ h1 compares requests (h1) with httpx (h2) as well as the HTTP versions; h2 ÷ h1tls changes the
        # HTTP version alone: the same server process, the same TLS, the same client library.
        Value("h1tls", "HTTP/1.1 over TLS 1.3 to the h2 subject's own process (its ALPN offers h2 and http/1.1; "
                       "the lab's client offers http/1.1 alone), on the client library h2 uses (httpx): what h2 "
                       "is divided by with only the HTTP version changed; an answer not in HTTP/1.1 is an error",
              client=MappingProxyType({"http": "h1tls", "ca_file": "{tls_ca}"}),
              capture=MappingProxyType({"tls": "1.3"}),
              client_only=True, served_with="h2", reference_for=("h2",)),
    )),
    Axis("compression",
         "the payload compressed by the protocol's own mechanism, negotiated the way its clients do it: "
         "HTTP's content coding (the client sends Accept-Encoding: gzip, the server answers with "
         "Content-Encoding: gzip, and only then), the message encoding of RPC over HTTP/2 "
         "(the client's call in gzip, its encoding header naming it, the server answering in kind), WebSocket's "
         "permessage-deflate extension (offered by the client's handshake, accepted in the server's "
         "Sec-WebSocket-Extensions). One value for every mechanism, `gzip`: each is DEFLATE (RFC 1951), "
         "in gzip's framing over HTTP and HTTP/2, raw with a sync flush per message over WebSocket "
         "(RFC 7692), so one cell of a run compares the protocols compressed, and the value reads as "
         "the subjects' suffix (rest/go_nethttp+gzip). Not measured by default: LAB_VARIANTS=compression",
         (
             Value("identity", "no compression: the server compresses nothing (its environment has no "
                               "LAB_COMPRESSION); the clients as they are (requests' default "
                               "Accept-Encoding: gzip, deflate stays, so the request's bytes do not change)"),
             Value("gzip", "the client asks for gzip (or permessage-deflate) and decodes it; the server, "
                           "with LAB_COMPRESSION=gzip, compresses what it was asked to",
                   service_env=_frozen(LAB_COMPRESSION="gzip"),
                   client=MappingProxyType({"compression": "gzip"}),
                   capture=MappingProxyType({"compression": "gzip"})),
         )),
)}



def value_axis(value: str) -> str:
    """The axis of `value` ("" when no axis has it)."""
    return next((a.name for a in VARIANT_AXES.values() if any(v.name == value for v in a.values)), "")


def references(axis: str, value: str) -> list[str]:
    """The values of `axis` whose subjects a subject with `value` is divided by besides its base
    (Value.reference_for: h2 -> h1tls)."""
    return [v.name for v in VARIANT_AXES[axis].values if value in v.reference_for]


def _protocols_axes() -> None:
    """Each protocol's own axes (clients/<protocol>/__init__.py, DESCRIPTOR.axes), into the one table:
    values that change only the lab's client, so that one server process serves all of them."""
    known = {v.name for a in VARIANT_AXES.values() for v in a.values}
    for protocol in PROTOCOLS.values():
        for axis in protocol.axes:
            names = [v.name for v in axis.values]
            if axis.name in VARIANT_AXES or known & set(names) or len(set(names)) != len(names):
                raise ValueError(f"{protocol.name}: axis {axis.name!r} or one of its values ({', '.join(names)}) "
                                 "is already in lab/axes.py: names are unique across the table")
            known |= set(names)
            VARIANT_AXES[axis.name] = Axis(axis.name, f"{protocol.label}: {axis.summary}", tuple(
                Value(v.name, v.summary, client=MappingProxyType(dict(v.client)),
                      capture=MappingProxyType(dict(v.capture)), client_only=True) for v in axis.values),
                in_default_run=axis.in_default_run)


_protocols_axes()


# --- modes --------------------------------------------------------------------------

MODES: dict[str, Value] = {v.name: v for v in (
    Value("native", "the lab's own processes on this host"),
    Value("docker", "Docker Compose: one container per service and the database's own",
          requires=("docker",)),
)}
DEFAULT_MODE = "native"


# --- network paths ------------------------------------------------------------------

_NUMBER = r"\d+(?:\.\d+)?"
_PATH_TOKEN = re.compile(rf"^(?:rtt(?P<rtt>{_NUMBER})ms|(?P<rate>{_NUMBER})mbit|loss(?P<loss>{_NUMBER})pct)$")


def _num(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class NetworkPath:
    """Where the client's packets go to reach the database and the services.

    loopback: the host's `lo` (no namespace). Every other path puts the database
    and the services in a network namespace across a veth pair at MTU 1,500
    (lab/host/netns.py), optionally shaped: an added round trip (split evenly
    between the two directions), a bandwidth limit (each direction) and a
    packet loss rate (each direction). Its name is its spec: "loopback", "veth",
    "rtt20ms", "100mbit", "rtt20ms_10mbit_loss1pct"."""
    veth: bool = False
    rtt_ms: float = 0.0
    rate_mbit: float | None = None
    loss_pct: float = 0.0

    def __post_init__(self) -> None:
        if self.rtt_ms < 0 or self.loss_pct < 0 or self.loss_pct >= 100 or (
                self.rate_mbit is not None and self.rate_mbit <= 0):
            raise ValueError(f"not a network path: rtt {self.rtt_ms} ms, rate {self.rate_mbit} Mbit/s, "
                             f"loss {self.loss_pct} %")
        if self.shaped and not self.veth:
            object.__setattr__(self, "veth", True)  # a shaped path is a veth link

    @property
    def shaped(self) -> bool:
        return bool(self.rtt_ms or self.rate_mbit or self.loss_pct)

    @property
    def name(self) -> str:
        if not self.veth:
            return "loopback"
        parts = ([f"rtt{_num(self.rtt_ms)}ms"] if self.rtt_ms else []) \
            + ([f"{_num(self.rate_mbit)}mbit"] if self.rate_mbit else []) \
            + ([f"loss{_num(self.loss_pct)}pct"] if self.loss_pct else [])
        return "_".join(parts) or "veth"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "veth": self.veth, "rtt_ms": self.rtt_ms, "rate_mbit": self.rate_mbit,
                "loss_pct": self.loss_pct}

    @classmethod
    def parse(cls, name: str) -> NetworkPath:
        name = name.strip()
        if name in ("loopback", "lo", ""):
            return cls()
        if name == "veth":
            return cls(veth=True)
        found: dict[str, float] = {}
        for token in name.split("_"):
            match = _PATH_TOKEN.match(token)
            if match is None:
                raise ValueError(f"not a network path: {name!r} (expected loopback, veth, or tokens joined by _: "
                                 "rtt<N>ms, <N>mbit, loss<N>pct, e.g. rtt20ms_10mbit)")
            key = next(k for k, v in match.groupdict().items() if v is not None)
            if key in found:
                raise ValueError(f"network path {name!r} names {key} twice")
            found[key] = float(match.group(key))
        return cls(veth=True, rtt_ms=found.get("rtt", 0.0), rate_mbit=found.get("rate"),
                   loss_pct=found.get("loss", 0.0))


LOOPBACK = NetworkPath()


# --- sites and subject names -----------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """Where a subject runs: a mode and a network path. One database per site, and
    `direct` on it: every subject's ratio is to the `direct` of its own site."""
    mode: str = DEFAULT_MODE
    path: NetworkPath = LOOPBACK

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: expected one of {', '.join(MODES)}")

    @property
    def suffix(self) -> str:
        """What a subject's name carries of its site: "" for native on loopback."""
        parts = ([self.mode] if self.mode != DEFAULT_MODE else []) + ([self.path.name] if self.path.veth else [])
        return "@" + ",".join(parts) if parts else ""

    @property
    def name(self) -> str:
        return f"{self.mode} on {self.path.name}"

    def subject(self, implementation: str) -> str:
        """The subject name of `implementation` (or "direct") at this site."""
        return implementation + self.suffix

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "path": self.path.describe(), "suffix": self.suffix}


DEFAULT_SITE = Site()


def parse_subject(name: str) -> tuple[str, Site]:
    """ "rest/go_nethttp+x@docker,rtt20ms" -> ("rest/go_nethttp+x", Site("docker", rtt20ms))."""
    implementation, _, where = name.partition("@")
    mode, path = DEFAULT_MODE, LOOPBACK
    for part in filter(None, where.split(",")):
        if part in MODES:
            mode = part
        else:
            path = NetworkPath.parse(part)
    return implementation, Site(mode, path)


def sites(modes: str | Sequence[str] = DEFAULT_MODE, paths: str | Sequence[str] = "loopback") -> list[Site]:
    """The sites of a run: every mode on every path, from comma lists (LAB_MODE, LAB_PATHS).
    Docker mode runs on loopback only (its containers' own network): docker × a shaped
    path is not a site, and is named as not measured by the caller."""
    modes = [m.strip() for m in modes.split(",")] if isinstance(modes, str) else list(modes)
    paths = [p.strip() for p in paths.split(",")] if isinstance(paths, str) else list(paths)
    out = []
    for mode in dict.fromkeys(filter(None, modes)):
        for path in dict.fromkeys(NetworkPath.parse(p) for p in paths or ["loopback"]):
            site = Site(mode, path)
            if site not in out:
                out.append(site)
    return out
