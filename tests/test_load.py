"""The load instrument (load/) on Locust: a short run over every
implementation, the open model counting from the schedule, the invalid-run
rule on a starved generator, a master with two workers and their merge. No
timing decides a test: they check that requests were made and answered,
timed, merged, sampled and judged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
import pytest

from lab.host import pinning
from lab.pytest_plugin.fixtures import IMPLEMENTATIONS
from load import histograms, runner
from load.common import prepare, why_not
from load.engine import LocustRun, Plan, Process


def settings(**kw) -> runner.Settings:
    # 0.5 s warm-up, 1 s steady: what the checks need (requests answered,
    # timed, resources sampled), not a measurement.
    return runner.Settings(warmup_s=0.5, steady_s=1.0, pinning=pinning.plan(True), **kw)


def ordered(lat: dict) -> bool:
    shown = [lat[k] for k in ("p50", "p90", "p99", "p99_9") if lat[k] is not None] + [lat["max"]]
    return 0 < shown[0] and shown == sorted(shown)


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_short_load_run(lab, name):
    """20 clients (or as many as the manifest says it holds), fetch-one, through
    the protocol's own client in a Locust process."""
    impl = lab.implementation(name)
    reason = why_not(impl, "fetch-one")
    if reason:
        pytest.skip(f"{name}: {reason}")
    prepare(lab, "fetch-one")
    clients = min(20, runner.max_connections(impl) or 20)
    row = runner.run(lab, impl, settings(), model="closed", clients=clients)
    assert row["errors_total"] == {}, row["errors_total"]
    assert row["ops_window"] > 0 and row["latency_us"]["count"] == row["ops_window"]
    assert row["throughput_rps"] > 0
    assert ordered(row["latency_us"]), row["latency_us"]
    for process in (name, "database", "generator"):
        used = row["resources"][process]
        assert used["cpu_s"] > 0 and used["rss_peak_bytes"] > 0, (process, used)
    assert row["resources"][name]["cpu_us_per_request"] > 0
    assert row["generator"]["engine"] == "locust" and row["generator"]["processes"] == 1
    # A tail is shown only with the answers behind it
    lat = row["latency_us"]
    assert (lat["p99"] is None) == (lat["count"] < 1000), lat
    assert (lat["p99_9"] is None) == (lat["count"] < 10_000), lat


def test_open_model_run(lab):
    """A constant arrival rate well below any service's capacity is held."""
    impl = lab.implementation("rest/python_flask")
    prepare(lab, "fetch-one")
    row = runner.run(lab, impl, settings(), model="open", clients=20, rate=50)
    assert row["errors_total"] == {}
    assert row["latency_us"]["count"] > 0 and row["latency_from"] == "the scheduled start"
    assert row["wake_lag_us"]["count"] > 0  # users slept until their sends were due
    assert row["throughput_rps"] > 0


class _Slow(BaseHTTPRequestHandler):
    """A service made slow on purpose: one request at a time, 20 ms each
    (capacity 50 requests/s), whatever the number of connections."""
    protocol_version = "HTTP/1.1"
    lock = threading.Lock()

    def do_GET(self) -> None:
        with self.lock:
            time.sleep(0.02)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _locust(plan: Plan, **kw) -> dict:
    run = LocustRun(plan, **kw).start()
    try:
        run.wait(timeout=plan.duration_s + 90)
        assert not run.failures(), run.failures()
        return runner.merge(run.result())
    finally:
        run.stop()
        run.cleanup()


def test_the_open_model_counts_from_the_schedule(slow_service):
    """Against a service that answers 50 requests/s one at a time, a closed
    client waits for each answer and sees ~20 ms; the open model offers 75/s
    and counts each request from its scheduled start, so its latency carries
    the queue that builds up, which the closed model hides."""
    def plan(**kw) -> Plan:
        return Plan("slow", "rest", slow_service, operation="health", warmup_s=0.2, steady_s=2.5,
                    duration_s=3.0, **kw)
    closed = _locust(plan(model="closed", users=1))
    opened = _locust(plan(model="open", users=20, rate=75))
    closed_p99 = closed["latency"].get_value_at_percentile(99)
    open_p99 = opened["latency"].get_value_at_percentile(99)
    service_p50 = opened["service"].get_value_at_percentile(50)
    print(f"closed p99 {closed_p99} µs; open p99 from the schedule {open_p99} µs "
          f"(its sends' own service time p50 {service_p50} µs)")
    assert closed["errors_total"] == {} and opened["errors_total"] == {}
    # the open model's latency carries the queue (it grows for the whole window at 1.5x the
    # capacity), which the closed client, waiting for each answer, never builds
    assert open_p99 > 3 * closed_p99, (open_p99, closed_p99)
    # answered more slowly than offered: the queue grows for the whole window
    assert opened["throughput_rps"] < 70


