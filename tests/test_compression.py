"""The compression axis (lab/axes.py, `compression`) on the wire, per mechanism: each
+gzip subject negotiates its protocol's own compression the way its client does it
(HTTP's Accept-Encoding -> Content-Encoding: gzip; the call's grpc-encoding: gzip; the
WebSocket handshake's permessage-deflate), its reply takes fewer bytes on the wire than
its base's for the same 100-game list, and the answers are the same.

The bytes are counted by a TCP relay between the client and the service (Tap below):
every byte each way of each connection, kept, as the client's socket sent and received
them (the TCP payload); what was negotiated is read from those bytes (the HTTP/1.1
reply's header block, the HTTP/2 HEADERS frames decoded with HPACK, the WebSocket
handshake and frame headers), not from the client's word. No timing is asserted.

One lab for the module: every implementation that declares the axis, base and +gzip.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from hpack import Decoder

from clients import connect
from clients.cooperative import GeventTransport, decode
from clients.rest.client import RestClient
from lab import dataset, registry
from lab.stack import Lab, running_lab

LIMIT = 100  # the games of the list compared
IO_TIMEOUT = 30.0

COMPRESSED = [i for i in registry.bases() if "gzip" in dict(i.supported).get("compression", ())]
LEFT_OUT = [i for i in registry.bases() if i not in COMPRESSED]


def subjects(*protocols: str) -> list[str]:
    return [i.name for i in COMPRESSED if i.protocol in protocols]


HTTP_LISTS = subjects("rest", "graphql", "soap")
GRPC = subjects("grpc")
WS = subjects("ws")
SSE = subjects("sse")


# --- the relay -------------------------------------------------------------------------


@dataclass
class Relayed:
    """One connection through the tap: every byte each way, in order."""
    up: bytearray = field(default_factory=bytearray)    # client -> service
    down: bytearray = field(default_factory=bytearray)  # service -> client
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sizes(self) -> tuple[int, int]:
        with self.lock:
            return len(self.up), len(self.down)


class Tap:
    """A TCP relay on a free loopback port to `upstream`: what a client sends it goes to
    the service and back, each byte recorded (before it is passed on, so once the client
    has a reply, the tap has counted it)."""

    def __init__(self, host: str, port: int):
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(IO_TIMEOUT)
        self.port = self.listener.getsockname()[1]
        self.connections: list[Relayed] = []
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            service = socket.create_connection(self.upstream, timeout=IO_TIMEOUT)
            for s in (client, service):
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, service]
            relayed = Relayed()
            self.connections.append(relayed)
            threading.Thread(target=self._pump, args=(client, service, relayed, "up"), daemon=True).start()
            threading.Thread(target=self._pump, args=(service, client, relayed, "down"), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, relayed: Relayed, way: str) -> None:
        try:
            while data := source.recv(65536):
                with relayed.lock:
                    getattr(relayed, way).extend(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def endpoint(self, endpoint: str) -> str:
        """`endpoint` with the service's host:port replaced by the tap's."""
        return re.sub(rf"{re.escape(self.upstream[0])}:{self.upstream[1]}\b", f"127.0.0.1:{self.port}", endpoint)

    def close(self) -> None:
        """Shut every relayed socket down, then close it: a shutdown wakes a pump blocked in
        recv() and sends the FIN, which a bare close() from another thread does not (the
        blocked call keeps the socket open), so a client still reading (a WebSocket client's
        reader thread, waiting for the close reply) sees its connection end."""
        self.closed = True
        self.listener.close()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def host_port(endpoint: str) -> tuple[str, int]:
    host, port = re.search(r"([\w.\-]+|\[[^\]]+\]):(\d+)", endpoint.split("://")[-1]).groups()
    return host, int(port)


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    names = [n for i in COMPRESSED for n in (i.name, f"{i.name}+gzip")]
    with running_lab(names) as running:
        store = running.store()
        try:
            dataset.reset(store.games, dataset.fetch_games(), indexes=True)
        finally:
            store.close()
        yield running


@dataclass
class Measured:
    answer: Any
    relayed: Relayed
    up: int      # bytes of the measured call, client -> service
    down: int    # service -> client
    start: int   # where the measured call's reply begins in relayed.down
    client: Any


def measured_list(lab: Lab, name: str, **options: Any) -> Measured:
    """list(100) through a tap, on a connection already open (one list first, not counted):
    the answer and the bytes of the second call each way."""
    host, port = host_port(lab.endpoints[name])
    tap = Tap(host, port)
    impl = lab.implementation(name)
    client = connect(impl.protocol, tap.endpoint(lab.endpoints[name]), **{**impl.client_options(), **options})
    try:
        client.list(limit=LIMIT)
        relayed = tap.connections[-1]
        up0, down0 = relayed.sizes()
        answer = client.list(limit=LIMIT)
        up1, down1 = relayed.sizes()
        return Measured(answer, relayed, up1 - up0, down1 - down0, down0, client)
    finally:
        client.close()
        tap.close()


def show(name: str, base: Measured, gzip: Measured, negotiated: str) -> None:
    print(f"\n{name}: list({LIMIT}) reply {base.down:,} B -> {gzip.down:,} B with gzip "
          f"({gzip.down / base.down:.1%}); request {base.up:,} B -> {gzip.up:,} B; negotiated: {negotiated}")


# --- HTTP/1.1: Accept-Encoding -> Content-Encoding ------------------------------------------------

def reply_headers(down: bytes) -> dict[str, str]:
    """The header block of the HTTP/1.1 reply at the start of `down`."""
    head = bytes(down).split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}


@pytest.mark.parametrize("base", HTTP_LISTS)
def test_an_http_reply_is_gzip_when_the_client_asks_and_fewer_bytes(lab: Lab, base: str) -> None:
    plain = measured_list(lab, base)
    gzip = measured_list(lab, f"{base}+gzip")
    sent = reply_headers(gzip.relayed.down[gzip.start:])
    asked = re.search(rb"(?im)^accept-encoding:[^\r\n]*", bytes(gzip.relayed.up))
    assert asked is not None and asked.group(0).lower() == b"accept-encoding: gzip", asked
    assert sent.get("content-encoding") == "gzip", sent
    assert int(sent["content-length"]) == len(gzip.relayed.down) - gzip.start - len(
        bytes(gzip.relayed.down[gzip.start:]).split(b"\r\n\r\n", 1)[0]) - 4, "the whole reply, one Content-Length"
    assert "content-encoding" not in reply_headers(plain.relayed.down[plain.start:])
    assert gzip.answer == plain.answer and len(plain.answer) == LIMIT, "lossless"
    assert gzip.down < plain.down
    show(base, plain, gzip, f"Accept-Encoding: gzip -> Content-Encoding: gzip, Content-Length {sent['content-length']}")


@pytest.mark.parametrize("base", HTTP_LISTS)
def test_an_http_server_compresses_only_when_asked(lab: Lab, base: str) -> None:
    """The +gzip service answers a client that asks for identity uncompressed."""
    name = f"{base}+gzip"
    host, port = host_port(lab.endpoints[name])
    tap = Tap(host, port)
    client = connect(lab.implementation(name).protocol, tap.endpoint(lab.endpoints[name]))
    try:
        client.session.headers["Accept-Encoding"] = "identity"
        assert len(client.list(limit=LIMIT)) == LIMIT
    finally:
        client.close()
        tap.close()
    sent = reply_headers(tap.connections[-1].down)
    assert "content-encoding" not in sent, sent


# --- HTTP/2 (RPC): grpc-encoding -------------------------------------------------------------------

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, CONTINUATION = 0, 1, 9


def h2_frames(raw: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """(type, flags, stream, payload) of every HTTP/2 frame in one direction's bytes."""
    at = len(H2_PREFACE) if raw.startswith(H2_PREFACE) else 0
    while at + 9 <= len(raw):
        length = int.from_bytes(raw[at:at + 3], "big")
        kind, flags = raw[at + 3], raw[at + 4]
        stream = struct.unpack(">I", raw[at + 5:at + 9])[0] & 0x7FFFFFFF
        yield kind, flags, stream, raw[at + 9:at + 9 + length]
        at += 9 + length


