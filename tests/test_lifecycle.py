"""Nothing the lab starts outlives it: not after Ctrl-C, not after a failing
test, not even when the lab itself is killed outright."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lab.registry import select
from lab.settings import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited; it only waits to be reaped
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _one_per_language() -> list[str]:
    """The first implementation of each language (a gunicorn arbiter with its
    workers, a Go binary, a Node.js process): how the lab stops a process does
    not depend on which, so serve starts these, not all of them."""
    chosen: dict[str, str] = {}
    for impl in select():
        chosen.setdefault(impl.language, impl.name)
    return list(chosen.values())


SERVED = _one_per_language()


def _serve(env: dict[str, str] = ENV) -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-m", "lab.cli", "serve", "--only", *SERVED], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own group, as a shell's foreground job
    pids, lines = [], []
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        pids += [int(p) for p in re.findall(r"\(pid (\d+)\)", line)]
        if line.startswith("serving"):
            return proc, pids
    proc.kill()
    pytest.fail("protolab serve did not come up:\n" + "".join(lines))


def test_serve_prints_every_endpoint_and_stops_everything_on_ctrl_c():
    proc, pids = _serve()
    assert len(pids) >= 1 + len(SERVED)  # the database and each service
    assert all(_alive(p) for p in pids)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
    assert proc.wait(30) == 0
    assert _wait_gone(pids) == []


def test_killing_the_lab_outright_takes_its_processes_along(tmp_path):
    # What a killed lab cannot remove (its database's files, its logs) is left in tmp_path, on the disk.
    proc, pids = _serve({**ENV, "TMPDIR": str(tmp_path), "LAB_DB_IN_MEMORY": "0"})
    proc.kill()  # SIGKILL: no cleanup code runs; the kernel's parent-death signal does it
    proc.wait(10)
    assert _wait_gone(pids) == []


def test_a_failing_test_still_stops_the_lab(tmp_path):
    pid_file = tmp_path / "pids"
    (tmp_path / "test_fails.py").write_text(textwrap.dedent(f"""
        def test_fails(lab):
            pids = [lab.database.pid, *lab.pids.values()]
            open({str(pid_file)!r}, "w").write(" ".join(map(str, pids)))
            assert False, "deliberate"
    """))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "lab.pytest_plugin", "-p", "no:cacheprovider", "-q",
         str(tmp_path / "test_fails.py")],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stdout + result.stderr
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) >= 5
    assert _wait_gone(pids) == []


def test_a_plugin_failing_at_the_end_of_the_session_still_stops_the_lab(tmp_path):
    # A session stopped mid-test leaves the session's fixtures to pytest's sessionfinish. pytest-benchmark's
    # sessionfinish runs first and reports its JSON; to a closed pipe (`make bench | tee` stopped with Ctrl-C)
    # that raises, before pytest's own teardown. A thread left running, as a client's reader thread is until the
    # client is closed, then held the interpreter at exit, and the session's processes with it.
    done = tmp_path / "torn-down"
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import threading
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_sessionfinish(session):
            raise BrokenPipeError(32, "Broken pipe")
            yield

        @pytest.fixture(scope="session")
        def reader():
            stop = threading.Event()
            threading.Thread(target=stop.wait).start()  # not a daemon
            yield
            stop.set()
            open({str(done)!r}, "w").write("yes")
    """))
    (tmp_path / "test_end.py").write_text(textwrap.dedent("""
        import os, signal, time

        def test_stopped(reader):  # stopped mid-test, as by Ctrl-C or a runner's SIGTERM
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
    """))
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "lab.pytest_plugin", "-p", "no:cacheprovider", "-q",
                             str(tmp_path / "test_end.py")],
                            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=60)
    assert "KeyboardInterrupt" in result.stdout, result.stdout + result.stderr  # lab.pytest_plugin's SIGTERM handler
    assert result.returncode != 0
    assert done.read_text() == "yes", result.stdout + result.stderr


def test_distinct_free_ports_for_services_started_together():
    from lab.processes import free_ports
    ports = free_ports(300)
    assert len(set(ports)) == 300


