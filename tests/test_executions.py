"""benchmarks/executions.py's arithmetic, on synthetic timings with known answers; and the second
process of a service its --twins mode measures, and the second database of --two-databases, for real."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from benchmarks import executions
from benchmarks.executions import beside, default_subjects, execution, summary, twin_ratio
from contract.errors import NOT_FOUND, ContractError
from lab import settings
from lab.registry import CRUD_CALLS, select
from lab.stack import second_process
from lab.workload import fetch_id

DESIGN = {"block": 1, "baseline_visits": 4}  # Design.describe(): the subject once a cycle, direct four times


def _impl(name: str, language: str, operations: tuple[str, ...] = CRUD_CALLS) -> SimpleNamespace:
    return SimpleNamespace(name=name, language=language, protocol=name.split("/")[0],
                           serves=lambda *ops: set(ops) <= set(operations))


def test_the_default_subjects_are_one_per_language_of_the_first_protocol_every_language_has() -> None:
    fake = [_impl("a/python_1", "python"), _impl("a/go_1", "go"),
            _impl("a/node_push", "node", ("health", "subscribe")),      # a: no Node.js one answering requests
            _impl("b/python_1", "python"), _impl("b/python_2", "python"), _impl("b/go_1", "go"),
            _impl("b/node_1", "node"), _impl("c/python_1", "python"), _impl("c/go_1", "go"), _impl("c/node_1", "node")]
    assert default_subjects(fake) == ["b/python_1", "b/go_1", "b/node_1"]
    assert default_subjects(fake[:3]) == ["a/python_1", "a/go_1"]  # only Python and Go answer requests there
    assert default_subjects([*fake[:2], _impl("c/node_1", "node")]) == []


def test_the_default_subjects_follow_the_manifests() -> None:
    got = default_subjects()
    registry = [i for i in select() if i.serves(*CRUD_CALLS)]
    chosen = [next(i for i in registry if i.name == name) for name in got]
    assert sorted(i.language for i in chosen) == sorted({i.language for i in registry})  # each language once
    assert len({i.protocol for i in chosen}) == 1
    assert all(i == next(j for j in registry if (j.protocol, j.language) == (i.protocol, i.language))
               for i in chosen)


class _Started(Exception):
    pass


@pytest.mark.parametrize("argv", [[], ["grpc/go_grpc"]])
def test_the_subjects_named_replace_the_defaults(argv, monkeypatch) -> None:
    started: list[list[str]] = []

    def running_lab(names):
        started.append(names)
        raise _Started
    monkeypatch.setattr(settings, "measuring", lambda: None)
    monkeypatch.setattr(executions, "running_lab", running_lab)
    with pytest.raises(_Started):
        executions.main(["--executions", "1", *argv])
    assert started[0][0] in (argv or default_subjects())


def test_an_execution_settling_on_the_way_shows_in_its_halves() -> None:
    # direct steady at 1 ms; the subject 4 ms for 50 cycles, then 3 ms
    times = {"s": [0.004] * 50 + [0.003] * 50, "direct": [0.001] * 400}
    got = execution(times, DESIGN)["s"]
    assert got["first_half"] == pytest.approx(4.0)
    assert got["second_half"] == pytest.approx(3.0)
    assert got["ratio"] == pytest.approx(3.5)  # the median of 50 × 4 ms and 50 × 3 ms


def test_the_halves_leave_out_an_unfinished_cycle() -> None:
    # 5 whole cycles and the subject's call of a sixth (direct had not come yet): halves of 2 cycles and 3;
    # the stray 9 ms call is in the whole execution's ratio only
    times = {"s": [0.002, 0.002, 0.004, 0.004, 0.004, 0.009], "direct": [0.001] * 20}
    got = execution(times, DESIGN)["s"]
    assert got["first_half"] == pytest.approx(2.0)
    assert got["second_half"] == pytest.approx(4.0)
    assert got["ratio"] == pytest.approx(4.0)


def test_summary_separates_spread_between_executions_from_moves_within_one() -> None:
    runs = [{"ratio": 4.0, "first_half": 4.2, "second_half": 3.8},
            {"ratio": 3.6, "first_half": 3.7, "second_half": 3.5},
            {"ratio": 4.4, "first_half": 4.4, "second_half": 4.4}]
    s = summary(runs)
    assert s["between"] == pytest.approx(0.8 / 4.0)
    assert s["half_move_mean"] == pytest.approx((-0.4 / 4.0 - 0.2 / 3.6 + 0.0) / 3)
    assert s["half_move_abs_mean"] == pytest.approx((0.4 / 4.0 + 0.2 / 3.6) / 3)


def test_an_execution_with_a_twin_gives_each_process_its_own_ratio() -> None:
    times = {"s": [0.004] * 10, "s#2": [0.005] * 10, "direct": [0.001] * 40}
    got = execution(times, DESIGN)
    assert got["s"]["ratio"] == pytest.approx(4.0)
    assert got["s#2"]["ratio"] == pytest.approx(5.0)
    assert set(got) == {"s", "s#2"}


def test_twin_ratio_is_first_over_second_whichever_order_the_ranking_holds_them_in() -> None:
    ranking = {"pairs": [{"a": "s#2", "b": "s", "ratio": 0.8, "ci": [0.5, 1.0]},
                         {"a": "s", "b": "direct", "ratio": 4.0, "ci": [3.9, 4.1]}]}
    got = twin_ratio(ranking, "s", "s#2")
    assert got["ratio"] == pytest.approx(1.25)
    assert got["ci"] == pytest.approx([1.0, 2.0])
    ranking["pairs"][0] = {"a": "s", "b": "s#2", "ratio": 0.8, "ci": [0.5, 1.0]}
    assert twin_ratio(ranking, "s", "s#2") == {"ratio": 0.8, "ci": [0.5, 1.0]}


def test_summary_counts_the_twins_whose_interval_excludes_one() -> None:
    runs = [{"ratio": 4.0, "first_half": 4.0, "second_half": 4.0, "twin": {"ratio": 1.00, "ci": [0.98, 1.02]}},
            {"ratio": 4.0, "first_half": 4.0, "second_half": 4.0, "twin": {"ratio": 1.10, "ci": [1.05, 1.15]}},
            {"ratio": 4.0, "first_half": 4.0, "second_half": 4.0, "twin": {"ratio": 0.95, "ci": [0.90, 0.99]}}]
    s = summary(runs)
    assert s["twin_apart"] == 2
    assert s["twin_between"] == pytest.approx(0.15 / 1.00)
    assert "twin_between" not in summary([{k: v for k, v in r.items() if k != "twin"} for r in runs])


def test_summary_counts_the_databases_whose_direct_differs() -> None:
    runs = [{"ratio": 4.0, "first_half": 4.0, "second_half": 4.0, "databases": {"ratio": r, "ci": ci}}
            for r, ci in ((1.02, [1.01, 1.03]), (0.98, [0.96, 1.00]), (1.00, [0.99, 1.01]))]
    s = summary(runs)
    assert s["db_apart"] == 1
    assert s["db_between"] == pytest.approx(0.04 / 1.00)
    assert "twin_between" not in s


def test_a_second_process_serves_the_same_database_beside_the_first_and_stops_with_its_block(lab, seeded) -> None:
    if lab.mode != "native":
        pytest.skip("a second process of a service is started in native mode only")
    name = "rest/python_flask"
    with second_process(lab, name) as twin:
        assert twin == f"{name}#2"
        pid = lab.pids[twin]
        assert pid != lab.pids[name] and lab.endpoints[twin] != lab.endpoints[name]
        first, second = lab.client(name), lab.client(twin)
        try:
            page = second.list(5, 10)
            assert len(page) == 5 and page == first.list(5, 10)
        finally:
            first.close()
            second.close()
    assert twin not in lab.pids and twin not in lab.endpoints
    assert [i.name for i in lab.implementations].count(name) == 1 and lab.exited() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_two_databases_the_second_process_and_direct_2_use_a_database_of_their_own(lab, seeded) -> None:
    if lab.mode != "native":
        pytest.skip("a second process of a service is started in native mode only")
    name = "rest/python_flask"
    with beside(lab, name, "fetch-one", "two-databases") as (extra, client_of):
        twin, direct = extra
        assert direct == "direct#2"
        pid = lab.pids[twin]
        clients = [client_of(n) for n in (name, twin, direct, "direct")]
        first, second, second_db, first_db = clients
        try:
            assert second.get(fetch_id()) == first.get(fetch_id()) == second_db.get(fetch_id())  # seeded alike
            second_db.delete(fetch_id())  # in the second database only
            with pytest.raises(ContractError) as raised:
                second.get(fetch_id())
            assert raised.value.code == NOT_FOUND
            assert first.get(fetch_id())["id"] == fetch_id() and first_db.get(fetch_id())["id"] == fetch_id()
        finally:
            for client in clients:
                client.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(SystemExit):
        with beside(lab, name, "insert", "two-databases"):
            pass
