"""Bytes on the wire per operation, for every implementation, in one capture.

`measure()` starts the lab (native), starts ONE tshark for the ports of every
service and of the database, and then, per implementation and operation,
with the database prepared as the benchmarks prepare it:

- `new_connection`: a client is made, performs one operation and is closed;
  its TCP stream (the one SYN in that window on the service port) is split into
  phases: TCP handshake, application setup (HTTP/2 preface + SETTINGS and the
  connection's first WINDOW_UPDATE; the WebSocket upgrade), the operation,
  application teardown (WebSocket close frames, HTTP/2 GOAWAY), FIN/ACK;
- `steady`: warm-up, then `n` operations on one kept-alive connection;
  everything on the service port in that window, divided by n.

Afterwards the capture is read with tshark, in one pass: the engine's per-packet TCP
view (capture.tshark) and the dissectors' view (capture.dissect), which gives
the application payload (HTTP bodies by Content-Length, WebSocket data-frame
payload lengths, or the lengths of the messages a protocol frames inside its
HTTP/2 streams, by the tshark field its descriptor names) and the MongoDB
command of each database message.  The service<->MongoDB bytes of each window
are counted on the database connections that carry CRUD commands: the
drivers' monitoring connections (hello/isMaster only) are left out, as they
tick on their own clock, not per operation.

With `netns=True` the services listen on the host end of a veth pair
(MTU 1500) and the clients run inside the namespace (capture.workload in a
subprocess), so requests and replies cross a real Ethernet-sized link; the
database stays on loopback and is captured there by a second tshark.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from capture.dissect import (
    H2_DATA,
    H2_GOAWAY,
    H2_HEADERS,
    H2_PREFACE,
    H2_SETTINGS,
    H2_WINDOW_UPDATE,
    HELLO_COMMANDS,
    WS_CLOSE,
    WS_DATA_OPCODES,
    Layers,
    read,
)
from capture.tshark import (
    ACK,
    SETUP,
    TEARDOWN,
    Capture,
    Packet,
    Split,
    Tally,
    Timeline,
    ensure_tshark,
    missing_bytes,
    streams,
    tally,
)
from capture.workload import RemoteWorkload, Workload
from clients.protocols import PROTOCOLS, Protocol
from lab import axes, dataset, registry, workload
from lab.context import run_context
from lab.environment import client_options
from lab.host.netns import veth_namespace
from lab.registry import CRUD_CALLS
from lab.stack import running_lab
from lab.workload import CAPTURE

PHASES = ("tcp_setup", "app_setup", "operation", "app_teardown", "tcp_teardown")
DIRECTIONS = ("to_server", "to_client")
DEFAULT_N = 50
# A new connection's bytes vary a little from one to the next (when an HTTP/2
# client sends its flow-control PINGs, whether a WebSocket closes with FIN or RST): each
# cell is the connection with the median total of this many.
NEW_CONNECTION_REPEATS = 5
# How each protocol's application payload is counted (clients/<protocol>/__init__.py says which).
APP_PAYLOAD_SOURCE = {name: p.payload_source for name, p in PROTOCOLS.items()}
operation_named = workload.get   # (measure() has a local `workload`: the clients that run the operations)
# Seconds the capture's clients wait for a reply: the payload axis' 1,000-game list through a Python
# toolkit took longer than the clients' default 10 s on this machine under load (2026-12-03, load
# average 25-44: DEADLINE_EXCEEDED); bytes, not times, are what a capture measures.
CALL_TIMEOUT_S = 120.0


def call_timeout(name: str) -> dict[str, float]:
    """The capture's clients' timeout keyword (`direct`, in-process, takes none)."""
    return {} if name == "direct" else {"timeout": CALL_TIMEOUT_S}


def service_port(endpoint: str) -> int:
    """Port of an endpoint ("http://h:p/x", "ws://h:p/x" or "h:p")."""
    return int(endpoint.split("://")[-1].split("/")[0].rsplit(":", 1)[1])


# --- accounting --------------------------------------------------------------

def _descriptor(protocol: str | Protocol) -> Protocol:
    """A protocol by name, or as a subject's variant frames it (lab.registry Implementation.framing)."""
    return protocol if isinstance(protocol, Protocol) else PROTOCOLS[protocol]


