"""The instruments along issue 50's axes beside the sweep: the payload capture with and without
compression (capture --axis/--operations), throughput across network paths (load --path),
connection setup per path (benchmarks/connection_setup.py), and the studies' figures beside them
(studies/kaminski2023/axes.py, studies/feathers/axes.py) — their sentences computed from synthetic
data with known answers. Two runs across a real path (root) are made to fail and must leave the
host as they found it. No timing is asserted."""

from __future__ import annotations

import psutil
import pytest

from benchmarks import connection_setup
from capture import report as capture_report
from capture.wire import axis_subjects, compression_context
from lab import registry
from load import summary
from load.__main__ import parser as load_parser
from studies import get as study
from studies.feathers import axes as feathers_axes
from studies.kaminski2023 import axes as kaminski_axes
from sweep import grid
from tests.test_netpath import _host_state, can_make_paths  # noqa: F401  (a fixture)

# --- one implementation per protocol --------------------------------------------------------


def test_one_per_protocol_is_the_sweeps_choice_one_per_protocol_go_first():
    chosen = registry.one_per_protocol()
    assert chosen == grid.default_implementations()
    protocols = [registry.variant(n).protocol for n in chosen]
    assert len(protocols) == len(set(protocols))
    by_protocol = dict(zip(protocols, chosen, strict=True))
    assert by_protocol["rest"] == "rest/go_nethttp"          # Go where the protocol has a Go implementation
    assert registry.variant(by_protocol["soap"]).language == "python"   # else the first in the registry's order


# --- the payload capture with and without compression ---------------------------------------

def test_axis_subjects_are_every_implementation_and_its_values_on_that_axis_alone():
    names = axis_subjects("compression")
    assert "rest/go_nethttp" in names and "rest/go_nethttp+gzip" in names
    assert "grpc/node_grpcjs" in names and "grpc/node_grpcjs+gzip" not in names   # its manifest: unsupported
    assert not any("+gthread" in n or "+tls" in n for n in names)                 # no other axis' subjects
    assert not any(n.startswith("sse/") for n in names)                          # no CRUD calls
    with pytest.raises(ValueError, match="no variant axis 'colour'"):
        axis_subjects("colour")


def test_who_could_not_compress_is_read_from_the_manifests():
    impls = registry.select(axis_subjects("compression"))
    found = compression_context(impls)
    assert found["values"] == ["identity", "gzip"]
    assert set(found["unsupported"]) == {"grpc/node_grpcjs", "socketio/node_socketio", "connect/python_connectrpc"}
    assert "never compresses a reply" in found["unsupported"]["grpc/node_grpcjs"]
    assert found["captured_values"]["rest/go_nethttp"] == ["gzip"]
    assert found["captured_values"]["grpc/node_grpcjs"] == []


def _cell(up: float, down: float, app_down: float) -> dict:
    return {"to_server": {"frame_bytes": up, "app_payload": 0},
            "to_client": {"frame_bytes": down, "app_payload": app_down},
            "total": {"frame_bytes": up + down, "app_payload": app_down}}


def _wire() -> dict:
    return {
        "operations": ["fetch-1", "fetch-100"], "protocols": {"rest/a": "rest", "rest/a+gzip": "rest", "grpc/b": "grpc",
                                                             "grpc/c": "grpc", "grpc/c+gzip": "grpc"},
        "steady": {"rest/a": {"fetch-1": _cell(200, 1800, 1500), "fetch-100": _cell(200, 155_800, 155_000)},
                   "rest/a+gzip": {"fetch-1": _cell(190, 1010, 700), "fetch-100": _cell(190, 29_810, 29_000)},
                   "grpc/b": {"fetch-1": _cell(100, 1000, 900), "fetch-100": _cell(100, 93_900, 93_000)},
                   "grpc/c": {"fetch-1": _cell(100, 1000, 900), "fetch-100": _cell(100, 93_900, 93_000)},
                   "grpc/c+gzip": {"fetch-1": _cell(110, 990, 800), "fetch-100": _cell(110, 28_890, 28_000)}},
        "new_connection": {"rest/a": {"fetch-1": {"total": {"total": {"frame_bytes": 2600}}}}},
        "compression": {"axis": "compression", "values": ["identity", "gzip"],
                        "unsupported": {"grpc/b": "its library never compresses a reply"}},
        "context": {"records": {"payload_bytes": {"fetch-1": {"games": 1}, "fetch-100": {"games": 100}}}}}


