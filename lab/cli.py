"""The `protolab` command."""

from __future__ import annotations

import argparse
import os
import signal
import threading

from lab import settings
from lab.registry import discover
from lab.stack import running_lab


def serve(args: argparse.Namespace) -> int:
    started, stop = threading.Event(), threading.Event()

    def interrupted(*_: object) -> None:
        if not started.is_set() or stop.is_set():
            raise KeyboardInterrupt  # still starting (or asked twice): unwind, stopping what runs
        stop.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupted)
    try:
        with running_lab(args.only or None, args.lab_mode) as lab:
            db = lab.database
            lines = [f"database  {db.server} {db.version}  {db.uri}" + (f"  (pid {db.pid})" if db.pid else "")]
            lines += [f"{impl.name:<24} {lab.endpoints[impl.name]}  (pid {lab.pids[impl.name]})"
                      for impl in lab.implementations]
            started.set()  # from here on a signal is a clean stop
            print("\n".join([*lines, "serving; press Ctrl-C to stop"]), flush=True)
            stop.wait()
    except KeyboardInterrupt:
        print("interrupted; everything started was stopped", flush=True)
        return 130
    print("stopped", flush=True)
    return 0


def list_implementations(args: argparse.Namespace) -> int:
    for impl in discover():
        missing = f"  [left out: needs {', '.join(impl.missing())}]" if impl.missing() else ""
        print(f"{impl.name:<30} {impl.protocol:<8} {impl.language:<7} {impl.library:<18} "
              f"{impl.server}{missing}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="protolab", description=__doc__)
    parser.add_argument("--lab-mode", choices=settings.MODES,
                        default=os.environ.get("LAB_MODE", "native"))
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser(
        "serve", help="start the database and every service, print the endpoints, "
                      "run until interrupted")
    serve_parser.add_argument("--only", nargs="*", metavar="IMPL",
                              help="implementations to start (default: all)")
    serve_parser.set_defaults(run=serve)
    commands.add_parser("list", help="list the discovered implementations").set_defaults(
        run=list_implementations)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
