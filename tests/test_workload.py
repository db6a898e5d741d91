"""The workload table (lab/workload.py): parametric operations resolve, their
states hold the games they need, the size-chosen games are ordered by JSON
size and stable, a bad name is refused with a clear error; the median game is
the median by JSON size; and fetch-1000 and the sized games through a real
service (rest/go_nethttp) answer as the table's checks expect."""

from __future__ import annotations

import json

import pytest

from lab import dataset, workload
from lab.registry import discover
from lab.stack import running_lab

SIZES = tuple(dataset.SIZES)  # smallest, p10, median, p90, largest


def _json_bytes(game: dict) -> int:
    """The size the docstrings promise: json.dumps with compact separators, as UTF-8."""
    return len(json.dumps(game, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


class Recorder:
    """A client that records the call made instead of making it."""

    def __getattr__(self, method: str):
        return lambda *args: (method, args)


def test_every_payload_row_resolves_once():
    assert len(workload.PAYLOAD) == 14 and len(set(workload.PAYLOAD)) == 14
    for name in workload.PAYLOAD:
        op = workload.get(name)
        assert op.name == name and workload.get(name) is op  # made once
    for name, op in workload.OPERATIONS.items():
        assert workload.get(name) is op
    assert workload.get("fetch-37").name == "fetch-37"  # any N, not only the axis' rows
    assert workload.NAMES[:len(workload.OPERATIONS)] == tuple(workload.OPERATIONS)


def test_todays_names_mean_what_they_meant():
    assert workload.OPERATIONS["insert"].call(Recorder())() == ("create", (dataset.median_game(),))
    assert workload.OPERATIONS["fetch-one"].call(Recorder())() == ("get", (dataset.fetch_id(),))
    assert workload.OPERATIONS["fetch-100"].call(Recorder())() == ("list", (dataset.FETCH_SET, 0))
    assert workload.LATENCY == ("insert", "fetch-one", "fetch-100")
    for name in ("fetch-one", "fetch-100"):
        assert workload.get(name).seed == dataset.fetch_games()


@pytest.mark.parametrize("count", [1, 10, 100, 1000])
def test_fetch_n_lists_n_games_of_a_state_that_holds_them(count):
    op = workload.get(f"fetch-{count}")
    assert op.call(Recorder())() == ("list", (count, 0))
    state = op.seed
    assert state == dataset.fetch_games(max(count, dataset.FETCH_SET))  # the same games for everyone
    ids = [d["_id"] for d in dataset.documents(state)]
    assert len(set(ids)) == len(state) >= count
    answer = list(workload.answered(count))
    assert [g["id"] for g in answer] == sorted(ids)[:count]  # the first N by id, as the services order them
    op.check(answer)
    with pytest.raises(AssertionError):
        op.check(answer[:-1])
    if count > 1:
        with pytest.raises(AssertionError):
            op.check(answer[::-1])
    assert workload.payload_bytes(op)["games"] == count


def test_fetch_1000_state_holds_1000_games():
    state = workload.get("fetch-1000").seed
    assert len(state) == 1000 and len({d["_id"] for d in dataset.documents(state)}) == 1000


def test_sized_games_are_ordered_by_json_size_and_stable():
    games = [dataset.sized_game(size) for size in SIZES]
    sizes = [_json_bytes(g) for g in games]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    every = sorted(_json_bytes(g) for g in dataset.games())
    assert sizes[0] == every[0] and sizes[-1] == every[-1]
    assert [dataset.sized_game(size) for size in SIZES] == games  # the same games on every call
    for size, game in zip(SIZES, games, strict=True):
        assert workload.get(f"insert:{size}").call(Recorder())() == ("create", (game,))
        fetch = workload.get(f"fetch-one:{size}")
        appid = dataset.documents([game])[0]["_id"]
        assert fetch.call(Recorder())() == ("get", (appid,))
        assert appid in {d["_id"] for d in dataset.documents(fetch.seed)}  # its state holds it
        assert fetch.seed[:dataset.FETCH_SET] == dataset.fetch_games()
        fetch.check({"id": appid, **game})
        with pytest.raises(AssertionError):
            fetch.check({"id": dataset.fetch_id(), **game})
        assert workload.payload_bytes(workload.get(f"insert:{size}"))["json_bytes"] == _json_bytes(game)


def test_median_game_is_the_median_by_json_size():
    every = sorted(_json_bytes(g) for g in dataset.games())
    assert _json_bytes(dataset.median_game()) == every[len(every) // 2]
    assert dataset.median_game() == dataset.sized_game("median") == workload.insert_game()


@pytest.mark.parametrize("name", ["fetch-0", "fetch-1001", "fetch-010", "fetch-", "fetch-one:p50",
                                  "insert:", "insert:Median", "update:largest", "nonsense", ""])
def test_a_bad_name_is_refused_with_what_is_expected(name):
    with pytest.raises(ValueError, match=r"unknown operation .*fetch-<N> with N from 1 to 1,000.*smallest, p10"):
        workload.get(name)
    with pytest.raises(ValueError, match="unknown size"):
        dataset.sized_game("p50")


def test_payload_bytes():
    one, hundred = (workload.payload_bytes(workload.get(n)) for n in ("fetch-one", "fetch-100"))
    assert one["games"] == 1 and hundred["games"] == 100
    for carried in (one, hundred):
        assert 0 < carried["protobuf_bytes"] < carried["json_bytes"]
    assert hundred["json_bytes"] == len(json.dumps(list(workload.answered(100)), separators=(",", ":"),
                                                   ensure_ascii=False).encode())
    sizes = [workload.payload_bytes(workload.get(f"fetch-{n}"))["json_bytes"] for n in (1, 10, 100, 1000)]
    assert sizes == sorted(sizes)
    assert workload.payload_bytes(workload.get("delete")) == {}
    assert workload.payload_bytes(workload.get("echo")) == {"json_bytes": 120}


SERVICE = "rest/go_nethttp"


@pytest.fixture(scope="module")
def service():
    impl = next(i for i in discover() if i.name == SERVICE)
    if impl.missing():
        pytest.skip(f"{SERVICE} needs {', '.join(impl.missing())}")
    with running_lab([SERVICE]) as lab:
        store, client = lab.store(), lab.client(SERVICE)
        try:
            yield store, client
        finally:
            client.close()
            store.close()


@pytest.mark.parametrize("name", ["fetch-1000", "fetch-1", "fetch-one:largest", "fetch-one:smallest",
                                  "insert:largest"])
def test_through_a_service(service, name):
    store, client = service
    op = workload.get(name)
    workload.prepare(store.games, op)
    answer = op.call(client)()
    op.check(answer)
    if name == "fetch-1000":
        assert len(answer) == 1000
        assert answer == list(workload.answered(1000))  # the games themselves, in id order