def test_compression_rows_set_each_implementation_beside_its_compressed_subject():
    rows = capture_report.compression_rows(_wire())
    assert [(r["implementation"], r["operation"]) for r in rows] == [
        ("rest/a", "fetch-1"), ("rest/a", "fetch-100"), ("grpc/c", "fetch-1"), ("grpc/c", "fetch-100")]
    rest100 = rows[1]
    assert rest100["ratio"] == pytest.approx(30_000 / 156_000)
    assert rest100["games"] == 100 and rest100["frame_bytes"] == {"identity": 156_000, "gzip": 30_000}
    assert rows[2]["ratio"] == pytest.approx(1.0)   # a small call: gzip's framing eats what it saves
    per = capture_report.protocol_ratios(rows)
    assert per[("grpc", "fetch-100")] == pytest.approx((29_000 / 94_000, 29_000 / 94_000, 1))
    text = "\n".join(capture_report.compression_markdown(_wire(), rows))
    assert "Could not compress" in text and "`grpc/b`: its library never compresses a reply" in text


def test_the_capture_refuses_bad_options_before_it_starts_anything(capsys):
    from capture.__main__ import main
    for argv, message in ((["--operations", "fetch-5000"], "unknown operation 'fetch-5000'"),
                          (["--axis", "compression", "--only", "rest/go_nethttp"], "one or the other"),
                          (["--new-connections", "-1"], "0 or more"),
                          (["--operations", "fetch-1", "--name", "../x"], "a name, not a path")):
        with pytest.raises(SystemExit):
            main(argv)
        assert message in capsys.readouterr().err


# --- load across network paths ------------------------------------------------------------

def test_load_takes_paths_by_their_names_and_refuses_what_is_not_one(capsys):
    args = load_parser().parse_args(["--per-protocol", "--path", "veth", "rtt20ms", "--clients", "50"])
    assert args.path == ["veth", "rtt20ms"] and args.per_protocol
    with pytest.raises(SystemExit):
        load_parser().parse_args(["--path", "20ms"])
    assert "not a network path" in capsys.readouterr().err


def test_load_refuses_netns_workers_with_a_path_before_starting_anything(monkeypatch):
    from load import sweep
    # run() sets the measurement's settings in os.environ first: kept out of this worker's later tests
    # (a database without a fsync at commit failed test_faults' kill -9 test after it on the host worker)
    monkeypatch.setattr(sweep.settings, "measuring", lambda: None)
    args = load_parser().parse_args(["--netns", "--path", "rtt20ms"])
    with pytest.raises(SystemExit, match="--netns and --path"):
        sweep.run(args)


def _closed(clients: int, rps: float, valid: bool = True) -> dict:
    return {"clients": clients, "model": "closed", "throughput_rps": rps, "valid": valid, "errors": {},
            "generator_cpu_percent": 40.0,
            "invalid_reasons": [] if valid else ["the generator used 90 % CPU"],
            "latency_us": {"p50": 21_000, "p99": 30_000, "count": 5000},
            "resources": {"rest/a": {"cpu_us_per_request": 50, "rss_peak_bytes": 2 ** 20}}}


