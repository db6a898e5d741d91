"""The studies' claims as data (studies/<study>/published.json, lab/schemas/published.schema.json)
and the verdicts studies/claims.py computes: on synthetic results with known answers (agrees,
differs, not measured, invalid, an order whose interval holds 1), and every real claim checked
for a cell the lab can answer."""

from __future__ import annotations

import copy
import importlib.util
import json
import re

import jsonschema
import pytest

from lab import results
from lab.settings import ROOT
from studies import STUDIES, claims

SCHEMA = json.loads((results.SCHEMAS / "published.schema.json").read_text())
CONTEXT = {"date": "2026-12-03T10:40:00+00:00", "commit": "0" * 40}


def fig(of, value, unit="ms", statistic="mean", **condition):
    return {"of": of, "value": value, "unit": unit, "statistic": statistic, "condition": condition or {"clients": 1}}


# --- synthetic results ------------------------------------------------------------------------

IMPLS = {"grpc/python_grpcio": {"protocol": "grpc", "language": "python", "base": "grpc/python_grpcio"},
         "rest/python_flask": {"protocol": "rest", "language": "python", "base": "rest/python_flask",
                               "variant": {"workers": "gevent"}},
         "rest/python_flask+gthread": {"protocol": "rest", "language": "python", "base": "rest/python_flask",
                                       "variant": {"workers": "gthread"}}}
GRPC, REST = {"protocol": "grpc", "language": "python"}, {"protocol": "rest", "language": "python"}


def latency_run(tmp_path, ci, flagged=False, stored=("grpc/python_grpcio", "rest/python_flask"), rounds=None):
    """A latency result whose one pair (stored as a ÷ b) has ratio mid(ci) and interval ci; `rounds`:
    {subject: seconds per round, one a cycle, in order} kept as its rows' data_s."""
    a, b = stored
    ratio = (ci[0] + ci[1]) / 2
    rows = {name: {"median": 100.0, "median_ci95": [95.0, 105.0], **({"data_s": rounds[name]} if rounds else {})}
            for name in IMPLS}
    pair = {"a": a, "b": b, "ratio": ratio, "ci": list(ci), "relation": "?"}
    context = {**CONTEXT, "mode": "native", "implementations": IMPLS,
               "settings": {"benchmark": {"design": {"block": 1, "baseline": "direct", "baseline_visits": 4}}},
               "noise": {"flagged": flagged, "reasons": ["direct's insert median moved -30.4%"] if flagged else []}}
    results.write("latency", "native", context, {"results": {"fetch-100": rows},
                                                 "rankings": {"fetch-100": {"confidence": 0.99, "pairs": [pair]}}},
                  tmp_path / "benchmarks")
    return tmp_path


def order_claim(relation, a="gRPC", b=("REST",)):
    return {"id": "synthetic-order", "sentence": "gRPC protocol was definitely the fastest in this task.",
            "where": "Table 6", "figures": [fig("gRPC", 11611, "µs"), fig("REST", 19728, "µs")],
            "form": {"kind": "order", "a": a, "relation": relation, "b": list(b)},
            "lab": {"instrument": "latency", "operation": "fetch-100", "metric": "median",
                    "subjects": {"gRPC": GRPC, "REST": REST}},
            "explanation": "the lab's stack is not the study's"}


def ratio_claim(a="REST", b="gRPC"):
    claim = order_claim("<")
    claim["form"] = {"kind": "ratio", "a": a, "b": b}
    return claim


def fernando_run(tmp_path, means, valid=(True, True, True), clients=1000):
    rows = [{"implementation": "ws/node_ws", "clients": clients, "run": i + 1, "valid": ok,
             "invalid_reasons": [] if ok else ["the generator used 97 % of its core (limit 60 %)"],
             "latency_ms": {"mean": m, "median": m, "stddev": 1.0, "count": 999}}
            for i, (m, ok) in enumerate(zip(means, valid, strict=True))]
    context = {**CONTEXT, "implementations": {"ws/node_ws": {"protocol": "ws", "language": "node", "library": "ws"}}}
    results.write("fernando", "fernando", context, {"results": {"echo": {}, "broadcast": {"ws/node_ws": rows}}},
                  tmp_path / "load")
    return tmp_path