def subject_framing(impl: Any) -> tuple[str, Protocol]:
    """(the tshark dissector of a subject's port, its protocol's descriptor as its variant frames the
    wire: lab.registry Implementation.framing, e.g. an HTTP/1.1 protocol's subject over HTTP/2).
    Over TLS (its capture entry "tls") the port is decoded as TLS with the run's key log (the lab's
    clients' and the services' secrets: measure), and tshark picks HTTP/2 or HTTP/1.1 inside by the
    connection's ALPN, and a protocol's own messages inside HTTP/2 by their content type."""
    framing = impl.framing()
    return ("tls" if impl.capture().get("tls") else framing.dissector), framing


def app_payload(packets: Sequence[Packet], layers: dict[int, Layers], port: int,
                protocol: str | Protocol) -> tuple[int, int]:
    """Application payload bytes (to_server, to_client) tshark found in `packets`."""
    out = [0, 0]
    descriptor = _descriptor(protocol)
    for p in packets:
        lay = layers.get(p.number)
        if lay is None:
            continue
        if descriptor.message_field:  # the protocol's own messages, by the tshark field it names
            n = sum(lay.messages.get(descriptor.message_field, ()))
        elif descriptor.payload == "websocket_data":
            n = sum(f.length for f in lay.ws if f.opcode in WS_DATA_OPCODES)
        elif descriptor.payload == "http2_data":  # an HTTP body in HTTP/2 DATA frames
            n = sum(f.length for f in lay.h2 if f.type == H2_DATA)
        else:
            n = lay.http_body
        out[p.dst_port != port] += n
    return out[0], out[1]