def test_path_rows_set_throughput_beside_the_measured_round_trip_and_the_closed_models_ceiling():
    results = {"rest/a@rtt20ms": {"implementation": "rest/a", "path": "rtt20ms", "closed": [_closed(50, 2000.0)]},
               "rest/a@veth": {"implementation": "rest/a", "path": "veth", "closed": [_closed(50, 9000.0, False)]}}
    paths = {"rtt20ms": {"set": {"rtt_ms": 20, "rate_mbit": None}, "measured": {"connect_rtt_ms": 20.0},
                         "mechanism": "nfqueue-emulator"},
             "veth": {"set": {"rtt_ms": 0, "rate_mbit": None}, "measured": {"connect_rtt_ms": 0.05},
                      "mechanism": "veth"}}
    rows = summary.path_rows(results, paths)
    far = rows[0]
    assert far[:5] == ["rest/a@rtt20ms", "rtt20ms", "20", "20.000", "50"]
    assert far[8] == "2,500" and far[9] == "0.80" and far[10] == "yes"   # 50 clients ÷ 20 ms = 2,500/s
    assert rows[1][10].startswith("no: the generator used")
    cells = summary.cells("rest/a@rtt20ms", results["rest/a@rtt20ms"])   # its resources by its implementation
    assert cells["service_cpu_us"] == "50"
    assert "measured connect rtt 20.0 ms" in summary.path_table(results, paths)


# --- connection setup ------------------------------------------------------------------------

def test_setup_is_new_less_steady_paired_by_round():
    samples = {"tcp": [0.020, 0.021, 0.022, 0.020, 0.021], "kernel_rtt_ms": [20.0, 20.1, None, 20.0, 20.2],
               "made": [0.040, 0.041, 0.042, 0.040, 0.041], "first": [0.021, 0.020, 0.022, 0.021, 0.020],
               "steady": [0.020, 0.021, 0.020, 0.021, 0.020]}
    found = connection_setup.summarize(samples, rtt_ms=20.0)
    # per round: made + first - steady = 41, 40, 44, 40, 41 ms; less tcp: 21, 19, 22, 20, 20
    assert found["setup"]["median_ms"] == pytest.approx(41.0)
    assert found["beyond_tcp"]["median_ms"] == pytest.approx(20.0)
    assert found["setup"]["n"] == 5 and found["setup"]["ci95_ms"][0] <= 41.0 <= found["setup"]["ci95_ms"][1]
    assert found["in_round_trips"]["setup"] == pytest.approx(41.0 / 20.0)
    assert found["tcp_kernel_rtt_ms"] == pytest.approx(20.05)
    assert "in_round_trips" not in connection_setup.summarize(samples, rtt_ms=None)


@pytest.mark.parametrize(("endpoint", "expected"), [
    ("http://198.18.0.2:20000/", ("198.18.0.2", 20000)), ("198.18.0.2:20001", ("198.18.0.2", 20001)),
    ("ws://127.0.0.1:8080/ws", ("127.0.0.1", 8080)), ("http://127.0.0.1:9/socket.io/", ("127.0.0.1", 9))])
def test_the_dialled_host_and_port_of_every_endpoint_form(endpoint, expected):
    assert connection_setup.host_port(endpoint) == expected


# --- the studies beside the axes -----------------------------------------------------------

def _sweep_cell(games: int, pairs: list[tuple[str, str, float, float, float]]) -> dict:
    subjects = {"rest/go_x": {"protocol": "rest", "language": "go"},
                "grpc/go_y": {"protocol": "grpc", "language": "go"}}
    return {"family": "fetch", "path": "loopback", "variant": "identity", "games": games, "subjects": subjects,
            "pairs": [{"a": a, "b": b, "ratio": r, "ci": [lo, hi]} for a, b, r, lo, hi in pairs]}


