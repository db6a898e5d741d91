"""The report's push section (report/push.py) and the push studies' sections
(studies/timeplus, studies/pathan) from a small real result file:
tests/data/push-quick.json is `python -m load.push --quick --impl
sse/go_nethttp ws/go_gorilla` (now `python -m studies push`) as measured on
the lab's machine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from report import push as push_report
from report.inputs import Inputs
from report.page import Page, to_markdown
from studies import get
from studies.common import eps

RESULT = Path(__file__).parent / "data" / "push-quick.json"
CAPTURE = Path(__file__).parent / "data" / "push-capture.json"


def render(results: Path) -> str:
    page = Page("t")
    push_report.section(page, results)
    for study in ("timeplus", "pathan"):
        get(study).report().section(page, Inputs(results))
    return to_markdown(page, results / "figs", "figs")


def _row(text: str, *starts: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| " + " | ".join(starts) + " |"))


def test_missing_result_names_the_command(tmp_path):
    assert "run `python -m studies push`" in render(tmp_path)


def test_timeplus_and_pathan_beside_the_lab(tmp_path):
    (tmp_path / "load").mkdir()
    shutil.copy(RESULT, tmp_path / "load" / "push-latest.json")
    data = json.loads(RESULT.read_text())
    text = render(tmp_path)
    rows = {(r["implementation"], r["scenario"], r["transport"], r["clients"], r["batch"]): r for r in data["rows"]}

    # Test I and II: one row per implementation and transport, events/s (client / server CPU) per point
    ws400 = rows[("ws/go_gorilla", "timeplus-batch", "ws", 10, 400)]
    row = _row(text, "ws/go_gorilla", "WS")
    assert f"{ws400['events_per_s'] / 1e6:.2f} M ({ws400['client_cpu_percent']:.0f} / " \
           f"{ws400['server_cpu_percent']:.0f} %" in row
    assert _row(text, "sse/go_nethttp", "SSE h2c") and _row(text, "sse/go_nethttp", "SSE h1")
    assert "| offered |  | 10 k | 500 k | 4.00 M |" in text  # 10 subscriptions × batch × 1,000/s
    for r in (r for r in data["rows"] if r["scenario"].startswith("timeplus")):  # a run's errors in its cell
        mark = "*" if r["client_bound"] else ""
        cell = (f"{eps(r['events_per_s'])}{mark} "
                f"({r['client_cpu_percent']:.0f} / {r['server_cpu_percent']:.0f} %")
        assert (cell + f", {r['errors']} err)" if r["errors"] else cell + ")") in text
    # Timeplus's figures from its text, beside the lab's best
    best_sse_b400 = max(r["events_per_s"] for k, r in rows.items() if k[1] == "timeplus-batch" and k[4] == 400
                        and k[2].startswith("sse"))
    assert f"| SSE, batch 400, 10 subscriptions | 3.00 M | {best_sse_b400 / 1e6:.2f} M |" in text
    assert "M1 Pro" in text and "1 ms interval" in text and "h2c instead of HTTP/2 over TLS" in text

    # Pathan: its Table 3 and 5 figures beside the lab's mean ± sd, p50, p99 and CPU at the same client count
    ws100 = rows[("ws/go_gorilla", "pathan", "ws", 100, 1)]
    lat = ws100["latency_ms"]
    row = _row(text, "100", "WebSocket")
    assert "| 0.57 ± 0.16 | 4.0 | ws/go_gorilla |" in row
    assert f"| {lat['mean']:.2f} ± {lat['sd']:.2f} | {lat['p50']:.2f} | {lat['p99']:.2f} |" in row
    assert f"| {ws100['server_cpu_percent']:.1f} |" in row
    assert "| 16.78 ± 4.08 | 46.6 | sse/go_nethttp |" in _row(text, "100", "REST polling")
    assert "| 3.56 ± 3.11 | 2.7 | sse/go_nethttp |" in _row(text, "10", "SSE")
    start = data["context"]["push"]["load_average_start"][0]
    assert f"load average was {start:.1f}" in text


def test_bytes_per_pushed_event_from_make_capture(tmp_path):
    """tests/data/push-capture.json: `make capture`'s push rows (capture/push.py) as
    measured on the lab's machine, its context trimmed."""
    (tmp_path / "capture").mkdir()
    shutil.copy(CAPTURE, tmp_path / "capture" / "push-latest.json")
    data = json.loads(CAPTURE.read_text())
    text = render(tmp_path)
    assert "run `python -m studies push`" in text  # no load result: the wire table still shows
    for r1 in (r for r in data["rows"] if r["batch"] == 1):
        r50 = next(r for r in data["rows"] if (r["implementation"], r["transport"], r["batch"])
                   == (r1["implementation"], r1["transport"], 50))
        row = _row(text, r1["implementation"], r1["transport"])
        frames50 = r50["per_message_to_client"]["frame_bytes"] / 50
        assert (f"| {r1['per_event_to_client_payload']:,.1f} / {r1['per_message_to_client']['frame_bytes']:,.1f} "
                f"| {r50['per_event_to_client_payload']:,.1f} / {frames50:,.1f} "
                f"| {r1['setup_teardown_to_client']['frame_bytes']:,.0f} |") in row
    assert f"a {data['short']}- and a {data['long']}-message subscription differenced" in text
    # the framing of each captured way, from its protocol's descriptor (clients/protocols.py PushWay)
    from clients.protocols import get
    for protocol, transport in {(r["protocol"], r["transport"]) for r in data["rows"]}:
        way = next(w for w in get(protocol).push if w.capture_label == transport)
        assert way.framing and way.framing in text, (protocol, transport)


