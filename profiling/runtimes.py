"""Each runtime's own profiler, as the profiling run drives it: the environment
a service starts with, how sampling begins and ends around the workload, and
how its native file becomes collapsed stacks. Chosen by the manifest's
`language`; a new language adds a class here and a table in categories.toml."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from lab.processes import free_port
from profiling import fold
from profiling.fold import Stacks


class Unavailable(RuntimeError):
    """The profiler cannot be had here (not installed, no permission): said, not hidden."""


def _pyspy() -> str:
    found = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        raise Unavailable("py-spy is not installed (pyproject's dev dependencies: make bootstrap)")
    return found


class PySpy:
    """py-spy attached by pid to the service and its children (gunicorn's workers),
    aggregated by function, only threads holding the GIL (--gil): without it
    py-spy counted gevent's hub waiting in libev and its threadpool waiting on a
    lock as busy (275 samples in a window of 0.78 CPU-seconds, 2026-12-02; 81 of
    ~90 with it). So native threads running without the GIL (grpcio's C core)
    are not in it: summary.json's `coverage` says how much of the CPU is."""
    native = "py-spy.collapsed"  # py-spy's raw format is the collapsed form itself
    rate = 100  # Hz, as runtime/pprof's

    def __init__(self, workdir: Path):
        self.binary = _pyspy()
        self.proc: subprocess.Popen | None = None

    def environment(self) -> dict[str, str]:
        return {}

    def command(self, argv: list[str]) -> list[str]:
        return argv

    def begin(self, pid: int, seconds: float, directory: Path) -> None:
        self.out = directory / self.native
        self.log = directory / "py-spy.log"
        self.proc = subprocess.Popen(
            [self.binary, "record", "--pid", str(pid), "--subprocesses", "--function", "--gil",
             "--rate", str(self.rate),
             "--duration", str(max(1, round(seconds))), "--format", "raw", "--output", str(self.out)],
            stdout=self.log.open("w"), stderr=subprocess.STDOUT)

    def sampling(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def end(self, seconds: float) -> None:
        assert self.proc is not None
        code = self.proc.wait(timeout=seconds + 60)
        if code != 0 or not self.out.exists():
            raise Unavailable(f"py-spy exited with {code}: {self.log.read_text()[-500:]} "
                              "(it needs ptrace: root, or kernel.yama.ptrace_scope 0)")

    def finish(self, directory: Path) -> Stacks:
        stacks = fold.read_collapsed(directory / self.native)
        return Counter({_short(s): n for s, n in stacks.items()})


def _short(stack: str) -> str:
    """Frames name files by their full path: the repository's, site-packages' and the
    standard library's prefixes dropped (the category patterns match what is left)."""
    root = str(Path(__file__).resolve().parents[1]) + "/"
    out = []
    for frame in stack.split(";"):
        if frame.startswith("process ") and ":" in frame:  # --subprocesses: the process, not a frame
            continue
        frame = frame.replace(root, "")
        head, sep, tail = frame.partition("(")
        if "/node_modules/" in tail:
            tail = "node_modules/" + tail.split("/node_modules/", 1)[1]
        elif "site-packages/" in tail:
            tail = tail.split("site-packages/", 1)[1]
        elif "/lib/python3" in tail:
            tail = tail.split("/lib/python3", 1)[1].split("/", 1)[-1]
        out.append(head + sep + tail)
    return ";".join(out)


class Pprof:
    """Go's runtime/pprof through the service's opt-in endpoint (LAB_PPROF_ADDR,
    services/common/go/profiling.go): one CPU profile of exactly `seconds`."""
    native = "cpu.pb.gz"
    rate = 100  # Hz, runtime/pprof's

    def __init__(self, workdir: Path):
        if shutil.which("go") is None:
            raise Unavailable("go is not on PATH (go tool pprof folds the profile)")
        self.addr = f"127.0.0.1:{free_port()}"
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def environment(self) -> dict[str, str]:
        return {"LAB_PPROF_ADDR": self.addr}

    def command(self, argv: list[str]) -> list[str]:
        return argv

    def begin(self, pid: int, seconds: float, directory: Path) -> None:
        def fetch() -> None:
            try:
                url = f"http://{self.addr}/debug/pprof/profile?seconds={seconds}"
                with urllib.request.urlopen(url, timeout=seconds + 30) as answer:
                    (directory / self.native).write_bytes(answer.read())
            except BaseException as exc:  # noqa: BLE001 -- reported by end()
                self.error = exc
        self.thread = threading.Thread(target=fetch, daemon=True)
        self.thread.start()

    def sampling(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def end(self, seconds: float) -> None:
        assert self.thread is not None
        self.thread.join(timeout=seconds + 60)
        if self.error is not None:
            raise Unavailable(f"the Go service's profile endpoint ({self.addr}): {self.error}")

    def finish(self, directory: Path) -> Stacks:
        return fold.pprof(directory / self.native)


class V8:
    """V8's CPU profiler (node --cpu-prof, put on the service's command line: Node.js 20
    refuses it in NODE_OPTIONS): it samples the
    whole life of the process and writes its .cpuprofile when the process exits,
    so each workload's window is cut from it afterwards by time (V8's clock and
    Python's time.monotonic are both CLOCK_MONOTONIC)."""
    native = "v8.cpuprofile"
    interval_us = 1000  # V8's default sampling interval
    rate = 1e6 / interval_us

    def __init__(self, workdir: Path):
        self.dir = Path(workdir) / f"v8-{id(self)}"
        self.dir.mkdir(parents=True)
        self.pid = 0
        self.windows: dict[Path, tuple[int, int]] = {}

    def environment(self) -> dict[str, str]:
        return {}

    def command(self, argv: list[str]) -> list[str]:
        if Path(argv[0]).name != "node":
            raise Unavailable(f"the service does not start with node: {argv[0]}")
        return [argv[0], "--cpu-prof", f"--cpu-prof-dir={self.dir}", f"--cpu-prof-interval={self.interval_us}",
                *argv[1:]]

    def begin(self, pid: int, seconds: float, directory: Path) -> None:
        self.pid, self.seconds = pid, seconds
        self.started = time.monotonic_ns() // 1000
        self.current = directory

    def sampling(self) -> bool:
        return time.monotonic_ns() // 1000 - self.started < self.seconds * 1e6

    def end(self, seconds: float) -> None:
        self.windows[self.current] = (self.started, time.monotonic_ns() // 1000)

    def finish(self, directory: Path) -> Stacks:
        """After the service stopped (onStop exits cleanly: V8 writes the profile then)."""
        files = sorted(self.dir.glob(f"CPU.*.{self.pid}.*.cpuprofile"))
        if not files:
            raise Unavailable(f"node wrote no .cpuprofile into {self.dir} (did the service exit cleanly?)")
        start, end = self.windows[directory]
        cut = fold.v8_window(fold.v8_file(files[-1]), start, end)
        (directory / self.native).write_text(json.dumps(cut))
        return Counter({_short(s): n for s, n in fold.v8(cut).items()})


RUNTIMES = {"python": PySpy, "go": Pprof, "node": V8}


class Perf:
    """The database as a native process: perf's stacks where the kernel lets
    perf sample (cpu-clock, a software event: this VM counts no hardware ones)."""
    native = "database.perf.data"

    @staticmethod
    def why_not() -> str | None:
        if shutil.which("perf") is None:
            return "perf is not installed (Debian: linux-perf)"
        probe = subprocess.run(["perf", "record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            return f"perf record failed here: {probe.stderr.strip()[-200:]}"
        return None

    def begin(self, pid: int, seconds: float, directory: Path) -> None:
        self.out = directory / self.native
        self.proc = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "199", "-g", "-p", str(pid),
                                      "-o", str(self.out), "--", "sleep", str(seconds)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def end(self, seconds: float) -> Stacks:
        self.proc.wait(timeout=seconds + 60)
        text = subprocess.run(["perf", "script", "-i", str(self.out)], capture_output=True, text=True,
                              timeout=300).stdout
        return fold.perf_script(text)