def value_claim(value):
    return {"id": "synthetic-value", "sentence": "Table 2: Node.js - Ws, Broadcast Latency (ms): mean 17.81.",
            "where": "Table 2", "figures": [fig("ws", value, clients=1000)], "form": {"kind": "value", "of": "ws"},
            "lab": {"instrument": "fernando", "test": "broadcast", "clients": 1000, "metric": "broadcast_ms",
                    "subjects": {"ws": {"language": "node", "library": "ws"}}},
            "explanation": "one Python process receives for all 1,000 clients"}


# --- the verdicts -------------------------------------------------------------------------------

def test_a_value_inside_the_labs_interval_agrees_and_one_outside_differs_by_how_much(tmp_path):
    fernando_run(tmp_path, [17.0, 18.5, 19.0])
    agrees = claims.judge("S", value_claim(17.81), tmp_path)
    assert agrees.verdict == "agrees" and agrees.reason == "" and agrees.explanation == ""
    assert "18.17 ms (17–19: mean of 3 run means; interval: their range)" in agrees.lab_figure
    differs = claims.judge("S", value_claim(180.0), tmp_path)
    assert differs.verdict == "differs"
    assert "the study's 180 is above the lab's interval (17–19): 9.91× the lab's 18.17" == differs.reason
    assert differs.explanation == "one Python process receives for all 1,000 clients"
    assert claims.judge("S", value_claim(9.0), tmp_path).reason.startswith("the study's 9 is below")


def test_no_result_or_no_cell_is_not_measured_and_names_the_command(tmp_path):
    missing = claims.judge("S", value_claim(17.81), tmp_path)
    assert missing.verdict == "not measured" and missing.lab_figure == "–"
    assert missing.reason == ("no `results/load/fernando-latest.json`: run "
                              "`python -m studies fernando --clients 1000`")
    fernando_run(tmp_path, [17.0, 18.0, 19.0], clients=100)
    level = claims.judge("S", value_claim(17.81), tmp_path)
    assert level.verdict == "not measured"
    assert "no broadcast run of ws/node_ws at 1,000 clients" in level.reason and "--clients 1000" in level.reason
    other = value_claim(17.81)
    other["lab"]["subjects"]["ws"] = {"language": "go", "library": "gorilla/websocket"}
    assert "no implementation with language go, library gorilla/websocket" in claims.judge("S", other, tmp_path).reason


def test_a_result_its_own_check_marks_invalid_is_invalid_with_the_reason(tmp_path):
    fernando_run(tmp_path, [17.0, 18.0, 19.0], valid=(True, False, True))
    found = claims.judge("S", value_claim(17.81), tmp_path)
    assert found.verdict == "invalid"
    assert "1 of 3 broadcast runs of ws/node_ws at 1,000 clients invalid" in found.reason
    assert "the generator used 97 % of its core" in found.reason
    assert found.reason.endswith("(were it valid, the figures would agree)")
    assert found.lab_figure != "–"   # the figure is still shown
    latency_run(tmp_path, (0.55, 0.65), flagged=True)
    noisy = claims.judge("S", order_claim("<"), tmp_path)
    assert noisy.verdict == "invalid" and "the noise guard flagged the run" in noisy.reason


def drifting(cycles, machine, grpc_alone=0.0, spread=0.1, seed=3):
    """Rounds of gRPC (60 µs) and Flask (100 µs), one a cycle: the machine's speed scales both by
    1 + machine × (cycle / cycles), gRPC alone by 1 + grpc_alone × ..., each round by lognormal noise."""
    import random

    draw = random.Random(seed)
    out = {name: [] for name in IMPLS}
    for i in range(cycles):
        t = i / cycles
        for name, base in (("grpc/python_grpcio", 60e-6 * (1 + grpc_alone * t)), ("rest/python_flask", 100e-6),
                           ("rest/python_flask+gthread", 100e-6)):
            out[name].append(base * (1 + machine * t) * draw.lognormvariate(0, spread))
    return out