def test_the_invalid_run_rule_fires_on_a_starved_generator(lab):
    """The Locust process is frozen (SIGSTOP) for 60 ms of every 120: it wakes
    late for its scheduled sends, and the run is invalid, saying why."""
    impl = lab.implementation("rest/go_nethttp")
    prepare(lab, "fetch-one")
    stop = threading.Event()

    def starve() -> None:
        me = psutil.Process()
        while not stop.is_set():
            for child in me.children(recursive=True):
                try:
                    if "locustfile.py" in " ".join(child.cmdline()):
                        child.send_signal(signal.SIGSTOP)
                        time.sleep(0.06)
                        child.send_signal(signal.SIGCONT)
                except psutil.Error:
                    pass
            time.sleep(0.06)

    thread = threading.Thread(target=starve, daemon=True)
    thread.start()
    try:
        row = runner.run(lab, impl, settings(), model="open", clients=20, rate=100)
    finally:
        stop.set()
        thread.join(5)
    assert row["valid"] is False
    assert any("could not hold the rate" in r for r in row["invalid_reasons"]), row["invalid_reasons"]


def test_invalid_run_rule():
    assert runner.judge("closed", 10, 500, 30.0, 1) == []
    # the generator's own CPU over 60 % of its cores
    assert "generator used 70 %" in runner.judge("closed", 10, 500, 70.0, 1)[0]
    assert runner.judge("closed", 10, 500, 70.0, 2) == []
    assert "could not hold the rate" in runner.judge("open", 10, 500, 10.0, 1, wake_lag_p99_us=19_000)[0]
    assert runner.judge("open", 10, 500, 10.0, 1, wake_lag_p99_us=900) == []
    assert "no request answered" in runner.judge("open", 10, 0, 10.0, 1)[0]
    # fewer answers than clients: no client was answered twice
    assert "not a steady state" in runner.judge("closed", 1000, 400, 10.0, 1)[0]
    assert "never opened" in runner.judge("closed", 10, 500, 10.0, 1, windows_missing=1)[0]


def test_two_workers_merge_into_one_result(lab):
    """One master and two worker processes (Locust's distributed mode): each
    worker answers its share, and the run's figures are the sum of theirs."""
    impl = lab.implementation("rest/go_nethttp")
    prepare(lab, "fetch-one")
    row = runner.run(lab, impl, settings(workers=2), model="closed", clients=20)
    workers = row["generator"]["per_worker"]
    assert row["generator"]["processes"] == 3 and len(workers) == 2
    assert sorted(w["worker_index"] for w in workers) == [0, 1]
    assert all(w["ops"] > 0 and w["users"] == 10 for w in workers), workers
    assert row["ops_window"] == sum(w["ops"] for w in workers)
    assert row["ops_total"] == sum(w["ops_total"] for w in workers)
    assert histograms.decode(row["histogram"]).get_total_count() == row["ops_window"]
    for name in ("generator:master", "generator:worker0", "generator:worker1"):
        assert row["resources"][name]["cpu_s"] > 0, row["resources"]
    assert row["errors_total"] == {}


def test_a_worker_that_answers_late_still_gets_its_whole_window(lab):
    """A worker frozen (SIGSTOP) for longer than the run's planned duration once it has
    begun calling: the master's stop waits until that worker's window has closed too, so
    both workers count answers over a whole window (on a busy machine a worker slow to
    start once counted none)."""
    impl = lab.implementation("rest/go_nethttp")
    prepare(lab, "fetch-one")
    port = int(lab.endpoints[impl.name].rsplit(":", 1)[1])
    s = settings(workers=2)
    frozen: list[int] = []

    def freeze_one_worker() -> None:
        deadline = time.monotonic() + 60
        while not frozen and time.monotonic() < deadline:
            for child in psutil.Process().children(recursive=True):
                try:
                    if "--worker" in child.cmdline() and any(c.raddr and c.raddr.port == port
                                                             for c in child.net_connections("tcp")):
                        child.send_signal(signal.SIGSTOP)
                        frozen.append(child.pid)
                        time.sleep(s.warmup_s + s.steady_s + 1.0)  # past the planned stop
                        child.send_signal(signal.SIGCONT)
                        return
                except psutil.Error:
                    pass
            time.sleep(0.01)

    thread = threading.Thread(target=freeze_one_worker, daemon=True)
    thread.start()
    try:
        row = runner.run(lab, impl, s, model="closed", clients=20)
    finally:
        thread.join(10)
    assert frozen, "no worker was seen calling the service"
    workers = row["generator"]["per_worker"]
    # each window whole: open, and closed before that worker's stop (the same clock)
    assert all(w["window_ns"] and w["window_ns"][1] <= w["stopped_ns"] and w["ops"] > 0 for w in workers), workers
    assert histograms.decode(row["histogram"]).get_total_count() == row["ops_window"] == sum(w["ops"] for w in workers)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (ip netns add)")
