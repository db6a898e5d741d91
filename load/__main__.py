"""python -m load (make load, protolab load): concurrent load on Locust.

    python -m load                      # the default sweep (load/sweep.py)
    python -m load --impl rest/python_flask --clients 10 100 --duration 5
    python -m load --workers 2 --netns  # a master and two workers, each on a simulated host
    python -m load --per-protocol --path veth rtt20ms --clients 50 --model closed   # across shaped paths (root)

The studies' scenarios (studies/<name>/scenario.py) take these options too:
python -m studies NAME.

One local Locust process by default; --workers N: one master and N worker
processes (Locust's distributed mode), --netns: each worker in its own
network namespace. Results in results/load/<scenario>-<date>.json and
<scenario>-latest.json, with the per-implementation summary (load/summary.py)
printed at the end.
"""

from __future__ import annotations

import argparse

from lab import workload
from lab.axes import NetworkPath
from load import runner, sweep
from load.common import SWEEP_CLIENTS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="protolab load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", nargs="*", metavar="IMPL", help="implementations (default: all)")
    p.add_argument("--scenario", default="sweep", choices=("sweep",),
                   help="sweep (the only one here; the concurrency-1 cross-check: python -m load.crosscheck; "
                        "the studies' scenarios: python -m studies NAME)")
    p.add_argument("--operation", default="fetch-one", choices=workload.NAMES,
                   help="the operation each user repeats (lab/workload.py; the payload axis' rows too)")
    p.add_argument("--clients", nargs="*", type=int, default=list(SWEEP_CLIENTS),
                   help="closed-model virtual users (default: 10 100 1000, which fits 15 minutes for every "
                        "implementation here; the issue's full ladder: 10 50 100 500 1000)")
    p.add_argument("--model", choices=("closed", "open", "both"), default="both")
    p.add_argument("--duration", type=float, default=1.5, help="steady window per run, s (default 1.5)")
    p.add_argument("--warmup", type=float, default=0.5, help="warm-up before the window, s (default 0.5)")
    p.add_argument("--p99-limit", type=float, default=runner.P99_LIMIT_MS,
                   help="open model: the knee is the highest rate held at this p99, ms (default 50)")
    p.add_argument("--knee-steps", type=int, default=5, help="open-model steps per implementation, at most (default 5)")
    p.add_argument("--no-pin", action="store_true", help="do not pin services and Locust to disjoint CPUs")
    p.add_argument("--target-host", help="dial this address instead of the one the services bind")
    p.add_argument("--workers", type=int, default=0,
                   help="Locust worker processes under one master (default 0: one local Locust process)")
    p.add_argument("--netns", action="store_true",
                   help="every Locust worker in its own network namespace (a simulated host), joined to the "
                        "services' by veth at MTU 1500 (implies --workers 2 unless given)")
    p.add_argument("--share-connection", action="store_true",
                   help="a subject whose client multiplexes (+h2, +h2c: HTTP/2) has every user of a Locust "
                        "process on one connection, a stream each; the others keep a connection per user. "
                        "With --impl X X+h2c: N users on N HTTP/1.1 connections beside N streams on one")
    p.add_argument("--path", nargs="+", metavar="PATH", type=_path_name,
                   help="run across these network paths, one after another (lab/axes.py NetworkPath: veth, rtt20ms, "
                        "10mbit, ...; root): the database and the services on the far side of each, Locust on the "
                        "host, every result named <implementation>@<path> beside the path's measured round trip "
                        "and rate (default: loopback alone, as always)")
    p.add_argument("--per-protocol", action="store_true",
                   help="one implementation per protocol (lab.registry.one_per_protocol: the Go one where there is "
                        "one), in place of every implementation; --impl names others")
    p.add_argument("--out", type=_result_name, metavar="NAME",
                   help="results/load/NAME-<date>.json and NAME-latest.json (default NAME: the scenario)")


def _path_name(name: str) -> str:
    """--path names a network path lab/axes.py can parse (its name, as results carry it)."""
    try:
        return NetworkPath.parse(name).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _result_name(name: str) -> str:
    """--out names a result in results/load (make report reads it there), never a path."""
    if not name or "/" in name or name.startswith("."):
        raise argparse.ArgumentTypeError(f"{name!r} is a path; give a name: the results go to results/load/")
    return name


def run(args: argparse.Namespace) -> int:
    """protolab load (lab/cli.py) with its arguments parsed."""
    return sweep.run(args)


def main(argv: list[str] | None = None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