def test_a_latency_ratio_is_judged_by_its_own_drift_not_by_the_runs_absolute_times(tmp_path):
    """A machine that slowed 40 % under the whole run (the run flagged) moves a ratio paired by cycle
    not at all: the claim keeps its verdict; one subject slowing 25 % against the other makes it
    invalid, saying by how much; a ratio whose fifths differ by more than the threshold by chance
    alone (few cycles, wide noise: its interval holds 0) is not."""
    from lab.stats import noise

    latency_run(tmp_path, (0.55, 0.65), flagged=True, rounds=drifting(800, machine=0.4))
    alike = claims.judge("S", order_claim("<"), tmp_path)
    assert alike.verdict == "agrees", alike
    assert "moved alike" in alike.lab_figure and "grpc/python_grpcio ÷ rest/python_flask moved" in alike.lab_figure

    latency_run(tmp_path, (0.55, 0.65), flagged=False, rounds=drifting(800, machine=0.0, grpc_alone=0.25))
    apart = claims.judge("S", order_claim("<"), tmp_path)
    assert apart.verdict == "invalid", apart
    assert re.search(r"the paired ratio grpc/python_grpcio ÷ rest/python_flask moved \+2\d\.\d%", apart.reason)

    chance = drifting(60, machine=0.0, spread=0.5, seed=5)
    moved, interval = noise.paired_drift({"results": {"fetch-100": {k: {"data_s": v} for k, v in chance.items()}},
                                          "context": {"settings": {"benchmark": {"design": {"block": 1}}}}},
                                         "fetch-100", "grpc/python_grpcio", "rest/python_flask")
    assert abs(moved) > noise.DRIFT_THRESHOLD and interval[0] < 0 < interval[1]   # the case this checks
    latency_run(tmp_path, (0.55, 0.65), rounds=chance)
    assert claims.judge("S", order_claim("<"), tmp_path).verdict == "agrees"


@pytest.mark.parametrize("ci,relation,verdict,why", [
    ((0.55, 0.65), "<", "agrees", ""),
    ((0.90, 1.10), "<", "differs", "the lab cannot tell them apart: gRPC ÷ REST 1 (0.9–1.1)"),
    ((1.20, 1.40), "<", "differs", "the lab finds the opposite: gRPC ÷ REST 1.3 (1.2–1.4)"),
    ((1.20, 1.40), ">", "agrees", ""),
    ((0.90, 1.10), "~", "agrees", ""),
    ((0.55, 0.65), "~", "differs", "the lab tells them apart: gRPC ÷ REST 0.6 (0.55–0.65)"),
])
def test_an_order_follows_the_ranking_rule(tmp_path, ci, relation, verdict, why):
    latency_run(tmp_path, ci)
    found = claims.judge("S", order_claim(relation), tmp_path)
    assert (found.verdict, found.reason) == (verdict, why)
    assert "99 % bootstrap CI" in found.lab_figure and "benchmarks/native-latest.json" in found.lab_figure


def test_alike_judged_on_one_run_says_it_has_no_interval_and_shows_the_ratio_to_three_places():
    """A one-run figure (Timeplus' push rows) has no interval that could hold 1: 'about the same' differs by
    the rule, and the reason says why with the digits that differ, not "tells them apart: … 1"."""
    one_run = claims.Figure.point(1.0042, "", "one run (no interval)")
    assert not claims.relation_holds("~", one_run)
    assert claims.relation_text("SSE", "WebSocket", "~", one_run) == \
        "one run, no interval to call them alike: SSE ÷ WebSocket 1.004"
    interval = claims.Figure(0.6, 0.55, 0.65, "", "99 % bootstrap CI")
    assert claims.relation_text("gRPC", "REST", "~", interval) == \
        "the lab tells them apart: gRPC ÷ REST 0.6 (0.55–0.65)"


def test_an_order_reads_a_pair_stored_the_other_way_round_and_needs_every_pair(tmp_path):
    latency_run(tmp_path, (1.5, 1.9), stored=("rest/python_flask", "grpc/python_grpcio"))  # REST ÷ gRPC
    assert claims.judge("S", order_claim("<"), tmp_path).verdict == "agrees"   # gRPC ÷ REST 0.53–0.67
    both = order_claim("<", b=("REST", "GraphQL"))
    both["lab"]["subjects"]["GraphQL"] = {"protocol": "graphql", "language": "python"}
    found = claims.judge("S", both, tmp_path)
    assert found.verdict == "not measured" and "protocol graphql, language python" in found.reason


