"""Native vs Docker, per operation, from two saved benchmark runs.

    python -m lab.stats.compare [--native results/benchmarks/native-latest.json]
                          [--docker results/benchmarks/docker-latest.json]
                          [--out results/native-vs-docker.md]

One table per operation, as the study's Tables 4-6 (mean, min, max, σ), plus
the median, the median's difference in µs and the Docker/native ratio of
medians. The runs are files written by benchmarks/conftest.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lab import settings
from lab.host import compose
from lab.workload import LATENCY

BENCHMARKS = settings.RESULTS / "benchmarks"
STATS = ("mean", "min", "max", "stddev", "median")
HEADS = {"stddev": "σ"}


def read_run(path: Path) -> dict[str, Any]:
    """One saved run's JSON (a protolab result or pytest-benchmark's), or an
    error naming the file: missing, unreadable, or cut short (a run stopped
    while writing it)."""
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise SystemExit(f"{path}: cannot read it ({e.strerror or e})") from None
    except ValueError as e:
        raise SystemExit(f"{path}: not JSON, or cut short ({e})") from None


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise SystemExit(f"{path} is missing: run the benchmarks in that mode first "
                         f"(make bench / make bench-docker)")
    run = read_run(path)
    if "results" not in run or "context" not in run:
        raise SystemExit(f"{path} is not a protolab benchmark result")
    return run


def describe(label: str, context: dict[str, Any]) -> str:
    db = context.get("database", {})
    text = (f"- **{label}**: {context.get('date')}, commit {context.get('commit')}, "
            f"database {db.get('server')} {db.get('version')}, "
            f"{context.get('cpu', {}).get('count')} × {context.get('cpu', {}).get('model')}, "
            f"{context.get('settings', {}).get('service_threads')} threads per service")
    python = context.get("service_interpreter") or {}
    if python.get("version"):
        text += (f"; services on Python {python['version']} ({python.get('executable')}), "
                 f"calibration {python.get('calibration_us')} µs")
    docker = context.get("docker")
    if docker:
        daemon = docker.get("daemon", {})
        text += (f"; Docker {daemon.get('version')}, userland proxy "
                 f"{'on' if daemon.get('userland_proxy') else 'off'}, {daemon.get('storage_driver')}, "
                 f"cgroup v{daemon.get('cgroup_version')}, images {compose.images_text(docker)}, "
                 f"ports published on {docker.get('published_on')}, service health checks "
                 + (f"every {docker['health_interval']}" if docker.get("health_interval")
                    else "none (the lab's own clients)"))
    return text


def _rounds(rows: dict[str, Any]) -> str:
    counts = sorted({int(r["rounds"]) for r in rows.values()})
    return f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else str(counts[0]) if counts else "-"


def table(operation: str, native: dict[str, Any], docker: dict[str, Any]) -> list[str]:
    subjects = [*native, *(s for s in docker if s not in native)]
    cols = [f"native {HEADS.get(s, s)}" for s in STATS] + [f"docker {HEADS.get(s, s)}" for s in STATS]
    lines = [f"### {operation} (µs; rounds: native {_rounds(native)}, docker {_rounds(docker)})", "",
             "| implementation | " + " | ".join(cols) + " | Δ median | docker / native |",
             "| --- |" + " ---: |" * (len(cols) + 2)]
    for subject in subjects:
        n, d = native.get(subject), docker.get(subject)
        cells = [f"{n[s]:.0f}" if n else "-" for s in STATS] + [f"{d[s]:.0f}" if d else "-" for s in STATS]
        if n and d:
            cells += [f"{d['median'] - n['median']:+.0f}", f"{d['median'] / n['median']:.2f}"]
        else:
            cells += ["-", "-"]
        lines.append(f"| {subject} | " + " | ".join(cells) + " |")
    return lines


def interpreter_warning(native: dict[str, Any], docker: dict[str, Any]) -> str | None:
    """A sentence when the services' interpreters differ: another Python version,
    or a pure-Python calibration more than 5 % apart (another build, or a machine
    whose speed changed between the runs)."""
    n = native.get("service_interpreter") or {}
    d = docker.get("service_interpreter") or {}
    if not n.get("calibration_us") or not d.get("calibration_us"):
        return ("The services' interpreters were not recorded for both runs: part of any difference "
                "may be the interpreter, not the container.")
    ratio = n["calibration_us"] / d["calibration_us"]
    if n.get("version") == d.get("version") and abs(ratio - 1) <= 0.05:
        return None
    return (f"**The interpreters differ:** natively Python {n.get('version')}, calibration "
            f"{n['calibration_us']} µs; in the containers Python {d.get('version')}, calibration "
            f"{d['calibration_us']} µs ({ratio:.2f}×). Part of every difference below may be the "
            "interpreter (its build, or the machine's speed at the time), not the container. Run native "
            "mode on the same build (the Makefile prefers the system's python3), side by side in time.")


def report(native: dict[str, Any], docker: dict[str, Any]) -> str:
    lines = ["# Native vs Docker", "",
             "Latency per operation at the client, one operation per round; the same benchmarks, "
             "clients and database image contents, the services in containers with their ports "
             "published on 127.0.0.1 (`direct` is pymongo from the host to the database: in Docker "
             "mode through the published Mongo port).", "",
             describe("native", native["context"]), describe("docker", docker["context"]), ""]
    warning = interpreter_warning(native["context"], docker["context"])
    if warning:
        lines += [warning, ""]
    found = [*LATENCY, *sorted((set(native["results"]) | set(docker["results"])) - set(LATENCY))]
    for operation in found:
        if operation in native["results"] or operation in docker["results"]:
            lines += table(operation, native["results"].get(operation, {}),
                           docker["results"].get(operation, {}))
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.stats.compare", description=__doc__.splitlines()[0])
    parser.add_argument("--native", type=Path, default=BENCHMARKS / "native-latest.json")
    parser.add_argument("--docker", type=Path, default=BENCHMARKS / "docker-latest.json")
    parser.add_argument("--out", type=Path, default=settings.RESULTS / "native-vs-docker.md")
    args = parser.parse_args(argv)
    native, docker = load(args.native), load(args.docker)
    for label, run, want in (("--native", native, "native"), ("--docker", docker, "docker")):
        if run["context"].get("mode") != want:
            print(f"warning: {label} is a {run['context'].get('mode')} run", file=sys.stderr)
    text = report(native, docker)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
