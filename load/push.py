"""Push load: Timeplus's and Pathan's scenarios on the SSE implementations,
with the lab's SSE load client (load/sse-client, Go, built once into the
lab's cache): python -m load.push [--quick]

- Timeplus, test I: events/s as the batch size goes 1-400 at 10 subscriptions;
  test II: events/s as subscriptions go 1-60 at batch 50; one message per ms
  per subscription (Timeplus's 1 ms interval), over HTTP/2 (h2c: all
  subscriptions on one connection, as Timeplus's browser tab) and HTTP/1.1.
- Pathan: latency (receive time - the server's send timestamp) at 10-1,000
  subscriptions, one message per second each, batch 1, over HTTP/1.1.

Client and server CPU: the client's from the kernel's account of the exited
process (wait4), the server's process tree from lab.resources, both over the
run's wall time (100 % = one core). The raw samples (the load instrument's
CSV format) stay in results/load/push-raw/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from lab import settings
from lab.context import run_context
from lab.registry import select
from lab.resources import cpu_seconds
from lab.stack import running_lab

SOURCE = Path(__file__).parent / "push-client"
TIMEPLUS_BATCHES = (1, 10, 50, 100, 200, 400)
TIMEPLUS_CONCURRENCY = (1, 10, 20, 30, 40, 50, 60)
PATHAN_CLIENTS = (10, 50, 100, 500, 1000)
# The studies' own figures, beside the lab's (Timeplus: read from its text; its
# charts' other points are not in the text).
TIMEPLUS = {"sse_batch400_c10_eps": 3_000_000, "sse_max_c60_b50_eps": 2_700_000, "ws_max_b50_eps": 2_400_000,
            "setup": "Chrome 103 tab (EventSource / WebSocket), Apple M1 Pro 10 cores, HTTP/2, 1 ms interval"}
PATHAN_SSE_MS = {10: (3.56, 3.11), 50: (1.49, 1.15), 100: (0.88, 0.28), 500: (0.70, 0.28), 1000: (9.75, 49.06)}
PATHAN_SSE_CPU = {10: 2.66, 50: 2.52, 100: 3.15, 500: 26.90, 1000: 36.51}


def sse_client() -> Path:
    """The Go load client, built once per source into the lab's cache."""
    digest = hashlib.sha256()
    for path in sorted(SOURCE.glob("*")):
        digest.update(path.name.encode() + path.read_bytes())
    binary = settings.cache_dir() / "builds" / f"sse-client-{digest.hexdigest()[:16]}" / "sse-client"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=SOURCE, check=True, timeout=600)
    return binary


def run(binary: Path, endpoint: str, server_pid: int, *, clients: int, batch: int, rate: int,
        seconds: float, h2: bool, raw: Path) -> dict[str, Any]:
    raw.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(binary), "-url", endpoint, "-clients", str(clients), "-batch", str(batch), "-rate", str(rate),
            "-seconds", str(seconds), "-out", str(raw)] + (["-h2"] if h2 else [])
    server_before = cpu_seconds(server_pid)
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    server_cpu = cpu_seconds(server_pid) - server_before
    out, err = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    if process.returncode != 0:
        raise RuntimeError(f"sse-client failed ({process.returncode}): {err.decode()[-500:]}")
    summary = json.loads(out.decode().strip().splitlines()[-1])
    return {"clients": clients, "batch": batch, "rate": rate, "seconds": seconds,
            "transport": "HTTP/2 (h2c)" if h2 else "HTTP/1.1", **summary, "wall_s": round(wall, 2),
            "client_cpu_percent": round(100 * (usage.ru_utime + usage.ru_stime) / wall, 1),
            "server_cpu_percent": round(100 * server_cpu / wall, 1), "raw": str(raw)}


def scenarios(quick: bool) -> list[tuple[str, dict[str, Any]]]:
    seconds = 3.0 if quick else 5.0
    plan: list[tuple[str, dict[str, Any]]] = []
    for h2 in (True, False):
        plan += [("timeplus-batch", dict(clients=10, batch=b, rate=1000, seconds=seconds, h2=h2))
                 for b in TIMEPLUS_BATCHES]
        plan += [("timeplus-concurrency", dict(clients=c, batch=50, rate=1000, seconds=seconds, h2=h2))
                 for c in TIMEPLUS_CONCURRENCY]
    plan += [("pathan", dict(clients=n, batch=1, rate=1, seconds=10.0, h2=False)) for n in PATHAN_CLIENTS]
    return plan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m load.push", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s per Timeplus run instead of 5")
    parser.add_argument("--only", nargs="*", default=None, help="SSE implementations (default: all)")
    parser.add_argument("--out", default=str(settings.RESULTS / "load"))
    args = parser.parse_args(argv)
    binary = sse_client()
    out = Path(args.out)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rows = []
    names = args.only or [i.name for i in select() if i.protocol == "sse"]
    with running_lab(names, "native") as lab:
        for impl in (i for i in lab.implementations if i.protocol == "sse"):
            for scenario, params in scenarios(args.quick):
                raw = out / "push-raw" / stamp / f"{impl.name.replace('/', '-')}-{scenario}-{len(rows)}.csv"
                row = {"implementation": impl.name, "scenario": scenario,
                       **run(binary, lab.endpoints[impl.name], lab.pids[impl.name], raw=raw, **params)}
                rows.append(row)
                print(json.dumps({k: row[k] for k in ("implementation", "scenario", "transport", "clients", "batch",
                                                      "events_per_s", "latency_ms", "client_cpu_percent",
                                                      "server_cpu_percent", "errors")}), flush=True)
        context = run_context(lab.mode, lab.database, lab.implementations)
    results = {"rows": rows, "context": context, "studies": {"timeplus": TIMEPLUS, "pathan_sse_ms": PATHAN_SSE_MS,
                                                             "pathan_sse_cpu_percent": PATHAN_SSE_CPU}}
    out.mkdir(parents=True, exist_ok=True)
    for path in (out / f"push-{stamp}.json", out / "push-latest.json"):
        path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out / 'push-latest.json'}")


if __name__ == "__main__":
    main()