def h2_view(raw: bytes) -> tuple[list[tuple[int, dict[str, str]]], dict[int, bytes]]:
    """The header blocks (HPACK-decoded, in order, per stream) and each stream's DATA."""
    decoder, blocks, data, pending = Decoder(), [], {}, b""
    for kind, flags, stream, payload in h2_frames(raw):
        if kind == HEADERS:
            pad = payload[0] if flags & 0x8 else 0
            payload = payload[(1 if flags & 0x8 else 0) + (5 if flags & 0x20 else 0):len(payload) - pad]
        if kind in (HEADERS, CONTINUATION):
            pending += payload
            if flags & 0x4:  # END_HEADERS
                blocks.append((stream, {k if isinstance(k, str) else k.decode(): v if isinstance(v, str)
                                        else v.decode() for k, v in decoder.decode(pending)}))
                pending = b""
        elif kind == DATA:
            pad = payload[0] if flags & 0x8 else 0
            data[stream] = data.get(stream, b"") + payload[(1 if flags & 0x8 else 0):len(payload) - pad]
    return blocks, data


def grpc_flags(data: bytes) -> list[int]:
    """The compressed flag of every length-prefixed message in a stream's DATA."""
    flags, at = [], 0
    while at + 5 <= len(data):
        flags.append(data[at])
        at += 5 + int.from_bytes(data[at + 1:at + 5], "big")
    return flags


