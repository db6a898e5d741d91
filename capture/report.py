"""The wire-capture results as Markdown, CSV and JSON (results/capture/)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from capture.tshark import LOOPBACK_NOTE
from capture.wire import DIRECTIONS, PHASES
from clients.protocols import label
from lab import results as lab_results
from lab.registry import study_column

NETNS_NOTE = ("Captured on the host end of a veth pair into a network namespace, MTU 1,500: "
              "segments of at most 1,448 payload bytes in frames of at most 1,514 bytes, with "
              "a real 14-byte Ethernet header, as on a wired link. The service<->MongoDB "
              "table is still captured on loopback (MTU 65,536, fake 14-byte Ethernet header).")


def _n(x: float) -> str:
    return f"{x:,.0f}" if abs(x - round(x)) < 0.05 or abs(x) >= 100 else f"{x:,.1f}"


def _pair(cell: dict[str, Any], key: str) -> str:
    return f"{_n(cell['to_server'][key])} / {_n(cell['to_client'][key])}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def by_protocol(results: dict[str, Any]) -> dict[str, str]:
    """The implementation of each protocol set beside the study (lab.registry.study_column)."""
    return study_column(list(results["protocols"]))


def markdown(results: dict[str, Any]) -> str:
    ctx = results["context"]
    cap = ctx["settings"]["capture"]
    netns = cap["interface"] != "lo"
    lines = ["# Bytes on the wire per operation", ""]
    lines += [f"{ctx['date']} · commit `{ctx['commit']}` · mode {ctx['mode']} · database "
              f"{ctx['database']['server']} {ctx['database']['version']} · {cap['tshark']} · "
              f"{ctx['cpu']['count']} × {ctx['cpu']['model']}", ""]
    lines += [f"Link: {cap['link']}, interface `{cap['interface']}`. "
              + (NETNS_NOTE if netns else LOOPBACK_NOTE), ""]
    lines += ["Frames and frame bytes are what tshark records per packet (link header "
              "included); TCP payload is `tcp.len`; application payload is the body "
              "itself: " + "; ".join(f"{label(p)}: {s}"
                                     for p, s in ctx["payload_source"].items()) + ". "
              "→ is client to server, ← server to client.", ""]
    carried = ctx.get("records", {}).get("payload_bytes", {})  # lab.workload.payload_bytes, per operation
    if carried:
        lines += ["What each operation carries, the payload alone (lab/workload.py): "
                  + "; ".join(f"{op} " + (f"{c['games']:,} game{'s' * (c['games'] != 1)}, " if "games" in c else "")
                              + f"{c['json_bytes']:,} B JSON"
                              + (f", {c['protobuf_bytes']:,} B protobuf" if "protobuf_bytes" in c else "")
                              for op, c in carried.items() if c) + ".", ""]
    if results["problems"]:
        lines += ["**Problems:** " + "; ".join(results["problems"]), ""]
    if results.get("unread"):
        lines += ["**Application payload not read** (its column reads 0): "
                  + "; ".join(f"`{k}`: {why}" for k, why in results["unread"].items()), ""]

    lines += ["The study's Table 7 beside these figures (Kamiński et al. 2023) is in the report: "
              "`make report`, section \"Bytes on the wire\" (studies/kaminski2023/wire.py).", ""]

    # -- steady
    n = cap["operations_per_steady_window"]
    lines += ["## One operation on a kept-alive connection (steady state)", "",
              f"Mean per operation over {n} operations on one open connection after "
              f"{cap['warmup_operations']} warm-up operations; every packet on the service "
              "port in that window (ACKs included). No connection setup is in these rows "
              "(SYN packets seen: "
              f"{sum(c['syn_packets'] for ops in results['steady'].values() for c in ops.values())}).",
              ""]
    head = ["implementation", "operation", "frames →/←", "frame bytes →/←", "TCP payload →/←",
            "app payload →/←", "total frame bytes", "overhead vs app payload"]
    rows = []
    for op in results["operations"]:
        for name, ops in results["steady"].items():
            c = ops[op]
            total = c["total"]
            over = total["frame_bytes"] - total["app_payload"]
            rows.append([name, op, _pair(c, "frames"), _pair(c, "frame_bytes"),
                         _pair(c, "payload_bytes"), _pair(c, "app_payload"),
                         _n(total["frame_bytes"]), _n(over)])
    lines += _table(head, rows)

    # -- new connection
    lines += ["## One operation on a new connection (client made, one operation, closed)", "",
              "Each cell is the connection with the median total of several (their range is "
              "shown), so a stray PING or a RST instead of a FIN does not decide it. "
              "The connection's TCP stream, split by phase: setup = TCP handshake + "
              "application setup (preface and SETTINGS on HTTP/2, the HTTP upgrade for "
              "WebSocket); teardown = WebSocket close frames / HTTP/2 GOAWAY + FIN/ACK.", ""]
    head = ["implementation", "operation", "frames", "frame bytes →/←", "total", "range of the connections",
            "setup", "operation part", "teardown", "TCP payload →/←", "app payload →/←"]
    rows = []
    for op in results["operations"]:
        for name, ops in results["new_connection"].items():
            c = ops[op]
            t = c["total"]
            samples = c.get("samples_frame_bytes") or [t["total"]["frame_bytes"]]
            rows.append([name, op, _n(t["total"]["frames"]), _pair(t, "frame_bytes"),
                         _n(t["total"]["frame_bytes"]), f"{_n(samples[0])}–{_n(samples[-1])} ({len(samples)})",
                         _n(c["setup"]["total"]["frame_bytes"]),
                         _n(c["phases"]["operation"]["total"]["frame_bytes"]),
                         _n(c["teardown"]["total"]["frame_bytes"]),
                         _pair(t, "payload_bytes"), _pair(t, "app_payload")])
    lines += _table(head, rows)

    lines += ["## Connection setup and teardown", "",
              "From the fetch-one connection of each implementation: frames / frame bytes, "
              "→ and ←.", ""]
    head = ["implementation", "TCP handshake", "application setup", "application teardown",
            "FIN/ACK"]
    rows = []
    for name, ops in results["new_connection"].items():
        ph = ops["fetch-one"]["phases"] if "fetch-one" in ops else next(iter(ops.values()))["phases"]
        cells = []
        for phase in ("tcp_setup", "app_setup", "app_teardown", "tcp_teardown"):
            s = ph[phase]
            cells.append(f"{_n(s['to_server']['frames'])}/{_n(s['to_server']['frame_bytes'])} → "
                         f"{_n(s['to_client']['frames'])}/{_n(s['to_client']['frame_bytes'])} ←")
        rows.append([name, *cells])
    lines += _table(head, rows)
    lines += ["Application setup bytes shared with an operation's segment count as bytes only "
              "(frame 0); pure ACKs count with the phase of the data they follow.", ""]

    # -- compression
    rows_c = compression_rows(results)
    if rows_c or (results.get("compression") or {}).get("unsupported"):
        lines += compression_markdown(results, rows_c)

    # -- database
    if cap.get("database_interface", "lo") is None:
        lines += ["The service ↔ MongoDB traffic was not captured (`--no-database`).", ""]
        lines += [f"Capture {cap['capture_seconds']} s; whole run {ctx.get('elapsed_seconds', '?')} s.", ""]
        return "\n".join(lines)
    lines += ["## Service ↔ MongoDB for the same operations", "",
              "The service's (or, for `direct`, the in-process pymongo baseline's) database "
              "traffic in the same windows, on connections that carry CRUD commands "
              "(monitoring hello/isMaster connections excluded); → is service to MongoDB. "
              "Kept-alive: mean per operation; new connection: everything in that "
              "operation's window.", ""]
    head = ["implementation", "operation", "kept-alive frames →/←", "frame bytes →/←",
            "TCP payload →/←", "total frame bytes", "new-connection op: frame bytes"]
    rows = []
    for op in results["operations"]:
        for name, ops in results["database"].items():
            c = ops[op]["steady"]
            newc = ops[op].get("new_connection")
            rows.append([name, op, _pair(c, "frames"), _pair(c, "frame_bytes"),
                         _pair(c, "payload_bytes"), _n(c["total"]["frame_bytes"]),
                         _n(newc["total"]["frame_bytes"]) if newc else "–"])
    lines += _table(head, rows)
    lines += [f"Capture {cap['capture_seconds']} s; whole run {ctx.get('elapsed_seconds', '?')} s.",
              ""]
    return "\n".join(lines)


def _games(results: dict[str, Any], op: str) -> int | None:
    carried = results.get("context", {}).get("records", {}).get("payload_bytes", {}).get(op) or {}
    return carried.get("games")


def compression_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each implementation's kept-alive bytes per call without compression beside its subject on
    each compressed value of the axis (rest/go_nethttp beside rest/go_nethttp+gzip), per operation:
    frame bytes each way and in all, the application payload, and compressed ÷ uncompressed."""
    axis = results.get("compression") or {}
    values = axis.get("values") or []
    steady = results["steady"]
    out = []
    for name in steady:
        if "+" in name:
            continue
        for value in values[1:]:
            other = f"{name}+{value}"
            if other not in steady:
                continue
            for op in results["operations"]:
                plain, packed = steady[name].get(op), steady[other].get(op)
                if not plain or not packed:
                    continue
                total_plain, total_packed = plain["total"]["frame_bytes"], packed["total"]["frame_bytes"]
                out.append({
                    "implementation": name, "subject": other, "protocol": results["protocols"].get(name, ""),
                    "value": value, "operation": op, "games": _games(results, op),
                    "frame_bytes": {"identity": total_plain, value: total_packed},
                    "to_server": {"identity": plain["to_server"]["frame_bytes"],
                                  value: packed["to_server"]["frame_bytes"]},
                    "to_client": {"identity": plain["to_client"]["frame_bytes"],
                                  value: packed["to_client"]["frame_bytes"]},
                    "app_payload": {"identity": plain["total"]["app_payload"], value: packed["total"]["app_payload"]},
                    "ratio": total_packed / total_plain if total_plain else None})
    return out