def test_no_capture_names_the_command(tmp_path):
    assert "run `make capture`" in render(tmp_path)


def test_push_section_gives_events_per_second_and_per_event_latency_per_point(tmp_path):
    """report/push.py: per scenario, each language's ways side by side, every point's events/s with its
    latency p50 / p99 (ms) from the run's own row."""
    (tmp_path / "load").mkdir()
    shutil.copy(RESULT, tmp_path / "load" / "push-latest.json")
    data = json.loads(RESULT.read_text())
    text = render(tmp_path)
    scenarios = list(dict.fromkeys(r["scenario"] for r in data["rows"]))
    for r in data["rows"]:
        language = r["implementation"].split("/")[1].split("_")[0]
        start = f"| {language} | {get_way(r['transport'])} | {r['implementation']} |"
        rows = [line for line in text.splitlines() if line.startswith(start)]  # one per scenario it ran in
        ran = [s for s in scenarios if any(o["scenario"] == s and o["implementation"] == r["implementation"]
                                           and o["transport"] == r["transport"] for o in data["rows"])]
        assert len(rows) == len(ran), (start, rows)
        row = rows[ran.index(r["scenario"])]
        lat = r["latency_ms"]
        assert f"{eps(r['events_per_s'])} · {lat['p50']:.2f} / {lat['p99']:.2f}" in row, (r, row)
    header = next(line for line in text.splitlines() if line.startswith("| language | way | implementation |"))
    assert "| 10 sub × batch 1 | 10 sub × batch 50 | 10 sub × batch 400 |" in header


def get_way(key: str) -> str:
    from clients.protocols import push_way
    return push_way(key).short


def test_sse_over_tls_rows_and_pathans_memory_and_machine_cpu_are_shown(tmp_path):
    """A run with SSE over HTTP/2 over TLS says so instead of h2c's stand-in; Pathan's rows show the
    machine's CPU and each service process's memory beside its Tables 5 and 6."""
    data = json.loads(RESULT.read_text())
    h2 = [r for r in data["rows"] if r["transport"] == "sse-h2c"]
    assert h2
    for r in h2:
        r.update(transport="sse-h2", implementation=r["implementation"] + "+h2")
    pathan = next(r for r in data["rows"]
                  if r["scenario"] == "pathan" and r["transport"] == "ws" and r["clients"] == 100)
    pathan.update(machine_cpu_percent=63.5, server_rss_bytes=60 * 2**20,
                  server_processes=[{"pid": 1, "name": "node", "rss_bytes": 60 * 2**20}])
    (tmp_path / "load").mkdir()
    (tmp_path / "load" / "push-latest.json").write_text(json.dumps(data))
    text = render(tmp_path)
    assert "SSE over HTTP/2 over TLS 1.3 (h2, as Timeplus's tab" in text and "h2c instead of" not in text
    row = _row(text, "100", "WebSocket")
    assert "| 63.5 | 2,153 ± 39 | 60.0 |" in row   # machine CPU; Pathan's Table 6 at 100 clients; the lab's RSS, MB