def test_a_ratio_agrees_when_the_studys_ratio_lies_in_the_labs_interval(tmp_path):
    latency_run(tmp_path, (0.55, 0.65))                       # gRPC ÷ REST
    found = claims.judge("S", ratio_claim(), tmp_path)        # REST ÷ gRPC: 19,728 / 11,611 = 1.70
    assert found.verdict == "agrees", found
    assert found.study_figure.startswith("REST ÷ gRPC = 1.7 (19,728 / 11,611 µs, mean)")
    latency_run(tmp_path, (0.75, 0.85))                       # REST ÷ gRPC 1.18-1.33
    found = claims.judge("S", ratio_claim(), tmp_path)
    assert found.verdict == "differs" and "above the lab's interval (1.18–1.33)" in found.reason


def test_a_variant_is_never_taken_for_its_base(tmp_path):
    latency_run(tmp_path, (0.55, 0.65), stored=("grpc/python_grpcio", "rest/python_flask+gthread"))
    found = claims.judge("S", order_claim("<"), tmp_path)
    assert found.verdict == "not measured" and "no paired ratio grpc/python_grpcio ÷ rest/python_flask" in found.reason


def test_the_command_prints_the_table_and_the_count(tmp_path, capsys):
    assert claims.main(["--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    total = sum(len(s.published()["claims"]) for s in STUDIES)
    assert out.startswith("| study | claim | study's figure | lab's figure | verdict | why / explanation |")
    assert f"{total} claims: 0 agree, 0 differ, {total} not measured, 0 invalid." in out
    assert claims.main(["--results", str(tmp_path), "--study", "fernando", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["study"] for r in rows} == {"Fernando & Engel 2025"} and all(r["verdict"] == "not measured" for r in rows)
    with pytest.raises(SystemExit):
        claims.main(["--study", "nobody"])


# --- the claims as data ---------------------------------------------------------------------------

def test_every_published_json_validates_and_states_no_verdict():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for study in STUDIES:
        data = study.published()
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(data)]
        assert not errors, f"studies/{study.name}/published.json: {errors[:3]}"
        assert not re.search(r'"verdict"', (study.folder / "published.json").read_text())
    bad = copy.deepcopy(STUDIES[0].published())
    bad["claims"][0]["verdict"] = "agrees"     # typed by hand: refused
    assert not validator.is_valid(bad)
    bad = copy.deepcopy(STUDIES[0].published())
    bad["claims"][0]["lab"]["instrument"] = "stopwatch"
    assert not validator.is_valid(bad)


def test_every_claim_names_an_instrument_the_lab_has_and_subjects_for_its_labels():
    assert set(SCHEMA["$defs"]["cell"]["properties"]["instrument"]["enum"]) == set(claims.INSTRUMENTS)
    makefile = (ROOT / "Makefile").read_text()
    ids = set()
    for study in STUDIES:
        for claim in study.published()["claims"]:
            key = (study.name, claim["id"])
            assert key not in ids, f"two claims {key}"
            ids.add(key)
            cell, form = claim["lab"], claim["form"]
            instrument = claims.INSTRUMENTS[cell["instrument"]]
            assert instrument.kind in results.KINDS
            labels = ({form["of"]} if form["kind"] == "value" else {form["a"], form["b"]} if form["kind"] == "ratio"
                      else set(form.get("among", [])) | ({form["a"], *form["b"]} if "a" in form else set()))
            assert labels <= set(cell["subjects"]), f"{key}: no subject for {labels - set(cell['subjects'])}"
            figures = [f["of"] for f in claim["figures"]]
            assert len(figures) == len(set(figures)), key
            if form["kind"] == "ratio":
                needed = [form["figure"]] if "figure" in form else [form["a"], form["b"]]
                assert all(claims.figure_of(claim, x)["value"] for x in needed), key
            if form["kind"] == "value":
                assert claims.figure_of(claim, form["of"])["value"] is not None, key
            command = instrument.command({**cell, "_subjects": list(cell["subjects"].values())}).split()
            if command[0] == "make":
                assert re.search(rf"^{command[1]}:", makefile, re.M), command
            else:
                assert command[:2] == ["python", "-m"] and importlib.util.find_spec(command[2]), command
    assert 25 <= len(ids), len(ids)
    assert {s for s, _ in ids} == {s.name for s in STUDIES}   # every study states its claims


def test_on_no_results_every_claim_is_not_measured_with_a_command(tmp_path):
    found = claims.judge_all(tmp_path)
    assert found and all(r.verdict == "not measured" and "run `" in r.reason for r in found)
    assert all(r.study_figure for r in found)


def test_a_push_row_whose_client_was_the_bottleneck_is_invalid(tmp_path):
    """The push instrument's rows (tests/data/push-quick.json, a real run): a client-bound row is invalid."""
    data = json.loads((ROOT / "tests" / "data" / "push-quick.json").read_text())
    claim = {"id": "synthetic-push", "sentence": "With Devtool off, the EPS was 1,350,000.", "where": "text",
             "figures": [fig("WebSocket", 1350000, "events/s", "one run's rate", batch=50, subscriptions=60)],
             "form": {"kind": "value", "of": "WebSocket"},
             "lab": {"instrument": "push", "scenario": "timeplus-concurrency", "clients": 60, "batch": 50,
                     "metric": "events_per_s", "subjects": {"WebSocket": {"protocol": "ws", "transport": "ws"}}},
             "explanation": "a browser tab is not the lab's Go client"}
    row = next(r for r in data["rows"] if r["scenario"] == "timeplus-concurrency" and r["transport"] == "ws"
               and r["clients"] == 60)
    row.update(errors=0, client_bound=False)
    (tmp_path / "load").mkdir()
    (tmp_path / "load" / "push-latest.json").write_text(json.dumps(data))
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "differs" and "one run, ± its counting resolution" in found.lab_figure
    row["client_bound"] = True
    (tmp_path / "load" / "push-latest.json").write_text(json.dumps(data))
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "invalid" and "the push client used ≥ 90 % of its CPUs" in found.reason


# --- the instruments issue 53 made valid where the studies need them ------------------------------

def test_one_go_client_run_has_its_means_interval_and_a_client_bound_run_is_invalid(tmp_path):
    row = {"implementation": "ws/node_ws", "clients": 1000, "run": 1, "valid": True, "invalid_reasons": [],
           "client": "go", "client_cpu_percent": 40.0, "client_cpu_limit_percent": 90.0,
           "latency_ms": {"mean": 18.0, "median": 17.5, "stddev": 4.0, "count": 10000}}
    context = {**CONTEXT, "implementations": {"ws/node_ws": {"protocol": "ws", "language": "node", "library": "ws"}}}
    results.write("fernando", "fernando", context, {"results": {"echo": {}, "broadcast": {"ws/node_ws": [row]}}},
                  tmp_path / "load")
    # 18 ± 2.5758 × 4 / √10,000 = 17.90–18.10: 17.81 lies outside it, 18.05 inside
    assert claims.judge("S", value_claim(18.05), tmp_path).verdict == "agrees"
    found = claims.judge("S", value_claim(17.81), tmp_path)
    assert found.verdict == "differs" and "(17.9–18.1)" in found.reason
    assert "99 % normal interval over 10,000 samples (one run)" in found.lab_figure
    row.update(valid=False, invalid_reasons=["the receivers used 95 % CPU while a broadcast was delivered, at or "
                                             "over their limit 90 %: the receivers set the latency"])
    results.write("fernando", "fernando", context, {"results": {"echo": {}, "broadcast": {"ws/node_ws": [row]}}},
                  tmp_path / "load")
    found = claims.judge("S", value_claim(18.05), tmp_path)
    assert found.verdict == "invalid" and "the receivers set the latency" in found.reason


FEATHERS_IMPLS = {"rest/node_fastify": {"protocol": "rest", "language": "node"},
                  "socketio/node_socketio": {"protocol": "socketio", "language": "node"}}


def feathers_run(tmp_path, rps):
    """A Feathers result: {subject: (requests/s at 1 call, bytes split)} on loopback and rtt80ms."""
    rows, split = {}, {}
    for subject, (value, per_call, setup) in rps.items():
        rows[subject] = [{"calls_per_connection": 1, "connections": 100, "ops": 100, "requests_per_s": value,
                          "errors": {}, "valid": True, "invalid_reasons": []}]
        split[subject] = {"per_call_bytes": per_call, "setup_bytes": setup, "points": [[1, 1.0], [2, 2.0]]}
    results.write("feathers", "feathers", {**CONTEXT, "implementations": FEATHERS_IMPLS},
                  {"results": rows, "bytes_split": split}, tmp_path / "load")


def feathers_claim(path=None, metric="requests_per_s"):
    lab = {"instrument": "feathers", "metric": metric, "calls": 1,
           "subjects": {"socket.io": {"protocol": "socketio", "language": "node"},
                        "HTTP": {"protocol": "rest", "language": "node"}}}
    if path:
        lab["path"] = path
    return {"id": "synthetic-feathers", "sentence": "socket.io is slower at one call.", "where": "text",
            "figures": [fig("socket.io", None, "requests/s"), fig("HTTP", None, "requests/s")],
            "form": {"kind": "order", "a": "socket.io", "relation": "<", "b": ["HTTP"]}, "lab": lab}


def test_a_feathers_claim_on_a_network_path_reads_only_that_paths_rows(tmp_path):
    feathers_run(tmp_path, {"rest/node_fastify": (500.0, 200.0, 0.0), "socketio/node_socketio": (900.0, 50.0, 300.0),
                            "rest/node_fastify@rtt80ms": (400.0, 200.0, 0.0),
                            "socketio/node_socketio@rtt80ms": (100.0, 50.0, 300.0)})
    assert claims.judge("S", feathers_claim(), tmp_path).verdict == "differs"           # loopback: faster
    found = claims.judge("S", feathers_claim("rtt80ms"), tmp_path)
    assert found.verdict == "agrees" and "socket.io ÷ HTTP 0.25 " in found.lab_figure    # 80 ms: slower
    missing = claims.judge("S", feathers_claim("rtt20ms"), tmp_path)
    assert missing.verdict == "not measured" and "--path rtt20ms" in missing.reason


def test_a_calls_bytes_are_read_with_the_setup_apart(tmp_path):
    feathers_run(tmp_path, {"rest/node_fastify": (500.0, 282.0, 0.0), "socketio/node_socketio": (900.0, 54.0, 310.0)})
    claim = feathers_claim(metric="per_call_bytes")
    claim["form"] = {"kind": "ratio", "a": "HTTP", "b": "socket.io"}
    claim["figures"] = [fig("HTTP", 282, "bytes"), fig("socket.io", 54, "bytes")]
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "agrees", found   # 282 / 54 exactly: the setup's 310 bytes left out
    assert "least squares over 2 call counts" in found.lab_figure


def test_the_feathers_bytes_split_recovers_setup_and_per_call_bytes():
    from studies.feathers.scenario import bytes_split
    rows = [{"calls_per_connection": c, "bytes_per_connection": 310 + 54 * c} for c in (1, 10, 50, 500, 2000)]
    fit = bytes_split(rows)
    assert (fit["per_call_bytes"], fit["setup_bytes"]) == (54.0, 310.0)
    assert bytes_split(rows[:1]) is None   # one call count: no line


def setup_claim(value):
    return {"id": "synthetic-setup", "sentence": "~190 ms to establish the connection.", "where": "text",
            "figures": [fig("socket.io", value, "ms", "one browser connection")],
            "form": {"kind": "value", "of": "socket.io"},
            "lab": {"instrument": "setup", "path": "rtt80ms", "metric": "setup",
                    "subjects": {"socket.io": {"protocol": "socketio", "language": "node"}}}}


def test_the_setup_instrument_reads_the_paths_median_and_its_interval(tmp_path):
    paths = [{"path": "rtt80ms", "rtt_ms": 80.4, "subjects": {
        "socketio/node_socketio": {"setup": {"median_ms": 172.0, "ci95_ms": [165.0, 181.0], "n": 30}},
        "rest/go_nethttp": {"setup": {"median_ms": 81.0, "ci95_ms": [80.5, 83.0], "n": 30}}}}]
    results.write("connection-setup", "connection-setup", CONTEXT, {"paths": paths}, tmp_path / "setup")
    assert claims.judge("S", setup_claim(175), tmp_path).verdict == "agrees"
    found = claims.judge("S", setup_claim(190), tmp_path)
    assert found.verdict == "differs" and "above the lab's interval (165–181)" in found.reason
    assert "measured round trip 80.4 ms" in found.lab_figure
    other = setup_claim(190)
    other["lab"]["path"] = "rtt20ms"
    assert "python -m benchmarks.connection_setup --paths rtt20ms" in claims.judge("S", other, tmp_path).reason


def test_push_rates_carry_their_counting_resolution_so_two_ways_that_both_keep_up_are_alike(tmp_path):
    """A push rate is a count over a window: one message per receiving client may fall either side of each edge,
    ± 2 × 30 × 50 / 2 s = 1,500 events/s here. SSE and WebSocket both delivering the offered 1,500,000 events/s
    (1,501,250 and 1,500,525, the reference run's rows) are alike; 1,450,000 against 1,500,525 is not."""
    def row(name: str, transport: str, rate: float) -> dict:
        return {"implementation": name, "scenario": "timeplus-concurrency", "transport": transport, "clients": 30,
                "batch": 50, "seconds": 2.0, "receiving_clients": 30, "events_per_s": rate, "errors": 0,
                "client_bound": False}
    context = {**CONTEXT, "implementations": {"sse/go_nethttp+h2": {"protocol": "sse", "language": "go"},
                                              "ws/go_coder": {"protocol": "ws", "language": "go"}}}
    claim = {"id": "synthetic-alike", "sentence": "Not much of a difference.", "where": "Test II",
             "figures": [fig("WebSocket", 1_350_000, "events/s", "one run's rate", batch=50, subscriptions=30)],
             "form": {"kind": "order", "relation": "~", "among": ["SSE", "WebSocket"]},
             "lab": {"instrument": "push", "scenario": "timeplus-concurrency", "clients": 30, "batch": 50,
                     "metric": "events_per_s", "subjects": {"SSE": {"protocol": "sse", "transport": "sse-h2"},
                                                            "WebSocket": {"protocol": "ws", "transport": "ws"}}}}
    results.write("push", "push", context, {"rows": [row("sse/go_nethttp+h2", "sse-h2", 1_501_250.0),
                                                      row("ws/go_coder", "ws", 1_500_525.0)]}, tmp_path / "load")
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "agrees", found
    assert "± its counting resolution (1,500 events/s" in found.lab_figure
    results.write("push", "push", context, {"rows": [row("sse/go_nethttp+h2", "sse-h2", 1_450_000.0),
                                                      row("ws/go_coder", "ws", 1_500_525.0)]}, tmp_path / "load")
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "differs" and found.reason.startswith("the lab tells them apart: SSE ÷ WebSocket 0.966")


def test_a_push_row_of_a_ways_variant_answers_for_its_implementation(tmp_path):
    """SSE over HTTP/2 over TLS runs on the implementation's h2 subject; its row is that implementation's way."""
    row = {"implementation": "sse/go_nethttp+h2", "scenario": "timeplus-batch", "transport": "sse-h2", "clients": 10,
           "batch": 400, "events_per_s": 2_000_000.0, "errors": 0, "client_bound": False}
    context = {**CONTEXT, "implementations": {"sse/go_nethttp": {"protocol": "sse", "language": "go"},
                                              "sse/go_nethttp+h2": {"protocol": "sse", "language": "go",
                                                                    "base": "sse/go_nethttp"}}}
    results.write("push", "push", context, {"rows": [row]}, tmp_path / "load")
    claim = {"id": "synthetic-h2", "sentence": "3,000,000 EPS.", "where": "Test I",
             "figures": [fig("SSE", 2_000_000, "events/s", "one run's rate", batch=400)],
             "form": {"kind": "value", "of": "SSE"},
             "lab": {"instrument": "push", "scenario": "timeplus-batch", "clients": 10, "batch": 400,
                     "metric": "events_per_s", "subjects": {"SSE": {"protocol": "sse", "transport": "sse-h2"}}}}
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "agrees" and found.lab_figure.startswith("2,000,000 events/s")
    claim["lab"]["subjects"]["SSE"]["transport"] = "sse-h2c"
    assert claims.judge("S", claim, tmp_path).verdict == "not measured"
