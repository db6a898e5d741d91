"""Faults without loss: the database killed with SIGKILL during a stream of
acknowledged inserts through every protocol, and restarted on the same data
directory; a service killed in the middle of a run; a database that answers
slowly (a delay on the network path to it, in a namespace the lab creates).

The figures (acknowledged writes, found after the restart, answer times) are
written to results/faults/ and printed with -s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from contract.errors import DEADLINE_EXCEEDED, UNAVAILABLE, ContractError
from lab import dataset, results, settings
from lab.context import host_context
from lab.database import EmbeddedServer
from lab.registry import CRUD_CALLS, select
from lab.stack import Lab, running_lab

FAULTS = settings.RESULTS / "faults"
TIMEOUT_MS = 600  # the services' configured database timeout in these tests


def _record(name: str, figures: dict) -> None:
    results.write("faults", name, host_context(), figures, FAULTS, stamped=False)
    print(json.dumps(figures, indent=1))


@contextmanager
def lab_on(server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    """A lab of its own whose database is `server` (so the test can kill and restart it),
    of the implementations that serve the CRUD operations (the faults are written through them)."""
    db = server.start()
    monkeypatch.setenv("MONGODB_URI", db.uri)
    monkeypatch.setenv("MONGODB_TIMEOUT_MS", str(TIMEOUT_MS))
    crud = [i.name for i in select() if i.serves(*CRUD_CALLS)]
    try:
        with running_lab(crud, mode="native") as lab:
            yield lab
    finally:
        server.stop()


def needs_own_database() -> None:
    if settings.mongodb_uri():
        pytest.skip("the lab must own the database to kill it (MONGODB_URI is set)")


def kill9_during_inserts(lab: Lab, server: EmbeddedServer, per_client: int = 40) -> dict:
    """Every implementation inserts games in its own thread; once each has
    `per_client` acknowledged, the database is SIGKILLed, the inserts go on
    failing for a moment, the database restarts on the same storage and port,
    and every acknowledged game is read back."""
    games = dataset.games()
    acknowledged: dict[str, list[tuple[str, dict]]] = {i.name: [] for i in lab.implementations}
    refused: dict[str, int] = {i.name: 0 for i in lab.implementations}
    killed, stop = threading.Event(), threading.Event()

    def insert(name: str) -> None:
        client = lab.client(name)
        try:
            n = 0
            while not stop.is_set():
                game = games[n % len(games)]
                n += 1
                try:
                    acknowledged[name].append((client.create(game)["id"], game))
                except ContractError:
                    refused[name] += 1
                    time.sleep(0.01)
        finally:
            client.close()

    threads = [threading.Thread(target=insert, args=(name,)) for name in acknowledged]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while min(len(a) for a in acknowledged.values()) < per_client and time.monotonic() < deadline:
        time.sleep(0.005)
    before_kill = {name: len(a) for name, a in acknowledged.items()}
    server.kill()
    killed.set()
    time.sleep(1.0)  # inserts go on, and fail, while the database is down
    stop.set()
    for thread in threads:
        thread.join(30)
    server.start()
    store = lab.store()
    try:
        found, same = {}, {}
        for name, acks in acknowledged.items():
            stored = {d.pop("_id"): d for d in store.games.find({"_id": {"$in": [i for i, _ in acks]}})}
            found[name] = sum(1 for i, _ in acks if i in stored)
            same[name] = sum(1 for i, game in acks if stored.get(i) == game)
    finally:
        store.close()
    return {"sync_on_commit": server.sync_on_commit, "acknowledged_before_kill": before_kill,
            "acknowledged": {n: len(a) for n, a in acknowledged.items()}, "refused_while_down": refused,
            "found_after_restart": found, "found_with_same_content": same}


def test_kill9_loses_no_acknowledged_write(monkeypatch, tmp_path):
    needs_own_database()
    server = EmbeddedServer(tmp_path)
    with lab_on(server, monkeypatch) as lab:
        figures = kill9_during_inserts(lab, server)
        _record("kill9", figures)
        assert figures["sync_on_commit"] is True
        assert sum(figures["refused_while_down"].values()) > 0  # the kill landed during the stream
        assert figures["found_with_same_content"] == figures["acknowledged"]
        for name in figures["acknowledged"]:  # and every service serves again
            client = lab.client(name)
            try:
                client.health()
            finally:
                client.close()


def test_a_service_killed_mid_serve_stops_it_saying_which(tmp_path):
    endpoints = tmp_path / "endpoints.json"
    serve = subprocess.Popen(
        [sys.executable, "-m", "lab.cli", "serve", "--empty", "--only", "rest/python_flask",
         "--endpoints-file", str(endpoints)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=settings.ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + settings.STARTUP_TIMEOUT * 2
        while not endpoints.exists() and time.monotonic() < deadline and serve.poll() is None:
            time.sleep(0.1)
        pid = json.loads(endpoints.read_text())["implementations"]["rest/python_flask"]["pid"]
        os.kill(pid, 9)
        out, _ = serve.communicate(timeout=60)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, 15)
            serve.wait(30)
    assert serve.returncode == 1, out
    assert f"rest/python_flask (pid {pid}) killed by signal 9" in out


def test_a_service_killed_mid_test_run_stops_the_run_saying_which(tmp_path):
    (tmp_path / "test_victim.py").write_text(
        "import os\n"
        "def test_kill_a_service(lab):\n"
        "    os.kill(lab.pids['rest/python_flask'], 9)\n"
        "    import time; time.sleep(0.5)\n"
        "def test_never_reached(lab):\n"
        "    raise AssertionError('the run went on')\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "lab.pytest_plugin", "-c", os.devnull, "--rootdir", str(tmp_path),
         "-q", "--benchmark-disable", str(tmp_path / "test_victim.py")],
        capture_output=True, text=True, cwd=settings.ROOT, timeout=300,
        env={**os.environ, "PYTHONPATH": str(settings.ROOT)})
    out = done.stdout + done.stderr
    assert done.returncode == 3, out
    assert "rest/python_flask" in out and "killed by signal 9" in out
    assert "the run went on" not in out


def _tc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tc", *args], capture_output=True, text=True, timeout=30)


def slow_down(link, delay_ms: int) -> str:
    """Make the database's answers slow on the namespace path: netem's delay
    where the kernel has it, else a token bucket (tbf) at 8 kbit/s on the
    database's side, so a reply of a few KB takes seconds. Returns what was set."""
    netem = ["qdisc", "add", "dev", link.ns_if, "root", "netem", "delay", f"{delay_ms}ms"]
    tbf = ["qdisc", "add", "dev", link.ns_if, "root", "tbf", "rate", "8kbit", "burst", "1600", "latency", "60s"]
    for args in (netem, tbf):
        done = _tc("-n", link.namespace, *args)
        if done.returncode == 0:
            return " ".join(args[5:])
    pytest.skip(f"neither netem nor tbf in this kernel: {done.stderr.strip()}")