def summary(split: Split, n: int = 1, app: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """Per-direction and total frames/frame bytes/payload (and app payload), divided by n."""
    out: dict[str, Any] = {}
    for name, t, a in (("to_server", split.to_server, app[0]),
                       ("to_client", split.to_client, app[1]),
                       ("total", split.total, app[0] + app[1])):
        out[name] = {**t.per(n), "app_payload": a / n}
    return out


def connection_phases(stream: Sequence[Packet], layers: dict[int, Layers], port: int,
                      protocol: str | Protocol) -> dict[str, Split]:
    """One TCP connection's packets split into PHASES, per direction.

    TCP handshake and FIN/ACK come from the engine's classification.  The
    application's own setup and teardown are found from tshark's dissection:
    HTTP/2 preface, SETTINGS (and ACKs) and the stream-0 WINDOW_UPDATE sent
    before a side's first HEADERS; GOAWAY; for WebSocket, everything before the
    first WebSocket frame (the HTTP upgrade) and the close frames.  A segment
    holding both setup and operation bytes is divided by bytes (its headers
    count with the operation); a pure ACK joins the phase of the data before it.
    """
    acc = {ph: [Tally(), Tally()] for ph in PHASES}
    transport = _descriptor(protocol).transport
    last = "operation"
    ws_started = False
    h2_headers_from: set[int] = set()
    for p in stream:
        d = 0 if p.dst_port == port else 1
        if p.kind in (SETUP, TEARDOWN):
            acc["tcp_setup" if p.kind == SETUP else "tcp_teardown"][d] += Tally(
                1, p.frame_len, p.payload)
            continue
        if p.kind == ACK:
            acc[last][d] += Tally(1, p.frame_len, 0)
            continue
        lay = layers.get(p.number) or Layers()
        setup = teardown = 0
        if transport == "websocket":
            ws_started = ws_started or bool(lay.ws)
            if not ws_started:
                setup = p.payload
            else:
                teardown = sum(f.size for f in lay.ws if f.opcode == WS_CLOSE)
        elif transport == "http2":
            setup = H2_PREFACE if lay.h2_magic else 0
            for f in lay.h2:
                if f.type == H2_SETTINGS or (f.type == H2_WINDOW_UPDATE and f.stream == 0
                                             and d not in h2_headers_from):
                    setup += f.size
                elif f.type == H2_GOAWAY:
                    teardown += f.size
                elif f.type == H2_HEADERS:
                    h2_headers_from.add(d)
        setup = min(setup, p.payload)
        teardown = min(teardown, p.payload - setup)
        rest = p.payload - setup - teardown
        if rest == 0 and setup and not teardown:
            last = "app_setup"
            acc[last][d] += Tally(1, p.frame_len, p.payload)
        elif rest == 0 and teardown and not setup:
            last = "app_teardown"
            acc[last][d] += Tally(1, p.frame_len, p.payload)
        else:
            last = "operation"
            acc["app_setup"][d] += Tally(0, setup, setup)
            acc["app_teardown"][d] += Tally(0, teardown, teardown)
            acc["operation"][d] += Tally(1, p.frame_len - setup - teardown, rest)
    return {ph: Split(up, down) for ph, (up, down) in acc.items()}


def operation_streams(db_packets: Sequence[Packet], layers: dict[int, Layers],
                      db_port: int) -> set[int]:
    """Database connections that carry commands other than hello/isMaster."""
    found = set()
    for p in db_packets:
        command = layers[p.number].mongo_command if p.number in layers else ""
        if p.dst_port == db_port and command and command not in HELLO_COMMANDS:
            found.add(p.stream)
    return found


# --- measuring -----------------------------------------------------------------

def prepare(collection: Any, op: str) -> None:
    """The database state the workload table starts `op` from (lab/workload.py)."""
    workload.prepare(collection, workload.get(op))


@contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """`name`=`value` in this process's environment inside the block, restored afterwards."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@contextmanager
def _lab_host(host: str | None) -> Iterator[None]:
    """LAB_HOST for the services started inside the block, restored afterwards."""
    previous = os.environ.get("LAB_HOST")
    if host:
        os.environ["LAB_HOST"] = host
    try:
        yield
    finally:
        if host:
            if previous is None:
                os.environ.pop("LAB_HOST", None)
            else:
                os.environ["LAB_HOST"] = previous


def measure(*, n: int = DEFAULT_N, netns: bool = False, names: Sequence[str] | None = None,
            keep_pcap: Path | None = None, progress: Any = print, operations: Sequence[str] = CAPTURE,
            new_connections: int = NEW_CONNECTION_REPEATS, database: bool = True) -> dict[str, Any]:
    """Run the capture; returns the results (see module docstring) as plain data. `operations`: the
    workload table's names (its payload rows too: fetch-1000, insert:largest); `new_connections`:
    the connections made for each new-connection cell (0: none, the kept-alive rows alone);
    `database`: capture the service<->database traffic too (its dissection reads every field name of
    every document: a 1,000-game reply is slow to read)."""
    operations = tuple(operations)
    for op in operations:
        operation_named(op)  # an unknown name stops here, before the lab starts
    ensure_tshark()
    started = time.monotonic()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="protolab-wire-")))
        # The TLS key log, named before the lab starts: the lab's Python clients write their TLS secrets
        # to SSLKEYLOGFILE (ssl.create_default_context reads it as a context is made) and the services of
        # TLS subjects append theirs (lab/tls.py, keylog_environment: Go's KeyLogWriter, Python's
        # keylog_filename, Node's 'keylog' event), for the clients whose TLS library logs none (grpcio's,
        # connect-python's pyqwest); tshark decrypts with it.
        keylog = tmp / "tls-keys.log"
        stack.enter_context(_environment("SSLKEYLOGFILE", str(keylog)))
        link = stack.enter_context(veth_namespace(mtu=1500)) if netns else None
        with _lab_host(link.host_addr if link else None):
            lab = stack.enter_context(running_lab(names, "native"))
        progress(f"lab up in {time.monotonic() - started:.1f} s: "
                 + ", ".join(f"{k} {v}" for k, v in lab.endpoints.items()))
        impls = [i for i in lab.implementations if i.serves(*CRUD_CALLS)]  # push: capture/push.py
        protocols = {i.name: i.protocol for i in impls}
        # how each subject's variant frames the wire (a client-only wire protocol its own way,
        # an HTTP/1.1 protocol's subject over HTTP/2), and whether TLS wraps it
        framing = {i.name: subject_framing(i) for i in impls}
        framings = {k: f for k, (_, f) in framing.items()}
        ports = {i.name: service_port(lab.endpoints[i.name]) for i in impls}
        db_port = urlparse(lab.database.uri).port
        assert db_port is not None
        store = lab.store()
        stack.callback(store.close)
        local = Workload(lambda name: lab.client(name, **call_timeout(name)), ports)
        stack.callback(local.close_all)
        if link:
            workload: Workload | RemoteWorkload = RemoteWorkload(
                link.exec_args(), {k: (protocols[k], lab.endpoints[k],
                                       {**client_options(lab.implementation(k)), **call_timeout(k)})
                                   for k in ports}, ports)
            service_cap = Capture(list(ports.values()), interface=link.host_if,
                                  marker_host=link.ns_addr, path=tmp / "services.pcapng", read=False)
            db_cap: Capture | None = Capture([db_port], path=tmp / "database.pcapng", read=False) \
                if database else None
        else:
            workload = local
            service_cap = Capture([*ports.values(), *([db_port] if database else [])], path=tmp / "capture.pcapng",
                                  read=False)
            db_cap = None
        stack.callback(workload.close_all)

        windows: list[dict[str, Any]] = []
        t_capture = time.monotonic()
        with service_cap, db_cap or nullcontext():
            progress(f"capturing ({'veth MTU 1500 + lo' if link else 'lo'}) ...")
            per_impl: dict[str, float] = {}
            for impl in impls:
                name = impl.name
                t_impl = time.monotonic()
                # New connections first: a client library may share one connection
                # between its clients in a process (HTTP/2 channels do), so none of
                # this implementation may be open.
                for op in operations:
                    for _ in range(new_connections):
                        prepare(store.games, op)
                        windows.append({"name": name, "op": op, "kind": "new_connection",
                                        **workload.new_connection(name, op, 0)})
                windows.append({"name": name, "op": "", "kind": "open",
                                **workload.open(name)})
                for op in operations:
                    prepare(store.games, op)
                    windows.append({"name": name, "op": op, "kind": "steady", "n": n,
                                    **workload.steady(name, op, n)})
                windows.append({"name": name, "op": "", "kind": "close",
                                **workload.close(name)})
                per_impl[name] = round(time.monotonic() - t_impl, 1)
            local.open("direct")
            for op in operations:
                prepare(store.games, op)
                windows.append({"name": "direct", "op": op, "kind": "steady", "n": n,
                                **local.steady("direct", op, n)})
            local.close("direct")
            capture_s = time.monotonic() - t_capture
        took = {"lab_up": round(t_capture - started, 2), "windows": round(capture_s, 2),
                "stop": round(time.monotonic() - t_capture - capture_s, 2)}
        progress(f"captured in {capture_s:.1f} s (the slowest subjects: "
                 + ", ".join(f"{k} {v:.0f} s" for k, v in sorted(per_impl.items(), key=lambda kv: -kv[1])[:4])
                 + "); reading ...")
        t_read = time.monotonic()

        # a port several subjects share (one process serving them: lab/registry.py, served_by) is
        # decoded by its first subject's dissector; tshark's HTTP one hands a connection that starts
        # with HTTP/2's preface to its HTTP/2 dissector
        decode: dict[int, str] = {}
        for k in ports:
            decode.setdefault(ports[k], framing[k][0])
        # one tshark pass a file: its TCP packets and its dissectors' layers together
        service_cap.packets, service_layers = read(
            service_cap.path, {**decode, **({db_port: "mongo"} if database else {})},
            keylog=keylog if keylog is not None and keylog.exists() else None)
        if db_cap is not None:
            db_cap.packets, db_layers = read(db_cap.path, {db_port: "mongo"})
            db_packets = [p for p in db_cap.packets if db_port in (p.src_port, p.dst_port)]
        else:
            db_packets = [p for p in service_cap.packets if db_port in (p.src_port, p.dst_port)]
            db_layers = service_layers
        took["read"] = round(time.monotonic() - t_read, 2)
        t_analyse = time.monotonic()
        if keep_pcap is not None:
            keep_pcap.mkdir(parents=True, exist_ok=True)
            for cap in (service_cap, db_cap):
                if cap is not None:
                    (keep_pcap / cap.path.name).write_bytes(cap.path.read_bytes())

        results = analyse(windows, service_cap.packets, service_layers, db_packets, db_layers,
                          ports, protocols, db_port, framings, operations=operations)
        took["analyse"] = round(time.monotonic() - t_analyse, 2)
        progress("stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in took.items()))
        results["compression"] = compression_context(lab.implementations)
        results["context"] = run_context(
            lab.mode, lab.database, lab.implementations,
            capture={"interface": link.host_if if link else "lo",
                     "link": f"veth pair, MTU {link.mtu}, into namespace {link.namespace}"
                     if link else "Linux loopback, MTU 65536",
                     "database_interface": "lo" if database else None, "operations_per_steady_window": n,
                     "new_connections_per_cell": new_connections,
                     "warmup_operations": 2, "tshark": _tshark_version(),
                     "capture_seconds": round(capture_s, 2), "stage_seconds": took})
        results["context"]["payload_source"] = APP_PAYLOAD_SOURCE
        # The subjects whose framing is not their protocol's (a variant over HTTP/2, a client-only
        # wire protocol, TLS).
        results["context"]["subject_framing"] = {
            k: {"dissector": d, "transport": f.transport,
                "payload": "HTTP/2 DATA frame payloads" if f.payload == "http2_data" else f.payload_source,
                "decrypted_with_key_log": d == "tls"}
            for k, (d, f) in framing.items() if (d, f.transport) != (PROTOCOLS[protocols[k]].dissector,
                                                                     PROTOCOLS[protocols[k]].transport)}
        results["context"]["records"] = _record_sizes(operations)
    results["context"]["elapsed_seconds"] = round(time.monotonic() - started, 2)
    return results


def _tshark_version() -> str:
    import subprocess
    done = subprocess.run([ensure_tshark(), "--version"], capture_output=True, text=True,
                          timeout=30, check=False)
    return done.stdout.splitlines()[0] if done.stdout else "unknown"


def _record_sizes(operations: Sequence[str] = CAPTURE) -> dict[str, Any]:
    """JSON sizes (the lab's codec) of the records the operations move, and what
    each captured operation carries (lab.workload.payload_bytes)."""
    carried = {name: workload.payload_bytes(workload.get(name)) for name in operations}
    return {"inserted_game_json": workload.payload_bytes(workload.get("insert"))["json_bytes"],
            "fetched_game_json": workload.payload_bytes(workload.get("fetch-one"))["json_bytes"],
            "dataset_median_json": dataset.json_size(dataset.median_game()), "dataset_games": len(dataset.games()),
            "payload_bytes": carried}


COMPRESSION_AXIS = "compression"


def axis_subjects(axis: str) -> list[str]:
    """Every implementation that serves the CRUD calls and can run here, each followed by its
    subjects on `axis` (lab/axes.py; the values its manifest declares beyond the base), nothing
    else: one capture of the axis, e.g. every implementation with and without compression."""
    if axis not in axes.VARIANT_AXES:
        raise ValueError(f"no variant axis {axis!r} in lab/axes.py (axes: {', '.join(axes.VARIANT_AXES)})")
    out = []
    for impl in registry.bases():
        if impl.missing() or not impl.serves(*CRUD_CALLS):
            continue
        out.append(impl.name)
        out += [f"{impl.name}+{value}" for value in dict(impl.supported).get(axis, ())[1:]]
    return out


def compression_context(implementations: Sequence[Any]) -> dict[str, Any]:
    """What the capture held of the compression axis (lab/axes.py): each base implementation
    captured, whether its manifest declares the axis' compressed values, and where it does not, why
    (its manifest's [unsupported], else that its [variants] name none)."""
    values = [v.name for v in axes.VARIANT_AXES[COMPRESSION_AXIS].values] if COMPRESSION_AXIS in axes.VARIANT_AXES \
        else []
    captured = {i.name for i in implementations}
    out: dict[str, Any] = {"axis": COMPRESSION_AXIS, "values": values, "unsupported": {}, "captured_values": {}}
    for base in dict.fromkeys(i.base for i in implementations if i.serves(*CRUD_CALLS)):
        impl = registry.variant(base)
        supported = dict(impl.supported).get(COMPRESSION_AXIS, ())
        out["captured_values"][base] = [v for v in values[1:] if f"{base}+{v}" in captured]
        if not set(values[1:]) <= set(supported):
            out["unsupported"][base] = dict(impl.unsupported).get(COMPRESSION_AXIS) or (
                f"its manifest's [variants] lists no {COMPRESSION_AXIS} values beyond "
                f"{', '.join(supported) or 'none'}")
    return out


def analyse(windows: list[dict[str, Any]], packets: list[Packet], layers: dict[int, Layers],
            db_packets: list[Packet], db_layers: dict[int, Layers], ports: dict[str, int],
            protocols: dict[str, str], db_port: int,
            framings: dict[str, Protocol] | None = None, operations: Sequence[str] = CAPTURE) -> dict[str, Any]:
    """`framings`: how each subject's variant frames the wire, where it is not its protocol's own way."""
    def framing(name: str) -> str | Protocol:
        return (framings or {}).get(name, protocols[name])

    by_stream = streams(packets)
    db_ops = operation_streams(db_packets, db_layers, db_port)
    db_work = Timeline([p for p in db_packets if p.stream in db_ops])
    timeline = Timeline(packets)
    steady: dict[str, dict[str, Any]] = {}
    new: dict[str, dict[str, Any]] = {}
    database: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    unread: dict[str, str] = {}  # subject -> why its application payload reads 0 (nothing of its framing decoded)
    candidates: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for w in windows:
        name, op, kind = w["name"], w["op"], w["kind"]
        db_window = db_work.between(w["t0"], w["t1"])
        if kind == "steady":
            nops = w["n"]
            database.setdefault(name, {}).setdefault(op, {})["steady"] = summary(
                tally(db_window, db_port), nops)
            if name not in ports:
                continue
            port = ports[name]
            window = [p for p in timeline.between(w["t0"], w["t1"]) if port in (p.src_port, p.dst_port)]
            syns = sum(p.syn for p in window)
            n_streams = len({p.stream for p in window})
            if syns or n_streams != 1:
                problems.append(f"{name} {op} steady: {syns} SYNs, {n_streams} connections")
            lost = missing_bytes(window)
            if lost:
                problems.append(f"{name} {op} steady: the capture lost {lost:,} payload bytes (sequence gaps): "
                                "its bytes are undercounted")
            data = [p for p in window if p.payload]
            if data and not any(p.number in layers and layers[p.number].framed for p in data):
                unread[name] = (f"tshark decoded nothing of its framing in {len(data)} data segments: over TLS, no "
                                "key log line for its connections (neither its client's TLS library nor its "
                                "server's logs its secrets), so its application payload reads 0")
            steady.setdefault(name, {})[op] = {
                **summary(tally(window, port), nops,
                          app_payload(window, layers, port, framing(name))),
                "n": nops, "syn_packets": syns, "connections": n_streams}
        elif kind == "new_connection":
            port = ports[name]
            opened = sorted({p.stream for p in timeline.between(w["t0"], w["t1"])
                             if p.syn and not p.ack and p.dst_port == port})
            if len(opened) != 1:
                problems.append(f"{name} {op} new connection: {len(opened)} connections opened")
            stream = [p for s in opened for p in by_stream[s]]
            phases = connection_phases(stream, layers, port, framing(name))
            total = summary(tally(stream, port), 1, app_payload(stream, layers, port, framing(name)))
            candidates.setdefault((name, op), []).append(({
                "total": total,
                "phases": {ph: summary(s) for ph, s in phases.items()},
                "setup": summary(phases["tcp_setup"] + phases["app_setup"]),
                "teardown": summary(phases["app_teardown"] + phases["tcp_teardown"]),
                "connections": len(opened)}, summary(tally(db_window, db_port))))
    for (name, op), samples in candidates.items():
        samples.sort(key=lambda sample: sample[0]["total"]["total"]["frame_bytes"])
        cell, db = samples[len(samples) // 2]
        new.setdefault(name, {})[op] = {
            **cell, "samples_frame_bytes": [s[0]["total"]["total"]["frame_bytes"] for s in samples]}
        database.setdefault(name, {}).setdefault(op, {})["new_connection"] = db
    return {"operations": list(operations), "ports": ports, "protocols": protocols,
            "steady": steady, "new_connection": new, "database": database,
            "problems": problems, "unread": unread}
