"""python -m load.crosscheck: the concurrency-1 cross-check (issue 46 item 8).

For each operation of the latency suite (insert, fetch-one, fetch-100) and
each implementation whose protocol has a cross-check client (a descriptor's
`crosscheck`, clients/<protocol>/crosscheck/: Go or Node.js, on that
protocol's most-used library): the service warmed as the latency suite warms
it, the database prepared as the suite prepares it, then the outside client
sends the lab's Python client's own request (the descriptor's
`crosscheck_plan`, clients/<protocol>/client.py wire_plan) WARMUP times
untimed and --calls times timed, one call at a time, each timed by the client
itself (monotonic ns, write start to reply decoded). The report sets its
median beside the Python client's (results/benchmarks/native-latest.json):
how much of each latency figure is the Python client.

    python -m load.crosscheck [--impl NAME ...] [--calls N]

Results: results/load/crosscheck-<date>.json and crosscheck-latest.json.
CPU per call (service, database, the outside client) is over the client's
whole run, warm-up calls included, divided by all its calls. Nothing is
pinned: the latency suite it is compared with runs unpinned too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
import tomllib
from typing import Any

from clients.base import CALL_TIMEOUT, OperationClient
from clients.protocols import PROTOCOLS, Protocol
from lab import settings, workload
from lab.context import run_context
from lab.registry import Implementation
from lab.resources import cpu_seconds
from lab.stack import Lab, running_lab
from load import histograms
from load.common import chosen, prepare, write

# The latency suite's operations (the workload table's): its medians stand beside these.
OPERATED = workload.LATENCY
CALLS = 1000   # timed calls per operation and implementation: a median to well under 1 %
WARMUP = 100   # the outside client's own untimed calls first (its connection, its runtime's warm-up)
# A client stops after 10 failed calls (clients/internal/crosscheck MaxErrors), each bounded by
# CALL_TIMEOUT; its whole run by this.
RUN_TIMEOUT_S = 900.0


# --- what is sent ----------------------------------------------------------------

class _Recorder(OperationClient):
    """A client that records the contract call made on it instead of making it."""

    def _call(self, op: str, **params: Any) -> tuple[str, dict[str, Any]]:
        return op, params


def contract_call(operation: str) -> tuple[str, dict[str, Any]]:
    """(op, params) of the workload table's call for `operation` (lab/workload.py:
    the latency suite's game, id and page)."""
    return workload.get(operation).call(_Recorder())()


def plan(protocol: Protocol, endpoint: str, operation: str, calls: int = CALLS,
         warmup: int = WARMUP) -> dict[str, Any]:
    """What the cross-check client reads: the endpoint and the lab client's request."""
    op, params = contract_call(operation)
    return {"endpoint": endpoint, "request": protocol.crosscheck_plan_function()(endpoint, op, params),
            "operation": operation, "warmup": warmup, "calls": calls, "timeout_s": CALL_TIMEOUT}


# --- the outside clients: built and run as their manifests say --------------------

def client_build(protocol: Protocol) -> Implementation:
    """The cross-check client of `protocol` from its crosscheck.toml, as the lab's build
    code (lab.registry.Implementation) builds, caches and versions a service."""
    folder = protocol.crosscheck_dir()
    if folder is None:
        raise ValueError(f"{protocol.name}: no cross-check client ({protocol.no_crosscheck})")
    manifest = tomllib.loads((folder / "crosscheck.toml").read_text())
    build, run, versions = manifest.get("build", {}), manifest["run"], manifest.get("versions", {})
    return Implementation(
        name=f"crosscheck/{protocol.name}", protocol=protocol.name, language=manifest["language"],
        library=manifest["library"], server="", path=folder, command=tuple(run["command"]), endpoint="",
        build_command=tuple(build.get("command", ())), build_inputs=tuple(build.get("inputs", ())),
        build_output=build.get("output", ""),
        needs=tuple(dict.fromkeys([*build.get("needs", ()), *run.get("needs", ())])),
        lockfile=versions.get("lockfile", "python"), packages=tuple(versions.get("packages", ())),
        base=f"crosscheck/{protocol.name}")