@pytest.mark.parametrize("base", GRPC)
def test_an_rpc_over_http2_goes_both_ways_in_gzip_and_fewer_bytes(lab: Lab, base: str) -> None:
    plain = measured_list(lab, base)
    gzip = measured_list(lab, f"{base}+gzip")
    asked, _ = h2_view(bytes(gzip.relayed.up))
    replies, reply_data = h2_view(bytes(gzip.relayed.down))
    last_call = max(stream for stream, headers in asked if ":path" in headers)
    request = next(h for s, h in asked if s == last_call)
    reply = next(h for s, h in replies if s == last_call and ":status" in h)
    assert request.get("grpc-encoding") == "gzip" and "gzip" in request.get("grpc-accept-encoding", ""), request
    assert reply.get("grpc-encoding") == "gzip", reply
    assert grpc_flags(reply_data[last_call]) == [1], "the reply message compressed"
    _, plain_data = h2_view(bytes(plain.relayed.down))
    assert grpc_flags(plain_data[max(plain_data)]) == [0]
    assert gzip.answer == plain.answer and len(plain.answer) == LIMIT, "lossless"
    assert gzip.down < plain.down
    show(base, plain, gzip, "grpc-encoding: gzip on the call and on the reply, its message flagged compressed")


# --- WebSocket: permessage-deflate -------------------------------------------------------------------

def ws_frames(raw: bytes) -> Iterator[tuple[int, int, int]]:
    """(rsv1, opcode, payload length) of each frame after the handshake's reply."""
    at = raw.index(b"\r\n\r\n") + 4
    while at + 2 <= len(raw):
        b0, b1 = raw[at], raw[at + 1]
        length, at = b1 & 0x7F, at + 2
        if length == 126:
            length, at = int.from_bytes(raw[at:at + 2], "big"), at + 2
        elif length == 127:
            length, at = int.from_bytes(raw[at:at + 8], "big"), at + 8
        at += (4 if b1 & 0x80 else 0) + length
        yield (b0 >> 6) & 1, b0 & 0x0F, length


@pytest.mark.parametrize("base", WS)
def test_a_websocket_negotiates_permessage_deflate_and_fewer_bytes(lab: Lab, base: str) -> None:
    plain = measured_list(lab, base)
    gzip = measured_list(lab, f"{base}+gzip")
    offered = re.search(rb"(?im)^sec-websocket-extensions:[^\r\n]*", bytes(gzip.relayed.up))
    accepted = reply_headers(gzip.relayed.down).get("sec-websocket-extensions", "")
    assert offered is not None and b"permessage-deflate" in offered.group(0)
    assert accepted.startswith("permessage-deflate"), accepted
    assert gzip.client.ws.extensions == ["permessage-deflate"]
    replies = [f for f in ws_frames(bytes(gzip.relayed.down)) if f[1] in (1, 2)]
    assert replies and replies[-1][0] == 1, f"the last reply's frame compressed (RSV1): {replies}"
    assert "sec-websocket-extensions" not in reply_headers(plain.relayed.down)
    assert gzip.answer == plain.answer and len(plain.answer) == LIMIT, "lossless"
    assert gzip.down < plain.down
    show(base, plain, gzip, f"Sec-WebSocket-Extensions: {accepted}; the reply's frame RSV1")


