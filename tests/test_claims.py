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


def latency_run(tmp_path, ci, flagged=False, stored=("grpc/python_grpcio", "rest/python_flask")):
    """A latency result whose one pair (stored as a ÷ b) has ratio mid(ci) and interval ci."""
    a, b = stored
    ratio = (ci[0] + ci[1]) / 2
    rows = {name: {"median": 100.0, "median_ci95": [95.0, 105.0]} for name in IMPLS}
    pair = {"a": a, "b": b, "ratio": ratio, "ci": list(ci), "relation": "?"}
    context = {**CONTEXT, "mode": "native", "implementations": IMPLS,
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
    assert found.verdict == "differs" and "one run (no interval)" in found.lab_figure
    row["client_bound"] = True
    (tmp_path / "load" / "push-latest.json").write_text(json.dumps(data))
    found = claims.judge("S", claim, tmp_path)
    assert found.verdict == "invalid" and "the push client used ≥ 90 % of its CPUs" in found.reason