def test_table_6_beside_the_payload_axis_says_what_the_intervals_say():
    kaminski = study("kaminski2023").published()
    sweep = {"cells": [_sweep_cell(1, [("grpc/go_y", "rest/go_x", 1.10, 1.05, 1.15)]),
                       _sweep_cell(100, [("rest/go_x", "grpc/go_y", 1.02, 0.95, 1.10)]),   # stated the other way
                       _sweep_cell(1000, [("grpc/go_y", "rest/go_x", 0.60, 0.55, 0.66)])]}
    grpc = next(r for r in kaminski_axes.table_6(kaminski, sweep) if r["protocol"] == "grpc")
    assert grpc["study_ratio"] == pytest.approx(11611 / 19728)
    at100 = next(p for p in grpc["points"] if p["games"] == 100)
    assert at100["ratio"] == pytest.approx(1 / 1.02) and at100["ci"] == pytest.approx([1 / 1.10, 1 / 0.95])
    text = grpc["text"]
    assert "the lab's interval includes 1: it cannot tell gRPC from REST" in text
    assert "the study's 0.59 lies below the lab's interval" in text
    assert "excludes 1 at 1, 1,000 games" in text
    assert "inside the lab's interval at 1,000 games" in text     # 0.589 in 0.55–0.66
    assert "(go)" in text                                         # the lab's implementations are not the study's
    graphql = next(r for r in kaminski_axes.table_6(kaminski, sweep) if r["protocol"] == "graphql")
    assert "no payload cell with both" in graphql["text"]


def test_table_7_beside_the_payload_capture_computes_the_factors_and_orders():
    kaminski = study("kaminski2023").published()
    def per_call(*values: float) -> dict:
        return {op: {"total": {"frame_bytes": v}} for op, v in zip(("fetch-1", "fetch-100"), values, strict=True)}
    wire = {"operations": ["fetch-1", "fetch-100"],
            "steady": {"rest/a": per_call(1768, 156_000), "grpc/b": per_call(1000, 94_000)},
            "new_connection": {"rest/a": {"fetch-1": {"total": {"total": {"frame_bytes": 3536 / 2}}}}}}
    found = kaminski_axes.table_7(kaminski, wire, {"rest": "rest/a", "grpc": "grpc/b"})
    rest = next(r for r in found["rows"] if r["protocol"] == "rest")
    assert rest["steady"] == {1: 1768, 100: 156_000}
    text = "\n".join(found["text"])
    assert "REST fetch-one: the study 3,536 B, 2.00× the lab's 1-game fetch on a new connection" in text
    assert "first carries more than the study's record at 100 games" in text
    assert "gRPC ÷ REST bytes per call: the study 1.08 (fetch-one); the lab 0.57 at 1 games, 0.60 at 100 games" in text
    assert "GraphQL: not in the payload capture." in text


def test_feathers_long_run_row_is_105_against_26_ms_a_call():
    times = feathers_axes.study_call_times(study("feathers").published())
    assert times["http_ms"] == pytest.approx(100_000 / 950) and times["sio_ms"] == pytest.approx(100_000 / 3900)
    assert times["ratio"] == pytest.approx(3900 / 950)


def test_feathers_beside_the_round_trip_rows_pairs_by_round_and_states_the_interval():
    rounds = 9
    rest = {"made": [0.0001] * rounds, "first": [0.040] * rounds, "steady": [0.020] * rounds, "tcp": [0.02] * rounds}
    sio = {"made": [0.060] * rounds, "first": [0.020] * rounds, "steady": [0.0201] * rounds, "tcp": [0.02] * rounds}
    setup = {"paths": [{"path": "rtt20ms", "set": {"rtt_ms": 20}, "link": {"measured": {"connect_rtt_ms": 20.0}},
                        "subjects": {"rest/node_r": {"samples_s": rest, "new": {"median_ms": 40.1},
                                                     "steady": {"median_ms": 20.0}},
                                     "socketio/node_s": {"samples_s": sio, "new": {"median_ms": 80.0},
                                                         "steady": {"median_ms": 20.1}}}}]}
    times = feathers_axes.study_call_times(study("feathers").published())
    rows = feathers_axes.beside(times, setup, lambda n: n.split("/")[0], lambda p: p == "socketio",
                                lambda n: "node")
    (row,) = rows
    assert (row["http"], row["messaging"]) == ("rest/node_r", "socketio/node_s")
    assert row["new_http_over_messaging"]["ratio"] == pytest.approx(0.0401 / 0.0201)
    assert row["first_call_messaging_over_http"]["ratio"] == pytest.approx(0.080 / 0.0401)
    text = row["text"]
    assert "the study's 4.1× is 2.1× the first ratio (above its interval)" in text
    assert "2.0 for the new HTTP connection and its call, 1.0 for the messaging call" in text
    assert "socketio/node_s 2.00 [2.00–2.00]× HTTP's, slower (the interval excludes 1" in text


