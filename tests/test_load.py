"""The load instrument (load/): a short k6 run over every implementation, and
the invalid-run rule. No timing decides a test: they check that requests
were made and answered, samples folded, resources sampled, runs judged."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from lab.pytest_plugin.fixtures import IMPLEMENTATIONS
from load import k6, operations, pinning, runner
from load.state import prepare


@pytest.fixture(scope="module")
def k6_binary():
    from lab.host import tools
    try:
        return tools.k6()
    except SystemExit as exc:  # no Go toolchain to build it with
        pytest.skip(str(exc))


def settings(**kw) -> runner.Settings:
    # 0.5 s warm-up, 1 s steady: what the checks need (requests answered, samples
    # folded, resources sampled); a closed-model run keeps both CPUs busy, and at
    # 1 + 2 s the 18 of them took ~89 worker-s of make test (2026-11-28).
    return runner.Settings(warmup_s=0.5, steady_s=1.0, pinning=pinning.plan(True), **kw)


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_short_load_run(lab, k6_binary, name):
    """20 clients (or as many as the manifest says it holds), 1.5 s, fetch-one."""
    impl = lab.implementation(name)
    reason = operations.why_not(impl, "fetch-one")
    if reason:
        pytest.skip(f"{name}: {reason}")
    prepare(lab, "fetch-one")
    clients = min(20, runner.max_connections(impl) or 20)
    row = runner.run(lab, impl, settings(), model="closed", clients=clients)
    assert row["errors"] == {}, row["errors"]
    # every answered request has its latency sample (gRPC's comes from k6's own
    # metric, stamped a moment apart: one per client may fall across the window's edge)
    assert row["ops_window"] > 0 and abs(row["latency_us"]["count"] - row["ops_window"]) <= clients
    assert row["throughput_rps"] > 0
    lat = row["latency_us"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    for process in (name, "database", "generator"):
        used = row["resources"][process]
        assert used["cpu_s"] > 0 and used["rss_peak_bytes"] > 0, (process, used)
    assert row["resources"][name]["cpu_us_per_request"] > 0
    assert row["dropped_iterations"] == 0


def test_open_model_run(lab, k6_binary):
    """A constant arrival rate well below any service's capacity is held."""
    impl = lab.implementation("rest/python_flask")
    prepare(lab, "fetch-one")
    row = runner.run(lab, impl, settings(), model="open", clients=20, rate=20)
    assert row["errors"] == {} and row["dropped_iterations"] == 0
    assert row["latency_us"]["count"] > 0


def test_invalid_run_rule_fires_when_k6_cannot_start_iterations(lab, k6_binary):
    """A generator starved of virtual users (one, for 2,000 requests/s) drops
    iterations: the run is invalid and says why."""
    impl = lab.implementation("rest/python_flask")
    prepare(lab, "fetch-one")
    row = runner.run(lab, impl, settings(), model="open", clients=1, rate=2000)
    assert row["dropped_iterations"] > 0
    assert row["valid"] is False
    assert any("dropped" in reason for reason in row["invalid_reasons"])


def test_invalid_run_rule():
    assert runner.judge("closed", 10, 500, 0, 30.0, 1) == []
    # the generator's own CPU over 60 % of its cores
    assert "generator used 70 %" in runner.judge("closed", 10, 500, 0, 70.0, 1)[0]
    assert runner.judge("closed", 10, 500, 0, 70.0, 2) == []
    assert "dropped 3" in runner.judge("open", 10, 500, 3, 10.0, 1)[0]
    assert "no request answered" in runner.judge("open", 10, 0, 0, 10.0, 1)[0]
    # fewer answers than clients: no client was answered twice
    assert "not a steady state" in runner.judge("closed", 1000, 400, 0, 10.0, 1)[0]


def test_a_generators_cpu_and_peak_rss_come_from_the_kernels_account_at_exit():
    """K6Run.poll reaps the generator with wait4: its CPU and its peak RSS are
    known once it is gone, however short it ran (a 1 Hz sample of a 3 s k6
    once read 0 B at every reading). Here a real process that held 64 MiB."""
    run = k6.K6Run("rest", {})
    try:
        run.popen = subprocess.Popen([sys.executable, "-c", "b = b'x' * (64 << 20)"])
        assert run.wait(timeout=60) == 0
        assert run.rss_peak_bytes is not None and run.rss_peak_bytes >= 64 << 20, run.rss_peak_bytes
        assert run.cpu_s is not None and run.cpu_s > 0
    finally:
        run.cleanup()


