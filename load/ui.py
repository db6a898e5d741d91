"""python -m load.ui (make load-ui): the lab (database and services) started,
and Locust's web UI on 127.0.0.1 with the lab's users preloaded: choose an
implementation (Lab impl) and an operation (Lab operation), the users and
their spawn rate, start, and watch throughput and latency move. The lab's own
µs percentiles (every answer timed in the users, HDR-merged over the workers)
are on /lab beside Locust's charts, which round to whole milliseconds.

    python -m load.ui [--impl NAME ...] [--workers N] [--port P]

The database holds the fetch set (fetch-one and fetch-100's state; an insert
adds to it). Stop with Ctrl-C: the UI, the workers, the services and the
database are stopped by their process ids.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any

from lab.processes import free_port
from lab.stack import running_lab
from load.common import drivable, prepare
from load.engine import LOCUSTFILE, locust_command


def command(port: int, workers: int, master_port: int | None) -> list[str]:
    argv = [*locust_command(), "--web-host", "127.0.0.1", "--web-port", str(port), "--exit-code-on-error", "0"]
    if workers:
        argv += ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port),
                 "--expect-workers", str(workers)]
    return argv


def targets(lab: Any) -> str:
    return json.dumps({i.name: {"protocol": i.protocol, "endpoint": lab.endpoints[i.name],
                                **({"options": i.client_options()} if i.client_options() else {})}
                       for i in lab.implementations})


def start(lab: Any, port: int, workers: int = 0, log: Any = None) -> list[Any]:
    """Locust's web UI (and its workers) for the running lab: the processes."""
    import os
    import subprocess

    from lab.settings import ROOT
    env = {**os.environ, "LAB_LOAD_TARGETS": targets(lab), "PYTHONUNBUFFERED": "1"}
    master_port = free_port() if workers else None
    out = log or subprocess.DEVNULL
    procs = [subprocess.Popen(command(port, workers, master_port), env=env, cwd=ROOT, stdout=out,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)]
    for _ in range(workers):
        procs.append(subprocess.Popen([*locust_command(), "--worker", "--master-host", "127.0.0.1",
                                       "--master-port", str(master_port)], env=env, cwd=ROOT, stdout=out,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
    return procs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m load.ui", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", nargs="*", help="implementations (default: every one Locust can drive)")
    p.add_argument("--workers", type=int, default=0, help="Locust workers under the UI's master (default 0)")
    p.add_argument("--port", type=int, default=0, help="the UI's port (default: a free one)")
    args = p.parse_args(argv)
    port = args.port or free_port()
    from lab.processes import terminate
    with running_lab(drivable(args.impl, ("fetch-one",))) as lab:
        prepare(lab, "fetch-one")
        procs = start(lab, port, args.workers, log=sys.stdout)
        print(f"\nLocust's web UI: http://127.0.0.1:{port}/  (the lab's µs percentiles: "
              f"http://127.0.0.1:{port}/lab)\nlocustfile: {LOCUSTFILE}; Ctrl-C stops everything.", flush=True)
        stop = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
        try:
            while not stop["now"] and procs[0].poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            for proc in procs:
                terminate(proc, grace=3.0, group=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