# --- across a real path: made to fail, nothing left behind ----------------------------------

def test_a_load_run_across_a_path_made_to_fail_leaves_nothing(can_make_paths, monkeypatch):  # noqa: F811
    from load import sweep
    before = _host_state()
    seen: list[int] = []

    def fail(lab, impl, s, args):
        seen.extend([*lab.pids.values(), lab.database.pid])
        assert lab.link and lab.link["namespace"] in _host_state()["netns"]
        raise RuntimeError("made to fail")
    monkeypatch.setattr(sweep, "sweep_one", fail)
    monkeypatch.setattr(sweep.settings, "measuring", lambda: None)   # the test process' database settings stay
    args = load_parser().parse_args(["--impl", "rest/go_nethttp", "--path", "veth", "--clients", "5",
                                     "--model", "closed", "--no-pin"])
    with pytest.raises(RuntimeError, match="made to fail"):
        sweep.run(args)
    assert seen and not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                            for p in seen)
    after = _host_state()
    assert {k: v for k, v in after.items() if k != "children"} == {k: v for k, v in before.items() if k != "children"}


def test_connection_setup_across_a_path_made_to_fail_leaves_nothing(can_make_paths, monkeypatch):  # noqa: F811
    from lab.axes import NetworkPath
    before = _host_state()
    calls = []

    def fail(call, operation):
        calls.append(1)
        if len(calls) > 3:   # a few steady calls made across the path, then a failure mid-run
            raise RuntimeError("made to fail")
        return 0.001
    monkeypatch.setattr(connection_setup, "steady_call", fail)
    with pytest.raises(RuntimeError, match="made to fail"):
        connection_setup.measure_path(NetworkPath.parse("rtt1ms"), ["rest/go_nethttp"], "fetch-1", 5, 1,
                                      progress=lambda m: None)
    after = _host_state()
    assert {k: v for k, v in after.items() if k != "children"} == {k: v for k, v in before.items() if k != "children"}


def test_the_connection_setup_command_refuses_what_it_cannot_measure(capsys):
    for argv, message in ((["--paths", "rtt20"], "not a network path"), (["--rounds", "2"], "at least 3"),
                          (["--operation", "fetch-one:huge"], "unknown operation")):
        with pytest.raises(SystemExit):
            connection_setup.main(argv)
        assert message in capsys.readouterr().err


def test_a_capture_that_lost_segments_is_told_by_its_sequence_gaps():
    from capture.tshark import Packet, missing_bytes

    def data(seq: int, length: int, stream: int = 0) -> Packet:
        return Packet(number=seq, time=0.0, frame_len=length + 66, stream=stream, src_port=80, dst_port=5000,
                      payload=length, ip_header=20, tcp_header=32, syn=False, ack=True, fin=False, rst=False, seq=seq)
    whole = [data(1, 1000), data(1001, 1000), data(2001, 500)]
    assert missing_bytes(whole) == 0
    assert missing_bytes([whole[0], whole[2]]) == 1000                 # the middle segment never reached the file
    assert missing_bytes([*whole, data(1001, 1000)]) == 0              # a retransmission is no loss
    assert missing_bytes([data(1, 10, stream=1), data(1, 10, stream=2)]) == 0   # each connection on its own
