"""The lab's own Python client of an implementation, profiled: a child process
calls the latency suite's operation in a loop through clients.connect (the
client every suite uses) while py-spy samples it. For clients whose CPU is a
large part of a figure (SOAP's zeep: issue 45).

    python -m profiling.client --impl soap/python_spyne --operation fetch-100 --seconds 10

Writes results/profiles/<impl>/<operation>/client/: py-spy.collapsed,
stacks.collapsed and summary.json (as the services' profiles, with the
client's CPU µs per call)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from lab import settings, workload
from lab.registry import select
from lab.stack import running_lab
from profiling import fold, summary
from profiling.run import OUT, SCHEMA, profilable
from profiling.runtimes import _pyspy, _short

LOOP = """
import sys, time
from clients import connect
from lab import workload
protocol, endpoint, operation, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
client = connect(protocol, endpoint)
call = workload.get(operation).call(client)
for _ in range(30):
    call()
print("warm", flush=True)
sys.stdin.readline()  # the profiler is attached
n, t0, c0 = 0, time.monotonic(), time.process_time()
while time.monotonic() - t0 < seconds:
    call()
    n += 1
print(n, time.process_time() - c0, time.monotonic() - t0, flush=True)
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.client", description=__doc__.splitlines()[0])
    p.add_argument("--impl", required=True)
    p.add_argument("--operation", type=profilable, default="fetch-100")
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args(argv)
    settings.measuring()
    impl = select([args.impl])[0]
    out = OUT / impl.name / args.operation / "client"
    out.mkdir(parents=True, exist_ok=True)
    with running_lab(implementations=[impl]) as lab, tempfile.TemporaryDirectory() as work:
        store = lab.store()
        try:
            workload.prepare(store.games, workload.get(args.operation))
        finally:
            store.close()
        child = subprocess.Popen([sys.executable, "-c", LOOP, impl.protocol, lab.endpoints[impl.name],
                                  args.operation, str(args.seconds)], cwd=settings.ROOT, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "warm"
            raw = Path(work) / "py-spy.collapsed"
            spy = subprocess.Popen([_pyspy(), "record", "--pid", str(child.pid), "--function", "--gil",
                                    "--rate", "100", "--duration", str(round(args.seconds)), "--format", "raw",
                                    "--output", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            time.sleep(0.5)  # py-spy attached (its first samples), then the loop starts
            child.stdin.write("go\n")
            child.stdin.flush()
            calls, cpu_s, wall_s = child.stdout.readline().split()
            spy.wait(timeout=args.seconds + 60)
        finally:
            if psutil.pid_exists(child.pid):
                child.kill()
            child.wait(timeout=10)
        (out / "py-spy.collapsed").write_bytes(raw.read_bytes())
    stacks = fold.Stacks({_short(s): n for s, n in fold.read_collapsed(out / "py-spy.collapsed").items()})
    fold.write_collapsed(stacks, out / "stacks.collapsed")
    result = {"schema": SCHEMA, "implementation": impl.name, "operation": args.operation, "process": "client",
              "language": "python", "profiler": "PySpy", "native": "py-spy.collapsed", "calls": int(calls),
              "seconds": float(wall_s), "cpu_us_per_call": {"client": round(float(cpu_s) / int(calls) * 1e6, 1)},
              **summary.summarize(stacks, "python")}
    (out / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"{impl.name} {args.operation} client: {int(calls)} calls, {result['cpu_us_per_call']['client']:,.0f} "
          f"µs CPU per call; {', '.join(f'{c} {s:.0%}' for c, s in result['categories'].items())}")
    for t in result["top"]:
        print(f"  {t['self_share']:5.1%} {t['frame']} [{t['category']}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