@pytest.mark.parametrize("base", WS)
def test_a_websocket_base_declines_the_offer(lab: Lab, base: str) -> None:
    """Without LAB_COMPRESSION the service accepts no extension, even offered one (simple-websocket's
    server would, were the offer not taken out of the handshake it reads)."""
    offering = measured_list(lab, base, compression="gzip")
    assert "sec-websocket-extensions" not in reply_headers(offering.relayed.down)
    assert offering.client.ws.extensions == []
    assert all(rsv1 == 0 for rsv1, _, _ in ws_frames(bytes(offering.relayed.down)))


# --- SSE: a gzip event stream, flushed per event ----------------------------------------------------

EVENTS = 40


def measured_stream(lab: Lab, name: str, **options: Any) -> tuple[list[Any], Relayed, str]:
    host, port = host_port(lab.endpoints[name])
    tap = Tap(host, port)
    impl = lab.implementation(name)
    client = connect(impl.protocol, tap.endpoint(lab.endpoints[name]), **{**impl.client_options(), **options})
    try:
        with client.subscribe("synthetic", batch=10, rate=1000, count=EVENTS) as stream:
            events = list(stream)
            encoding = stream.encoding
    finally:
        client.close()
        tap.close()
    return events, tap.connections[-1], encoding


@pytest.mark.parametrize("base", SSE)
def test_an_event_stream_is_gzip_when_asked_and_fewer_bytes(lab: Lab, base: str) -> None:
    plain_events, plain, plain_encoding = measured_stream(lab, base)
    gzip_events, gzip, encoding = measured_stream(lab, f"{base}+gzip")
    sent = reply_headers(gzip.down)
    assert sent.get("content-encoding") == "gzip" and encoding == "gzip", sent
    assert plain_encoding == "" and "content-encoding" not in reply_headers(plain.down)
    # lossless: the same events, in order, with the same shapes (the synthetic payload holds
    # the time it was made, so the values differ run to run)
    shape = [(e.event, e.id, len(e.data) if isinstance(e.data, list) else sorted(e.data)) for e in plain_events]
    assert [(e.event, e.id, len(e.data) if isinstance(e.data, list) else sorted(e.data))
            for e in gzip_events] == shape
    assert len(plain_events) == EVENTS + 1 and plain_events[-1].event == "end"
    assert len(gzip.down) < len(plain.down)
    print(f"\n{base}: {EVENTS} synthetic events (10 a message) {len(plain.down):,} B -> {len(gzip.down):,} B "
          f"with gzip ({len(gzip.down) / len(plain.down):.1%}); Content-Encoding: gzip, a sync flush per event")


@pytest.mark.parametrize("base", SSE)
def test_an_event_stream_over_h2c_is_gzip_when_asked_and_fewer_bytes(lab: Lab, base: str) -> None:
    plain_events, plain, _ = measured_stream(lab, base, http2=True)
    gzip_events, gzip, encoding = measured_stream(lab, f"{base}+gzip", http2=True)
    asked, _ = h2_view(bytes(gzip.up))
    sent, _ = h2_view(bytes(gzip.down))
    request = next(h for _, h in asked if h.get(":path", "").startswith("/events"))
    reply = next(h for _, h in sent if h.get(":status") == "200" and "content-type" in h
                 and h["content-type"].startswith("text/event-stream"))
    assert request.get("accept-encoding") == "gzip", request
    assert reply.get("content-encoding") == "gzip" and encoding == "gzip", reply
    assert all("content-encoding" not in h for _, h in h2_view(bytes(plain.down))[0])
    assert [(e.event, e.id) for e in gzip_events] == [(e.event, e.id) for e in plain_events]
    assert len(plain_events) == EVENTS + 1
    assert len(gzip.down) < len(plain.down)
    print(f"\n{base} over h2c: {EVENTS} synthetic events {len(plain.down):,} B -> {len(gzip.down):,} B with gzip "
          f"({len(gzip.down) / len(plain.down):.1%}); content-encoding: gzip in the HEADERS frame")


