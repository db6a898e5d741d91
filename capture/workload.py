"""The client side of a wire capture: performs operations and says when.

A `Workload` holds the lab's clients and runs, for one implementation and
operation, either `steady(...)` (warm-up, then n operations on the open
connection) or `new_connection(...)` (client made, one operation, closed, and
the TCP close finished).  Each returns the `time.time()` window the
operations ran in, which the capture is later cut by.

It runs where the client sockets should be: in this process for a loopback
capture, or inside the veth namespace (`python -m capture.workload`, driven
by `RemoteWorkload` over JSON lines on stdin/stdout) for `--netns`.

The operations and their arguments are the workload table's (lab/workload.py,
those marked `capture`): the median game is inserted; fetch-one and update use
the fetch set's middle game; fetch-100 lists the whole fetch set; delete
removes fetch-set games in order.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from clients import connect
from clients.base import GameClient
from lab import workload
from lab.settings import ROOT

WARMUP = 2  # operations before a steady window: pools, HPACK tables and caches warm
CLOSE_TIMEOUT = 5.0
# Client-side TCP states that mean a connection is still being set up or closed.
# Not CLOSE-WAIT: a socket there is one its owner has not closed yet — never a
# client we just closed, but e.g. another idle keep-alive client whose server
# timed the connection out (waiting for it would wait forever).
_UNSETTLED = {"SYN-SENT", "FIN-WAIT-1", "FIN-WAIT-2", "LAST-ACK", "CLOSING"}


def unsettled_connections(port: int) -> list[str]:
    """Lines of `ss` for client sockets to `port` still opening or closing."""
    done = subprocess.run(["ss", "-Htan", f"dport = :{int(port)}"], check=False,
                          capture_output=True, text=True, timeout=10)
    return [line for line in done.stdout.splitlines() if line.split()[0] in _UNSETTLED]


def wait_settled(port: int, timeout: float = CLOSE_TIMEOUT) -> None:
    """Until both FINs of every closed connection to `port` are acknowledged,
    so the whole close is inside the window (polled, with a deadline)."""
    deadline = time.monotonic() + timeout
    while unsettled_connections(port):
        if time.monotonic() > deadline:
            raise TimeoutError(f"connections to port {port} still closing: "
                               f"{unsettled_connections(port)}")
        time.sleep(0.002)


class Workload:
    def __init__(self, factory: Callable[[str], GameClient], ports: dict[str, int]):
        self.factory = factory      # name -> new connected client
        self.ports = ports          # name -> service port (for wait_settled)
        self.kept: dict[str, GameClient] = {}

    def open(self, name: str) -> dict[str, float]:
        t0 = time.time()
        self.kept[name] = self.factory(name)
        return {"t0": t0, "t1": time.time()}

    def close(self, name: str) -> dict[str, float]:
        t0 = time.time()
        self.kept.pop(name).close()
        if name in self.ports:
            wait_settled(self.ports[name])
        return {"t0": t0, "t1": time.time()}

    def steady(self, name: str, op: str, n: int, warmup: int = WARMUP) -> dict[str, float]:
        client = self.kept[name]
        for i in range(warmup):
            workload.get(op).nth(client, i)
        t0 = time.time()
        for i in range(warmup, warmup + n):
            workload.get(op).nth(client, i)
        return {"t0": t0, "t1": time.time()}

    def new_connection(self, name: str, op: str, index: int = 0) -> dict[str, float]:
        t0 = time.time()
        client = self.factory(name)
        try:
            workload.get(op).nth(client, index)
        finally:
            client.close()
        wait_settled(self.ports[name])
        return {"t0": t0, "t1": time.time()}

    def close_all(self) -> None:
        for name in list(self.kept):
            self.kept.pop(name).close()


class RemoteWorkload:
    """A Workload in another process (e.g. inside a network namespace), same methods."""

    def __init__(self, argv_prefix: list[str], endpoints: dict[str, tuple[Any, ...]],
                 ports: dict[str, int], timeout: float = 60.0):
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [*argv_prefix, sys.executable, "-m", "capture.workload"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        self._request({"endpoints": endpoints, "ports": ports})

    def _request(self, message: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            raise TimeoutError(f"workload process silent for {self.timeout} s on {message}")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"workload process exited ({self.proc.poll()}) on {message}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"workload process: {reply['error']}")
        return reply["result"]

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in ("open", "close", "steady", "new_connection"):
            raise AttributeError(method)
        return lambda *args: self._request({"method": method, "args": list(args)})

    def close_all(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # end of input: the worker closes its clients and exits
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def _serve() -> None:
    """Worker loop: first line {endpoints, ports}, then {method, args} per line. An endpoint
    is [protocol, endpoint, options]: options, the client's keywords its variant sets
    (lab/axes.py Value.client, e.g. the compression it asks for), may be left out."""
    setup = json.loads(sys.stdin.readline())
    endpoints = {name: (pe[0], pe[1], pe[2] if len(pe) > 2 else {}) for name, pe in setup["endpoints"].items()}
    workload = Workload(lambda name: connect(endpoints[name][0], endpoints[name][1], **endpoints[name][2]),
                        setup["ports"])
    print(json.dumps({"result": None}), flush=True)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                result = getattr(workload, request["method"])(*request["args"])
                print(json.dumps({"result": result}), flush=True)
            except Exception as exc:  # reported to the driver, which stops the run
                print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
    finally:
        workload.close_all()


if __name__ == "__main__":
    _serve()
