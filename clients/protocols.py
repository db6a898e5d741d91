"""The protocol descriptor, and the registry of every protocol's descriptor.

A protocol is one folder, clients/<protocol>/: its package's __init__.py
defines DESCRIPTOR (a Protocol below), and beside it sit its client
(client.py), the client as its Locust users run it (load.py), its fuzz strategies (fuzz.py) and its
concurrency-1 cross-check client in Go or Node.js (crosscheck/). Instruments
iterate over PROTOCOLS and call the hooks a descriptor names; none of them
names a protocol. Adding a protocol is adding a folder with a DESCRIPTOR.

What a descriptor says:

    name             the manifest's `protocol` value ("rest")
    order            where it sorts in every table (the registry's order)
    label            how reports name it ("REST"; the study's spelling where it has one)
    client           "module:Class" of its client (clients.base.GameClient), imported on first use
    endpoint         the endpoint's shape, with {host} and {port} ("http://{host}:{port}");
                     a manifest's `endpoint` must start with the same scheme
    default_port     the port inside a container when the manifest's [docker] has none
    transport        "http" (HTTP/1.1 requests), "http2" (HTTP/2 streams) or
                     "websocket" (an HTTP/1.1 upgrade, then WebSocket frames): decides the
                     tshark dissector and how capture finds connection setup and teardown
    payload          how capture counts the application payload: by the transport's own
                     framing, "http_body" (http.content_length, transport "http"),
                     "http2_data" (DATA frame payload lengths, transport "http2": an HTTP/1.1
                     protocol's subject over HTTP/2) or
                     "websocket_data" (data-frame payload lengths, transport "websocket");
                     or, for a protocol that frames its own messages inside the transport's,
                     the tshark field ("dissector.field") whose values in a frame are the
                     lengths of the messages it carries, summed ("grpc.message_length")
    payload_source   the sentence the capture report prints for that count
    client_packages  the Python packages its client runs on (their versions go in every result)
    native_error     (native, code) -> bool: is `native` (ContractError.native, as its client
                     raises it) the contract error `code` in this protocol's own terms?
    error_spelling   that spelling in words, for the documentation and test messages
    messaging        True: one connection per client carries request and reply messages
                     (WebSocket, socket.io): a load user holds it for the whole run
    load_client      "module:function" (endpoint, timeout, **its variant's client options, lab/axes.py;
                     shared=True when the load instrument asks its users to share a connection, which
                     only an HTTP/2 client can) -> its client, made to cooperate with
                     gevent for the Locust users (load/locustfile.py) that drive it: imported
                     only in a Locust process, which gevent has patched; or None with `no_load`
                     saying why
    fuzzer           "module:function" of its fuzz strategies (clients.<p>.fuzz:fuzzer), called
                     as fuzzer(endpoint, seeded_ids, **its variant's client options: none for a base;
                     http and ca_file for an HTTP/2 subject) by fuzz/runner.py, which seeds the collection
    crosscheck       the folder of its non-Python concurrency-1 client (clients/<p>/crosscheck, built
                     and run as its crosscheck.toml says), or None with `no_crosscheck` saying why
    crosscheck_plan  "module:function" (endpoint, op, params) -> the request as data, exactly as its
                     client sends it (clients.<p>.client:wire_plan): what the cross-check client sends
    codegen          "module:function" (go_install) -> the paths it wrote: regenerates the committed
                     code this protocol generates from the contract (clients.<p>.codegen:write; run by
                     `python -m lab.codegen`), or None: nothing of its own is generated
    push             the ways it carries a push feed (contract/push.md), each a PushWay below: what
                     the push load instrument (load/push.py), the push capture (capture/push.py) and
                     the report's push section know of it; () when it has no push feed
    message_framing  the lab's Go push load client's -framing (MESSAGE_FRAMINGS) for its echo and
                     broadcast (load/messages.py: Fernando & Engel's tests), or "" where it has none
    axes             variant axes of its own, each a ClientAxis below (lab/axes.py adds them to its one
                     table): ways its one server may be spoken to that change only the lab's client
                     (Connect's wire protocol and codec); a subject varied along one is served by the
                     process of the subject without it (lab/registry.py, Implementation.served_by)

What a protocol's own axis says (ClientAxis; each value a ClientValue):

    name, summary    the axis, as lab/axes.py names and describes it (unique across the table)
    values           its values, the base first: each a name (unique across the table: it is the
                     subject's suffix, connect/go_connect+grpc), a summary, the keyword options it sets
                     on the protocol's client, and what the wire capture must know of it
    in_default_run   make bench and make test measure every value (it costs no process of its own)

What a push way says (PushWay):

    key              the results' "transport" of the push load rows ("sse-h1"); studies name it
    label            its "transport_label" there ("SSE, HTTP/1.1")
    short            how the push studies' tables name it ("SSE h1")
    mode, h2         the lab's Go push load client's -mode (sse, ws, poll or grpc) and whether -h2
    variant          "" (the implementation as it is), or the value of lab/axes.py's variant axes
                     the way needs its service run with ("h2": HTTP/2 over TLS by ALPN): its rows are
                     measured on the subject <implementation>+<variant>, the client given its CA
    default          True: one of the ways every push scenario measures (load.push.transports);
                     False: only where a study asks for it by its key (polling: Pathan's)
    capture_label    the push capture rows' "transport" ("HTTP/1.1"), or "" when capture/push.py
                     does not measure it (its client has no subscription to capture)
    client_options   the keywords the capture passes its client besides the endpoint ({"http2": True})
    framing          a clause for the report: what its messages carry on the wire besides the event
    note             a sentence for the push results' context: how the load client drives it
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRANSPORTS = ("http", "http2", "websocket")
PUSH_MODES = ("sse", "ws", "poll", "grpc")  # the Go push load client's (load/push-client -mode)
MESSAGE_FRAMINGS = ("ws", "socketio")       # its -framing of the echo and broadcast modes
# The payloads capture counts from a transport's own framing, and the transport each belongs to;
# any other `payload` is a tshark field of message lengths.
PAYLOADS = {"http_body": "http", "http2_data": "http2", "websocket_data": "websocket"}
# tshark's dissector for each transport (a WebSocket starts as an HTTP/1.1 upgrade).
DISSECTOR = {"http": "http", "http2": "http2", "websocket": "http"}
HERE = Path(__file__).resolve().parent
# The secure scheme of each cleartext one: a TLS subject's endpoint (lab/axes.py, axis tls).
# A bare host:port (gRPC) stays as it is: its client's `ca_file` option makes its channel secure.
SECURE_SCHEMES = {"http": "https", "ws": "wss"}


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class PushWay:
    key: str
    label: str
    short: str
    mode: str
    h2: bool = False
    variant: str = ""
    default: bool = True
    capture_label: str = ""
    client_options: dict[str, Any] = field(default_factory=dict)
    framing: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        assert self.mode in PUSH_MODES, self.mode


@dataclass(frozen=True)
class ClientValue:
    name: str
    summary: str
    client: dict[str, Any] = field(default_factory=dict)
    capture: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientAxis:
    name: str
    summary: str
    values: tuple[ClientValue, ...]
    in_default_run: bool = False

    def __post_init__(self) -> None:
        assert self.values and not self.values[0].client, f"{self.name}: the base value sets nothing on the client"


@dataclass(frozen=True)
class Protocol:
    name: str
    order: int
    label: str
    client: str
    endpoint: str
    default_port: int
    transport: str
    payload: str
    payload_source: str
    client_packages: tuple[str, ...]
    native_error: Callable[[Any, str], bool]
    error_spelling: str
    fuzzer: str
    messaging: bool = False
    load_client: str | None = None
    no_load: str = ""
    no_capture: str = ""   # why `make capture` leaves it out by default ("": captured; --only names it anyway)
    crosscheck: str | None = None
    crosscheck_plan: str | None = None
    no_crosscheck: str = ""
    codegen: str | None = None
    push: tuple[PushWay, ...] = ()
    message_framing: str = ""
    axes: tuple[ClientAxis, ...] = ()

    def __post_init__(self) -> None:
        assert self.transport in TRANSPORTS, self.transport
        assert self.message_framing in ("", *MESSAGE_FRAMINGS), self.message_framing
        if self.payload in PAYLOADS:
            assert PAYLOADS[self.payload] == self.transport, f"{self.name}: {self.payload} on {self.transport}"
        else:
            dissector, _, field_name = self.payload.partition(".")
            assert dissector and field_name, f"{self.name}: payload {self.payload!r} is no tshark field"
        assert self.load_client or self.no_load, f"{self.name}: a load client, or why there is none"
        assert self.crosscheck or self.no_crosscheck, f"{self.name}: a cross-check client, or why there is none"
        assert bool(self.crosscheck) == bool(self.crosscheck_plan), f"{self.name}: a cross-check client needs its plan"
        assert not self.push or any(w.default for w in self.push), f"{self.name}: a push feed needs a default way"

    @property
    def scheme(self) -> str:
        """"http", "ws", ... or "" for a bare host:port (gRPC)."""
        return self.endpoint.split("://")[0] if "://" in self.endpoint else ""

    @property
    def message_field(self) -> str:
        """The tshark field of its own messages' lengths, or "" when the transport's framing counts."""
        return "" if self.payload in PAYLOADS else self.payload

    @property
    def dissector(self) -> str:
        return DISSECTOR[self.transport]

    def client_class(self) -> type:
        return _load(self.client)

    def fuzzer_function(self) -> Callable[..., Any]:
        return _load(self.fuzzer)

    def load_connect(self) -> Callable[..., Any]:
        """(endpoint, timeout, **its variant's client options) -> its client for a Locust process
        (gevent's patching)."""
        if not self.load_client:
            raise ValueError(f"{self.name}: no load client ({self.no_load})")
        return _load(self.load_client)

    def crosscheck_dir(self) -> Path | None:
        return HERE / self.name / self.crosscheck if self.crosscheck else None

    def codegen_function(self) -> Callable[[Callable[[str, str, str], Path]], list[Path]]:
        if not self.codegen:
            raise ValueError(f"{self.name}: nothing generated from the contract")
        return _load(self.codegen)

    def crosscheck_plan_function(self) -> Callable[[str, str, dict[str, Any]], dict[str, Any]]:
        """wire_plan(endpoint, op, params): the request its cross-check client sends."""
        if not self.crosscheck_plan:
            raise ValueError(f"{self.name}: no cross-check client ({self.no_crosscheck})")
        return _load(self.crosscheck_plan)


def secure_endpoint(endpoint: str) -> str:
    """The endpoint over TLS: "http://h:1/x" -> "https://h:1/x", "ws://..." -> "wss://...";
    a bare host:port as it is."""
    scheme, sep, rest = endpoint.partition("://")
    return f"{SECURE_SCHEMES.get(scheme, scheme)}://{rest}" if sep else endpoint


def _discover() -> dict[str, Protocol]:
    found = []
    for info in pkgutil.iter_modules([str(HERE)]):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"clients.{info.name}")
        descriptor = getattr(module, "DESCRIPTOR", None)
        if descriptor is not None:
            assert descriptor.name == info.name, f"clients/{info.name}/ describes {descriptor.name!r}"
            found.append(descriptor)
    return {p.name: p for p in sorted(found, key=lambda p: (p.order, p.name))}


PROTOCOLS: dict[str, Protocol] = _discover()


def get(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"no protocol descriptor {name!r} (known: {', '.join(PROTOCOLS)}); "
                         "add a folder clients/<protocol>/ with a DESCRIPTOR") from None


def push_ways() -> dict[str, PushWay]:
    """Every protocol's push ways by key, in the registry's order. Protocols may share
    a way (a key means one load client mode and label wherever it appears): the first
    protocol's is the key's."""
    ways: dict[str, PushWay] = {}
    for p in PROTOCOLS.values():
        for way in p.push:
            ways.setdefault(way.key, way)
    return ways


def push_way(key: str) -> PushWay:
    try:
        return push_ways()[key]
    except KeyError:
        raise ValueError(f"no push way {key!r} (known: {', '.join(push_ways())}); a protocol's DESCRIPTOR "
                         "lists its ways in `push`") from None


def label(name: str) -> str:
    """The display label; a name without a descriptor (e.g. "direct") as it is."""
    return PROTOCOLS[name].label if name in PROTOCOLS else name