def test_a_service_sampled_over_a_run_shorter_than_the_interval_still_has_its_rss_and_cpu():
    """The Sampler reads each process once more when the run ends: a 1 s load run
    on a loaded machine (four test workers) once had no reading of its service
    at all, and reported its peak RSS as 0 B. Here a real process that holds
    64 MiB and spins, sampled for 0.3 s at a 10 s interval."""
    from lab.resources import Sampler
    proc = subprocess.Popen([sys.executable, "-c", "b = b'x' * (64 << 20)\nwhile True: pass"])
    try:
        time.sleep(0.5)
        with Sampler({"service": proc.pid}, interval=10.0) as sampler:
            time.sleep(0.3)
        got = sampler.summary()["service"]
    finally:
        proc.kill()
        proc.wait(10)
    assert got["samples"] >= 1
    assert got["rss_max"] >= 64 << 20, got
    assert got["cpu_s"] > 0 and sampler.samples["service"][-1][1] > 0, got


def test_a_sampling_thread_that_outlives_the_join_adds_no_reading_after_the_end(monkeypatch):
    """A sampling thread held back past __exit__'s join (a loaded machine) once
    could add its reading after the end's: the summary then changed after the
    run had ended. Here the thread's reading is held until 0.5 s after __exit__
    begins, with the join's timeout 0.05 s: the end's reading comes after the
    thread's, and nothing is added once __exit__ has returned."""
    from lab import resources
    release = threading.Event()
    real = resources.cpu_seconds

    def held(pid: int) -> float:
        if threading.current_thread().name == "protolab-sampler":
            release.wait(10)
        return real(pid)

    monkeypatch.setattr(resources, "cpu_seconds", held)
    monkeypatch.setattr(resources.Sampler, "JOIN_TIMEOUT", 0.05)
    sampler = resources.Sampler({"self": os.getpid()}, interval=0.01)
    sampler.__enter__()
    time.sleep(0.2)  # the thread is inside its first reading, held
    timer = threading.Timer(0.5, release.set)
    timer.start()
    try:
        sampler.__exit__(None, None, None)
        at_exit = list(sampler.samples["self"])
        time.sleep(1.0)  # the held thread has long finished
    finally:
        release.set()
        timer.cancel()
    assert sampler.samples["self"] == at_exit
    times = [t for t, _, _ in at_exit]
    assert len(times) == 2 and times == sorted(times), at_exit  # the thread's, then the end's


def test_pinning_disjoint():
    plan = pinning.plan(True)
    if plan.enabled:
        assert plan.services and plan.generator and not plan.services & plan.generator
    off = pinning.plan(False)
    assert not off.enabled and off.services == off.generator


def test_out_names_a_result_and_refuses_a_path(capsys):
    """--out is a name in results/load (a path once crashed the sweep after its runs)."""
    from load.__main__ import parser
    assert parser().parse_args(["--out", "mine"]).out == "mine"
    for bad in ("/tmp/l1.json", "sub/x", "../x"):
        with pytest.raises(SystemExit):
            parser().parse_args(["--out", bad])
        assert "give a name" in capsys.readouterr().err


def test_kcheck_warms_a_service_by_its_manifests_count_through_the_python_client(lab, seeding):
    """load.scenarios.warm: an implementation whose manifest asks for warm-up
    calls gets them through the service (insert: each made one stored game,
    which kcheck's prepare() clears before k6 runs), stopped by the time limit
    if it comes first; one that does not ask gets none."""
    from load.scenarios import warm
    asking = [i for i in lab.implementations if i.warmup_calls]
    plain = [i for i in lab.implementations if not i.warmup_calls]
    if not asking or not plain:
        pytest.skip("needs an implementation with [bench] warmup_calls and one without")
    impl = asking[0]
    assert warm(lab, plain[0], "fetch-one") is None
    made = warm(lab, impl, "insert", max_s=0.5)
    assert 1 <= made <= impl.warmup_calls
    games = seeding.store.games
    assert games.count_documents({}) == made
    prepare(lab, "insert")
    assert games.count_documents({}) == 0