def run_client(client: Implementation, the_plan: dict[str, Any], pids: dict[str, int]) -> dict[str, Any]:
    """Run the client on the plan; its output, and the CPU seconds each of `pids` and the
    client itself used meanwhile."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="crosscheck-plan-") as f:
        json.dump(the_plan, f)
        f.flush()
        argv = client.expand(client.command, plan=f.name)
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            done = subprocess.run(argv, cwd=settings.ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # run() has killed it
            raise RuntimeError(f"{client.name} did not finish within {RUN_TIMEOUT_S:.0f} s") from None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{client.name} failed (exit {done.returncode}): {done.stderr[-1500:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    used = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    used["client"] = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    out["cpu_s"] = used
    return out


# --- figures -------------------------------------------------------------------------

def latency_summary(samples_ns: list[int]) -> dict[str, Any]:
    """p50, p90, p99, p99.9, max, mean and σ in µs, from an HDR histogram of the samples."""
    histogram = histograms.new_histogram()
    for ns in samples_ns:
        histograms.record_ns(histogram, ns)
    return histograms.latency_summary(histogram)


def python_block(lab: Lab, impl: Implementation, operation: str, calls: int) -> list[int]:
    """`calls` timed calls of the lab's Python client (the latency suite's), ns each,
    on one connection opened before timing."""
    client = lab.client(impl.name)
    try:
        call = workload.get(operation).call(client)
        call()  # the connection open and warm, as the outside client's warm-up calls do
        out = []
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            call()
            out.append(time.perf_counter_ns() - t0)
        return out
    finally:
        client.close()


def warm(lab: Lab, impl: Implementation, operation: str, max_s: float | None = None) -> int | None:
    """The untimed calls the latency suite gives a subject whose manifest asks
    for them (`[bench] warmup_calls`: the Node.js services, 6,000), through the
    lab's Python client, at most `max_s` seconds (default: the suite's
    LAB_BENCH_WARMUP_MAX_S): V8 speeds a service up by what it has executed, so
    the outside client's own warm-up alone would leave it less warm than the
    suite does. How many were made; None: not asked."""
    if not impl.warmup_calls:
        return None
    prepare(lab, operation)
    client = lab.client(impl.name)
    try:
        limit = workload.warmup_max_s() if max_s is None else max_s
        return workload.untimed_calls(workload.get(operation).call(client), impl.warmup_calls, limit)
    finally:
        client.close()


def measure(lab: Lab, impl: Implementation, operation: str, calls: int = CALLS, warmup: int = WARMUP,
            service_warmup_s: float | None = None) -> dict[str, Any]:
    """One implementation and operation: warmed (at most `service_warmup_s`, default the
    latency suite's limit), prepared, the outside client's run folded."""
    protocol = PROTOCOLS[impl.protocol]
    client = client_build(protocol)
    client.build()
    warmed = warm(lab, impl, operation, service_warmup_s)
    prepare(lab, operation)
    pids = {"service": lab.pids[impl.name]}
    if lab.database.pid:
        pids["database"] = lab.database.pid
    load_before = os.getloadavg()[0]  # the machine's other work: neighbours' runs share its two cores
    # The lab's Python client in the same cell, half its calls before the outside
    # client's run and half after (A B A), so both meet the machine in the same
    # condition: the ratio of their medians is the client's share, not the hour's.
    python = python_block(lab, impl, operation, calls // 2)
    prepare(lab, operation)
    out = run_client(client, plan(protocol, lab.endpoints[impl.name], operation, calls, warmup), pids)
    prepare(lab, operation)
    python += python_block(lab, impl, operation, calls - calls // 2)
    made = warmup + calls
    py = latency_summary(python)
    outside = latency_summary(out["samples_ns"])
    return {"client": f"{out['library']} {out['version']}", "library": out["library"], "version": out["version"],
            "language": client.language, "latency_us": outside,
            "python_client_latency_us": py,
            "python_over_outside": (round(py["p50"] / outside["p50"], 3) if py["p50"] and outside["p50"] else None),
            "calls": calls, "warmup": warmup, "answered": len(out["samples_ns"]), "errors": out["errors"],
            "first_error": out.get("first_error"), "request_sha256": out["request_sha256"],
            "request_bytes": out["request_bytes"], "service_warmup_calls": warmed,
            "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            # over the client's whole run: its warm-up calls and connection set-up included
            "cpu_us_per_call": {name: round(1e6 * s / made, 1) for name, s in out["cpu_s"].items()}}


# --- the run --------------------------------------------------------------------------

def why_not(impl: Implementation) -> str | None:
    """Why the outside client cannot cross-check `impl`, or None."""
    protocol = PROTOCOLS.get(impl.protocol)
    if protocol is None or not protocol.crosscheck:
        return protocol.no_crosscheck if protocol else "no protocol descriptor"
    if not impl.serves("create", "get", "list"):
        return "it does not serve create, get and list (its manifest's operations)"
    return None


def main(args: argparse.Namespace) -> int:
    """args: impl (names or None), calls (timed calls per run; default CALLS), as
    the load command's scenarios take them (duration and the others unused)."""
    settings.measuring()
    calls = getattr(args, "calls", None) or CALLS
    if isinstance(calls, list):  # a scenario's --calls may take several
        calls = calls[0]
    began = time.monotonic()
    results: dict[str, dict[str, Any]] = {}
    with running_lab(chosen(args.impl, why_not, "no implementation to cross-check")) as lab:
        for operation in OPERATED:
            for impl in lab.implementations:
                cell = measure(lab, impl, operation, calls)
                results.setdefault(operation, {})[impl.name] = cell
                print(line(operation, impl.name, cell), flush=True)
        context = run_context(lab.mode, lab.database, lab.implementations)
        context["crosscheck"] = {
            "operations": list(OPERATED), "calls": calls, "warmup": WARMUP, "call_timeout_s": CALL_TIMEOUT,
            "pinning": "none (as the latency suite)", "seconds": round(time.monotonic() - began, 1),
            "clients": {p.name: {"folder": str(p.crosscheck_dir().relative_to(settings.ROOT)),
                                 **client_build(p).versions()}
                        for p in PROTOCOLS.values() if p.crosscheck
                        and any(i.protocol == p.name for i in lab.implementations)}}
    path = write("crosscheck", {"context": context, "results": results}, kind="crosscheck")
    print(f"cross-check: {context['crosscheck']['seconds']:.0f} s; results: {path.relative_to(settings.ROOT)}")
    return 0


def line(operation: str, name: str, cell: dict[str, Any]) -> str:
    lat = cell["latency_us"]
    errors = f"  errors {cell['errors']}" if cell["errors"] else ""
    py = (cell.get("python_client_latency_us") or {}).get("p50")
    p99 = f"{lat['p99']:>8,}" if lat["p99"] is not None else "       –"
    return (f"{operation:<9} {name:<34} {cell['client']:<32} median {lat['p50'] or 0:>8,} µs  "
            f"p99 {p99} µs  Python client {py or 0:>8,} µs  ({cell['answered']}/{cell['calls']}){errors}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m load.crosscheck", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", nargs="*", metavar="IMPL", help="implementations (default: all)")
    p.add_argument("--calls", type=int, default=CALLS, help=f"timed calls per run (default {CALLS})")
    return p


if __name__ == "__main__":
    raise SystemExit(main(parser().parse_args()))