def test_slow_database_answers_the_contract_error_in_time_and_recovers(monkeypatch, tmp_path):
    needs_own_database()
    from lab.host.netns import NetnsUnavailable, veth_namespace
    try:
        namespace = veth_namespace()
        link = namespace.__enter__()
    except (NetnsUnavailable, FileNotFoundError) as exc:
        pytest.skip(f"no network namespace for the database: {exc}")
    try:
        server = EmbeddedServer(tmp_path, host=link.ns_addr, prefix=link.exec_args())
        with lab_on(server, monkeypatch) as lab:
            store = lab.store()
            games = dataset.games(5)
            dataset.reset(store.games, games, indexes=False)
            store.close()
            game_id = dataset.documents(games)[0]["_id"]
            clients = {i.name: lab.client(i.name) for i in lab.implementations}
            for client in clients.values():
                assert client.get(game_id)["id"] == game_id
            shaping = slow_down(link, 4 * TIMEOUT_MS)
            slow: dict[str, list] = {}

            def ask_twice(name: str) -> None:  # and again: the first answer did not take the service down
                for _ in range(2):
                    started = time.monotonic()
                    with pytest.raises(ContractError) as caught:
                        clients[name].get(game_id)
                    elapsed = time.monotonic() - started
                    slow.setdefault(name, []).append({"code": caught.value.code, "seconds": round(elapsed, 3)})
                    assert caught.value.code in (UNAVAILABLE, DEADLINE_EXCEEDED), caught.value
                    assert caught.value.native != "timeout", "the client gave up before the service answered"
            try:
                # Every service at once (one after another took ~30 s of timeouts).
                with ThreadPoolExecutor(len(clients)) as pool:
                    for done in [pool.submit(ask_twice, name) for name in clients]:
                        done.result()
            finally:
                _tc("-n", link.namespace, "qdisc", "del", "dev", link.ns_if, "root")
            recovered = {}
            for name, client in clients.items():
                started = time.monotonic()
                for _attempt in range(100):
                    try:
                        assert client.get(game_id)["id"] == game_id
                        break
                    except ContractError:
                        time.sleep(0.2)
                else:
                    pytest.fail(f"{name} did not recover")
                recovered[name] = round(time.monotonic() - started, 3)
            for client in clients.values():
                client.close()
        _record("slow-database", {"shaping": shaping, "configured_timeout_ms": TIMEOUT_MS,
                                  "answers_while_slow": slow, "seconds_to_recover": recovered})
    finally:
        namespace.__exit__(None, None, None)


def test_embedded_server_restarts_on_the_same_storage_and_port(tmp_path):
    needs_own_database()
    server = EmbeddedServer(Path(tmp_path))
    try:
        first = server.start()
        import pymongo
        with pymongo.MongoClient(first.uri, serverSelectionTimeoutMS=5000) as client:
            client.protolab.t.insert_one({"_id": "kept"})
        server.kill()
        second = server.start()
        assert second.uri == first.uri and second.pid != first.pid
        with pymongo.MongoClient(second.uri, serverSelectionTimeoutMS=5000) as client:
            assert client.protolab.t.find_one({"_id": "kept"}) == {"_id": "kept"}
    finally:
        server.stop()


def test_python_server_selection_still_waits_on_the_constant_the_store_lowers():
    """services/common/store.py lowers pymongo's wait between server-selection
    looks (a private constant); if pymongo stops reading it there, the slow-
    database answers above grow past the timeout again. This says so first."""
    import inspect

    import pymongo
    from pymongo.synchronous.topology import Topology

    import services.common.store  # noqa: F401 - sets the constant
    assert pymongo.common.MIN_HEARTBEAT_INTERVAL == 0.05
    assert "common.MIN_HEARTBEAT_INTERVAL" in inspect.getsource(Topology._select_servers_loop)
