"""Bytes on the wire per pushed event, each way a protocol carries a push feed
(its descriptor's `push`: clients/protocols.py PushWay, those with a capture
label), the stream's setup apart (python -m capture.push; `make capture`).

For every implementation that serves `subscribe`, each way its protocol
carries a feed, and each batch size, tshark records two whole subscriptions to
the synthetic feed at Timeplus's pace (1,000 messages/s), one of SHORT and one
of LONG messages, each from connect to close in its own time window. Per
message = (bytes of the long one - bytes of the short one) / (LONG - SHORT):
the setup (TCP handshake, request and response headers or the subscribe
reply, the ': subscribed' line) and the teardown cancel out, whatever TCP
segment they share with a message. Setup + teardown = short - SHORT x per
message. Both as TCP payload and as frame bytes, each way, beside the
application's own bytes per message (as its client counts them:
clients.base.Event.wire_bytes): the difference is what the framing adds
(the way's `framing`, in the report).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capture.tshark import Capture, between, ensure_tshark, tally
from capture.wire import service_port
from clients.protocols import PushWay, get
from lab import results as lab_results
from lab import settings
from lab.context import run_context
from lab.registry import select
from lab.stack import running_lab

SHORT, LONG = 20, 220
BATCHES = (1, 50)
RATE = 1000  # messages per second: Timeplus's 1 ms interval
SETTLE = 0.3  # seconds between windows, so no packet straddles two
REPEATS = 3  # pairs per cell; the cell is the pair with the median bytes per message


def _variants(protocol: str) -> list[PushWay]:
    """The ways the capture measures: those of the protocol's with a capture label."""
    return [w for w in get(protocol).push if w.capture_label]


def _subscription(lab: Any, name: str, way: PushWay, batch: int, count: int) -> tuple[float, float, list[int]]:
    t0 = time.time()
    client = lab.client(name, **way.client_options)  # the way's options, e.g. HTTP/2
    with client.subscribe("synthetic", batch=batch, rate=RATE, count=count) as stream:
        app = [e.wire_bytes for e in stream if e.event == "synthetic"]
    client.close()
    time.sleep(SETTLE)
    assert len(app) == count, (name, way.key, len(app))
    return t0, time.time(), app


def measure(names: Sequence[str] | None = None, batches: Sequence[int] = BATCHES,
            progress: Any = print) -> dict[str, Any]:
    ensure_tshark()
    chosen = [i.name for i in select(names) if i.serves("subscribe")]
    rows: list[dict[str, Any]] = []
    with running_lab(chosen, "native") as lab:
        ports = {name: service_port(lab.endpoints[name]) for name in chosen}
        windows = []
        with Capture(list(ports.values())) as cap:
            time.sleep(SETTLE)
            for name in chosen:
                protocol = lab.implementation(name).protocol
                for way in _variants(protocol):
                    for batch in batches:
                        progress(f"{name} {way.capture_label} batch {batch} ...")
                        for _ in range(REPEATS):
                            short = _subscription(lab, name, way, batch, SHORT)
                            long = _subscription(lab, name, way, batch, LONG)
                            windows.append((name, protocol, way.capture_label, batch, short, long))
        for name, protocol, variant, batch, short, long in windows:
            port = ports[name]
            s, l_ = (tally(between(cap.packets, w[0], w[1]), port) for w in (short, long))
            n = LONG - SHORT
            row: dict[str, Any] = {"implementation": name, "protocol": protocol, "transport": variant,
                                   "batch": batch, "app_bytes_per_message": sum(long[2]) / LONG}
            for direction in ("to_server", "to_client"):
                ts, tl = getattr(s, direction), getattr(l_, direction)
                per = {"frames": (tl.frames - ts.frames) / n, "frame_bytes": (tl.frame_bytes - ts.frame_bytes) / n,
                       "payload_bytes": (tl.payload_bytes - ts.payload_bytes) / n}
                row[f"per_message_{direction}"] = per
                row[f"setup_teardown_{direction}"] = {k: getattr(ts, k) - SHORT * v for k, v in per.items()}
            row["per_event_to_client_payload"] = row["per_message_to_client"]["payload_bytes"] / batch
            rows.append(row)
        rows = _medians(rows)
        context = run_context(lab.mode, lab.database, lab.implementations)
    return {"rows": rows, "context": context, "short": SHORT, "long": LONG, "rate": RATE}


def _medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault((row["implementation"], row["transport"], row["batch"]), []).append(row)
    out = []
    for repeats in cells.values():
        repeats.sort(key=lambda r: r["per_message_to_client"]["payload_bytes"])
        chosen = dict(repeats[len(repeats) // 2])
        chosen["per_message_to_client_range"] = [repeats[0]["per_message_to_client"]["payload_bytes"],
                                                 repeats[-1]["per_message_to_client"]["payload_bytes"]]
        out.append(chosen)
    return out


def table(results: dict[str, Any]) -> str:
    lines = ["| implementation | transport | batch | app B/message | TCP payload B/message (to client) "
             "| frame B/message | frames/message | TCP payload B/event | setup+teardown payload B (both ways) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results["rows"]:
        down = r["per_message_to_client"]
        setup = r["setup_teardown_to_client"]["payload_bytes"] + r["setup_teardown_to_server"]["payload_bytes"]
        lines.append(f"| {r['implementation']} | {r['transport']} | {r['batch']} | {r['app_bytes_per_message']:.0f} "
                     f"| {down['payload_bytes']:.1f} | {down['frame_bytes']:.1f} | {down['frames']:.2f} "
                     f"| {r['per_event_to_client_payload']:.1f} | {setup:.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m capture.push", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="implementations to capture")
    parser.add_argument("--out", default=str(settings.RESULTS / "capture"))
    args = parser.parse_args(argv)
    results = measure(args.only)
    out = Path(args.out)
    data = {k: v for k, v in results.items() if k != "context"}
    lab_results.write("push-capture", "push", results["context"], data, out)
    print(table(results))
    print(f"wrote {out / 'push-latest.json'}")


if __name__ == "__main__":
    main()