@pytest.mark.parametrize("name", ["rest/python_flask", "rest/node_fastify"])
def test_a_service_whose_port_is_taken_is_not_taken_for_healthy(lab, tmp_path, name):
    """Another healthy service of the same protocol answering on the port (it
    got there first) must not pass for this one, which could not bind it and
    is exiting: the lab says it failed instead of running its tests against a
    dead process (a CI run once stopped at its first test that way)."""
    from lab.processes import ProcessFailed
    from lab.stack import _start_native, stop_all
    taken = int(lab.endpoints["rest/go_nethttp"].rsplit(":", 1)[1].split("/")[0])
    owned = []
    try:
        with pytest.raises(ProcessFailed, match="exited with status"):
            _start_native(select([name]), lab.database, tmp_path, [taken], owned)
    finally:
        stop_all(owned)
    assert lab.processes["rest/go_nethttp"].popen.poll() is None  # the port's owner is untouched


def test_what_make_bootstrap_runs_before_the_venv_needs_only_the_standard_library():
    """`make bootstrap` builds the database and the Go/Node.js services with the
    system's python3 while pip fills .venv (Makefile: db, builds): those modules
    import nothing outside the standard library (a CI run once failed there)."""
    code = "import lab.database, lab.build; print('ok')"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_tests_that_change_the_host_share_one_worker():
    """make test's workers (lab/pytest_plugin/scheduling.py): a host-wide test is scheduled in its
    group, any other test on its own; every file named there exists (a renamed
    file would otherwise run beside the others unnoticed)."""
    from lab.pytest_plugin.scheduling import ONE_WORKER, scope_of
    here = Path(__file__).parent
    for group, files in ONE_WORKER.items():
        for file in files:
            assert (here / file).is_file(), file
            assert scope_of(f"tests/{file}::test_x[rest/python_flask]") == group
    other = "tests/test_conformance.py::test_get[rest/python_flask]"
    assert scope_of(other) == other


def test_a_clone_waits_for_a_build_into_its_tree_that_another_process_is_running(tmp_path, monkeypatch):
    """The build cache is shared by every clone on the machine; a build whose output is in
    the tree (npm ci's node_modules) is built in each clone, and a caller that arrives while
    another is still building it waits for the finished output (CI once ran node on a
    half-written node_modules: the first clone's marker in the cache called it built)."""
    import threading

    from lab import registry

    monkeypatch.setenv("PROTOLAB_CACHE", str(tmp_path / "cache"))
    step = ["sh", "-c", "rm -rf {dir}/out && mkdir {dir}/out && sleep 1 && echo done > {dir}/out/file"]

    def impl_in(clone: Path) -> registry.Implementation:
        (clone / "pkg").mkdir(parents=True)
        (clone / "pkg" / "lock").write_text("same inputs in every clone\n")
        monkeypatch.setattr(registry, "ROOT", clone)
        return registry.Implementation(
            name="test/sh_build", protocol="test", language="sh", library="sh", server="", path=clone / "pkg",
            command=("true",), endpoint="", build_command=tuple(step), build_inputs=("pkg/lock",),
            build_output="pkg/out", needs=("sh",))

    impl_in(tmp_path / "first").build()
    assert (tmp_path / "first" / "pkg" / "out" / "file").exists()

    second = impl_in(tmp_path / "second")
    builder = threading.Thread(target=second.build)
    builder.start()
    deadline = time.monotonic() + 10
    while not (tmp_path / "second" / "pkg" / "out").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "second" / "pkg" / "out").exists(), "the build never started"
    second.build()  # arrives while the other build is writing its output
    assert (tmp_path / "second" / "pkg" / "out" / "file").read_text() == "done\n"
    builder.join(timeout=10)


def test_a_failing_tests_report_carries_the_log_of_the_server_it_named(tmp_path):
    """A test parametrized by an implementation that fails: its report shows that server's last log
    lines (what a server said when its client timed out), read from the log the lab keeps of it."""
    impl = SERVED[-1]
    log_file = tmp_path / "log"
    (tmp_path / "test_fails.py").write_text(textwrap.dedent(f"""
        import pytest

        @pytest.mark.parametrize("impl", [{impl!r}])
        def test_fails(impl, lab):
            open({str(log_file)!r}, "w").write(lab.log_tail(impl))
            assert False, "deliberate"
    """))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "lab.pytest_plugin", "-p", "no:cacheprovider", "-q",
         str(tmp_path / "test_fails.py")],
        cwd=tmp_path, env={**ENV, "LAB_ONLY": impl}, capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stdout + result.stderr
    section = f"{impl}: its server's last log lines (native)"
    assert section in result.stdout, result.stdout
    logged = log_file.read_text().strip()
    assert logged, "the service wrote nothing to its log: nothing to compare"
    assert logged.splitlines()[-1] in result.stdout.split(section, 1)[1]