@pytest.mark.parametrize("base", SSE)
def test_a_gzip_event_stream_delivers_each_event_as_it_is_sent(lab: Lab, base: str) -> None:
    """A feed that never ends, one message a second: its first two events arrive, so the server
    flushes its gzip stream per event (a gzip writer left alone holds kilobytes back)."""
    name = f"{base}+gzip"
    client = lab.client(name)
    try:
        with client.subscribe("synthetic", batch=1, rate=1, count=0) as stream:
            events = iter(stream)
            got = [next(events), next(events)]
            assert stream.encoding == "gzip"
    finally:
        client.close()
    assert [e.id for e in got] == ["1", "2"] and all(e.event == "synthetic" for e in got)


# --- the axis as the registry reads it ---------------------------------------------------------------

def test_the_axis_sets_the_service_the_client_and_the_capture() -> None:
    impl = registry.variant("rest/go_nethttp+gzip")
    assert impl.service_env() == {"LAB_COMPRESSION": "gzip"} and impl.client_options() == {"compression": "gzip"}
    assert registry.variant("rest/go_nethttp").service_env() == {}
    for base in LEFT_OUT:
        assert dict(base.unsupported).get("compression"), f"{base.name}: no compression and no reason given"


def test_a_run_that_asks_for_the_axis_names_who_is_left_out_and_why(monkeypatch, capsys) -> None:
    monkeypatch.setenv("LAB_VARIANTS", "compression")
    registry._warn_once.cache_clear()
    names = [i.name for i in registry.discover()]
    assert {f"{i.name}+gzip" for i in COMPRESSED} <= set(names)
    err = capsys.readouterr().err
    for impl in LEFT_OUT:
        assert f"{impl.name}+gzip left out" in err and dict(impl.unsupported)["compression"] in err


# --- the Locust transport decodes what it asks for --------------------------------------------------

def test_the_cooperative_transport_decodes_a_gzip_reply(lab: Lab) -> None:
    """clients/cooperative.py sends requests' Accept-Encoding (gzip, deflate): a service that
    honours it answers in gzip, and the load client reads the same games as the latency suite's."""
    name = "rest/go_nethttp+gzip" if "rest/go_nethttp+gzip" in lab.endpoints else f"{HTTP_LISTS[0]}+gzip"
    endpoint = lab.endpoints[name]
    for compression in (None, "gzip"):
        transport = GeventTransport(endpoint, IO_TIMEOUT, compression)
        try:
            reply = transport("GET", f"{endpoint}/games?limit={LIMIT}&offset=0", None, {})
            assert reply.status == 200 and reply.encoding == "gzip", reply.encoding
            games = RestClient(endpoint, IO_TIMEOUT, transport=transport).list(limit=LIMIT)
        finally:
            transport.close()
        with requests.Session() as session:
            expected = session.get(f"{endpoint}/games", params={"limit": LIMIT, "offset": 0}, timeout=IO_TIMEOUT)
        assert games == expected.json() and len(games) == LIMIT


def test_decode_reads_each_content_coding_requests_asks_for() -> None:
    body = b'{"games": []}' * 50
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert decode(zlib.compress(body), "deflate") == body
    assert decode(raw_deflate.compress(body) + raw_deflate.flush(), "deflate") == body
    assert decode(body, "") == body and decode(body, "identity") == body
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    assert decode(gz.compress(body) + gz.flush(), "gzip") == body
    with pytest.raises(ValueError, match="did not ask for"):
        decode(body, "br")


# --- the load instrument's clients ask for it too --------------------------------------------------