def test_two_workers_on_simulated_hosts(lab_host_any):
    """--netns: each worker in its own namespace, dialling the services and the
    master at its link's host-side address."""
    lab, impl = lab_host_any
    from load import netns
    s = settings(workers=2)
    prepare(lab, "fetch-one")
    with netns.worker_namespaces(s, 2):
        row = runner.run(lab, impl, s, model="closed", clients=10)
    workers = row["generator"]["per_worker"]
    assert len(workers) == 2 and all(w["ops"] > 0 for w in workers), workers
    assert len(row["generator"]["netns"]) == 2
    assert row["ops_window"] == sum(w["ops"] for w in workers) and row["errors_total"] == {}


@pytest.fixture
def lab_host_any():
    """A lab whose services bind every address, so a namespace can dial them."""
    from lab.stack import running_lab
    old = os.environ.get("LAB_HOST")
    os.environ["LAB_HOST"] = "0.0.0.0"
    try:
        with running_lab(["rest/go_nethttp"]) as lab:
            yield lab, lab.implementation("rest/go_nethttp")
    finally:
        if old is None:
            os.environ.pop("LAB_HOST", None)
        else:
            os.environ["LAB_HOST"] = old


def test_a_processes_cpu_and_peak_rss_come_from_the_kernels_account_at_exit(tmp_path):
    """Process.poll reaps a Locust process with wait4: its CPU and its peak RSS
    are known once it is gone, however short it ran. Here a real process that
    held 64 MiB."""
    popen = subprocess.Popen([sys.executable, "-c", "b = b'x' * (64 << 20)"])
    process = Process("generator", popen, tmp_path / "log")
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.popen.returncode == 0
    assert process.rss_peak_bytes is not None and process.rss_peak_bytes >= 64 << 20, process.rss_peak_bytes
    assert process.cpu_s is not None and process.cpu_s > 0


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


def test_a_tail_is_shown_only_with_the_answers_behind_it():
    h = histograms.new_histogram()
    for v in range(1, 1000):
        h.record_value(v)
    s = histograms.latency_summary(h)
    assert s["p50"] is not None and s["p99"] is None and "999 answered" in s["withheld"]["p99"]
    h.record_value(1000)
    s = histograms.latency_summary(h)
    assert s["p99"] is not None and s["p99_9"] is None


def test_a_process_serving_a_subject_still_to_come_is_kept_until_its_last_subject(tmp_path):
    """load/sweep.py release(): the sweep stops each measured implementation's process, except one that
    serves a later subject too (a client-side variant shares its base's process): that one is kept, and
    waited for until quiet; stopped after its last subject."""
    from types import SimpleNamespace

    from load.sweep import release

    stopped = []

    class Proc:
        def __init__(self, argv):
            self.popen = subprocess.Popen(argv)
            self.pid = self.popen.pid

        def stop(self, grace=2.0):
            stopped.append(self)
            self.popen.kill()
            self.popen.wait(timeout=10)

    idle = Proc([sys.executable, "-c", "import time; time.sleep(60)"])
    busy = Proc([sys.executable, "-c", "while True: pass"])
    other = Proc([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = ["base", "base+variant", "spinning", "spinning+variant", "other"]
        lab = SimpleNamespace(implementations=[SimpleNamespace(name=n) for n in names],
                              processes={"base": idle, "base+variant": idle, "spinning": busy,
                                         "spinning+variant": busy, "other": other})
        assert release(lab, 0) == "quiet" and stopped == []
        assert release(lab, 1) == "stopped" and stopped == [idle]
        assert release(lab, 2, within_s=1.5) == "busy" and stopped == [idle]   # a CPU loop never settles
        assert release(lab, 3) == "stopped" and release(lab, 4) == "stopped"
        assert stopped == [idle, busy, other]
    finally:
        for p in (idle, busy, other):
            if p.popen.poll() is None:
                p.popen.kill()
                p.popen.wait(timeout=10)