def protocol_ratios(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float, int]]:
    """(protocol, operation) -> the smallest and largest compressed ÷ uncompressed ratio of its
    implementations, and how many there were."""
    found: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r["ratio"] is not None:
            found.setdefault((r["protocol"], r["operation"]), []).append(r["ratio"])
    return {k: (min(v), max(v), len(v)) for k, v in found.items()}


def compression_markdown(results: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    axis = results.get("compression") or {}
    lines = ["## With and without compression (kept-alive, per call)", "",
             "Each implementation beside its subject on the compression axis (lab/axes.py: each protocol's "
             "own mechanism, negotiated by the lab's client): frame bytes per call on an open connection, "
             "both directions, link headers included; the ratio is compressed ÷ uncompressed.", ""]
    head = ["protocol", "implementation", "operation", "games", "frame bytes → / ← (identity)",
            "frame bytes → / ← (compressed)", "total identity", "total compressed", "compressed ÷ identity"]
    body = [[label(r["protocol"]), r["implementation"], r["operation"], _n(r["games"]) if r["games"] else "–",
             f"{_n(r['to_server']['identity'])} / {_n(r['to_client']['identity'])}",
             f"{_n(r['to_server'][r['value']])} / {_n(r['to_client'][r['value']])}",
             _n(r["frame_bytes"]["identity"]), _n(r["frame_bytes"][r["value"]]),
             f"{r['ratio']:.3f}" if r["ratio"] is not None else "–"] for r in rows]
    lines += _table(head, body)
    per = protocol_ratios(rows)
    if per:
        lines += ["Per protocol, compressed ÷ identity (the range of its implementations): "
                  + "; ".join(f"{label(p)} {op} {lo:.2f}" + (f"–{hi:.2f}" if hi - lo >= 0.005 else "")
                              + f" ({n})" for (p, op), (lo, hi, n) in per.items()) + ".", ""]
    unsupported = axis.get("unsupported") or {}
    if unsupported:
        lines += ["Could not compress (their manifests' `[unsupported]`):", ""]
        lines += [f"- `{name}`: {why}" for name, why in unsupported.items()] + [""]
    return lines


def rows_csv(results: dict[str, Any]) -> str:
    out = io.StringIO()
    fields = ["section", "implementation", "protocol", "operation", "phase", "direction",
              "frames", "frame_bytes", "payload_bytes", "app_payload"]
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    protocols = {**results["protocols"], "direct": "direct"}

    def emit(section: str, name: str, op: str, phase: str, cell: dict[str, Any]) -> None:
        for direction in (*DIRECTIONS, "total"):
            writer.writerow({"section": section, "implementation": name,
                             "protocol": protocols.get(name, ""), "operation": op,
                             "phase": phase, "direction": direction,
                             **{k: round(v, 2) for k, v in cell[direction].items()}})
    for name, ops in results["steady"].items():
        for op, c in ops.items():
            emit("steady_per_operation", name, op, "all", c)
    for name, ops in results["new_connection"].items():
        for op, c in ops.items():
            emit("new_connection", name, op, "total", c["total"])
            for phase in PHASES:
                emit("new_connection", name, op, phase, c["phases"][phase])
    for name, ops in results["database"].items():
        for op, c in ops.items():
            emit("database_steady_per_operation", name, op, "all", c["steady"])
            if "new_connection" in c:
                emit("database_new_connection", name, op, "all", c["new_connection"])
    return out.getvalue()


def write(results: dict[str, Any], out_dir: Path, stem: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, text in (("md", markdown(results)), ("csv", rows_csv(results))):
        path = out_dir / f"{stem}.{suffix}"
        path.write_text(text)
        paths.append(path)
    # the report and lab.stats.compare know the fixed name wire.json (wire-netns.json): no date in it
    data = {k: v for k, v in results.items() if k != "context"}
    paths.append(lab_results.write("capture", stem, results["context"], data, out_dir, stamped=False))
    return paths