def test_a_load_plan_carries_the_variants_client_options() -> None:
    from load.engine import Plan

    plan = Plan("rest/go_nethttp+gzip", "rest", "http://127.0.0.1:1", client_options={"compression": "gzip"})
    assert '"options": {"compression": "gzip"}' in plan.targets()
    assert '"options"' not in Plan("rest/go_nethttp", "rest", "http://127.0.0.1:1").targets()


@pytest.mark.parametrize("base", [n for n in ("rest/go_nethttp", "grpc/go_grpc", "ws/go_gorilla")
                                  if n in {i.name for i in COMPRESSED}])
def test_a_short_load_run_on_a_gzip_subject_answers_without_errors(lab: Lab, base: str) -> None:
    """The Locust clients of a +gzip subject ask for gzip and decode it (a reply they could not
    decode would be an error)."""
    from lab.host import pinning
    from load import runner
    from load.common import prepare

    impl = lab.implementation(f"{base}+gzip")
    prepare(lab, "fetch-100")
    settings = runner.Settings(warmup_s=0.5, steady_s=1.0, pinning=pinning.plan(True), operation="fetch-100")
    row = runner.run(lab, impl, settings, model="closed", clients=4)
    assert row["errors_total"] == {}, row["errors_total"]
    assert row["ops_window"] > 0
    store = lab.store()
    try:
        dataset.reset(store.games, dataset.fetch_games(), indexes=True)  # as the module's other tests expect
    finally:
        store.close()


def test_no_two_subjects_share_a_fixed_port_when_the_axis_is_measured(monkeypatch) -> None:
    monkeypatch.setenv("LAB_VARIANTS", "compression")
    offsets = [i.fixed_port_offset for i in registry.discover() if i.served_by == i.name]
    assert len(offsets) == len(set(offsets))


# --- socket.io: left out of the axis (its lab client cannot offer), its server ready --------------------

def handshake_extensions(endpoint: str, path: str) -> str:
    """The Sec-WebSocket-Extensions a WebSocket server answers an offer of permessage-deflate with."""
    host, port = host_port(endpoint)
    with socket.create_connection((host, port), timeout=IO_TIMEOUT) as sock:
        sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                      "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n").encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            data = sock.recv(4096)
            if not data:
                break
            reply += data
    assert reply.startswith(b"HTTP/1.1 101"), reply[:200]
    return reply_headers(reply).get("sec-websocket-extensions", "")


def test_the_socketio_server_accepts_permessage_deflate_only_with_the_setting(monkeypatch) -> None:
    import dataclasses

    from lab import stack

    base = next((i for i in LEFT_OUT if i.protocol == "socketio"), None)
    if base is None or base.missing():
        pytest.skip("no socket.io implementation here")
    axis = (("compression", ("identity", "gzip")),)
    gzip = dataclasses.replace(base, name=f"{base.name}+gzip", values=(("compression", "gzip"),), supported=axis)
    assert gzip.service_env() == {"LAB_COMPRESSION": "gzip"}
    # The lab's own socket.io client cannot offer the extension (why the manifest leaves the axis out):
    # its readiness call goes without it; the raw handshakes below are the test.
    options = stack.client_options
    monkeypatch.setattr(stack, "client_options", lambda impl: {k: v for k, v in options(impl).items()
                                                                if k != "compression"})
    with running_lab(implementations=[base, gzip]) as running:
        path = "/socket.io/?EIO=4&transport=websocket"
        assert handshake_extensions(running.endpoints[gzip.name], path).startswith("permessage-deflate")
        assert handshake_extensions(running.endpoints[base.name], path) == ""


ACCEPT_ENCODING_CASES = {
    "gzip": True, "gzip, deflate": True, "deflate": False, "": False, "identity": False, "GZIP;q=0.5": True,
    "gzip;q=0": False, "*": True, "*;q=0": False, "gzip;q=0, *": False, "br, *;q=0.1": True, "x-gzip": True,
}


def test_the_python_services_read_accept_encoding_as_the_go_and_node_ones_do() -> None:
    """The same cases as services/common/go/compression_test.go (RFC 9110, 12.5.3)."""
    from services.common.http_compression import accepts_gzip

    assert {h: accepts_gzip(h) for h in ACCEPT_ENCODING_CASES} == ACCEPT_ENCODING_CASES
