"""The `protolab` command."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import time
from pathlib import Path

from lab import axes, dataset, settings
from lab.registry import bases, variants_of
from lab.stack import Lab, running_lab

WATCH_INTERVAL = 0.5  # seconds between checks that every service still runs


def endpoints_document(lab: Lab) -> dict:
    db = lab.database
    return {
        "database": {"server": db.server, "version": db.version, "uri": db.uri, "pid": db.pid},
        "implementations": {
            impl.name: {"protocol": impl.protocol, "language": impl.language, "library": impl.library,
                        "endpoint": lab.endpoints[impl.name], "pid": lab.pids.get(impl.name)}
            for impl in lab.implementations},
    }


def _seed(lab: Lab) -> int:
    store = lab.store()
    try:
        games = dataset.games()
        dataset.reset(store.games, games, indexes=True)
        return len(games)
    finally:
        store.close()


def serve(args: argparse.Namespace) -> int:
    # Knobs go through the environment, so that the services started see them too.
    if args.host:
        os.environ["LAB_HOST"] = args.host
    if args.dial_host:
        os.environ["LAB_DIAL_HOST"] = args.dial_host
    if args.port_base is not None:
        os.environ["LAB_PORT_BASE"] = str(args.port_base)
    # Plain flags, not threading.Event: a handler runs between two bytecodes of the
    # main thread, and Event.set() takes the lock Event.wait() holds for a moment on
    # that same thread (a signal landing then would wait for it forever).
    state = {"started": False, "stopping": False}

    def interrupted(*_: object) -> None:
        if not state["started"] or state["stopping"]:
            raise KeyboardInterrupt  # still starting (or asked twice): unwind, stopping what runs
        state["stopping"] = True
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupted)
    # kill -USR1 <pid>: every thread's stack on stderr, the process going on (a stop that hangs says where)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        with running_lab(args.only or None, args.lab_mode) as lab:
            db = lab.database
            lines = [f"database  {db.server} {db.version}  {db.uri}" + (f"  (pid {db.pid})" if db.pid else "")]
            if not args.empty:
                lines.append(f"seeded    {_seed(lab)} games from {dataset.DATASET.relative_to(settings.ROOT)}")
            lines += [f"{impl.name:<24} {lab.endpoints[impl.name]}" +
                      (f"  (pid {lab.pids[impl.name]})" if lab.pids.get(impl.name) else "")
                      for impl in lab.implementations]
            if args.endpoints_file:
                path = Path(args.endpoints_file)
                partial = path.with_name(path.name + ".partial")  # a reader never sees half a file
                partial.write_text(json.dumps(endpoints_document(lab), indent=2) + "\n")
                os.replace(partial, path)
                lines.append(f"endpoints written to {path}")
            state["started"] = True  # from here on a signal is a clean stop
            print("\n".join([*lines, "serving; press Ctrl-C to stop"]), flush=True)
            while not state["stopping"]:
                gone = lab.exited()
                if gone:
                    print("stopping: a service of the lab is gone: " + "; ".join(gone), flush=True)
                    return 1
                time.sleep(WATCH_INTERVAL)  # a signal's handler runs inside it; the flag is read after
    except KeyboardInterrupt:
        print("interrupted; everything started was stopped", flush=True)
        return 130
    print("stopped", flush=True)
    return 0


def list_implementations(args: argparse.Namespace) -> int:
    """Each implementation, then its variants (lab/axes.py) indented under it; then the modes and paths."""
    position = 0
    for impl in bases():
        missing = f"  [left out: needs {', '.join(impl.missing())}]" if impl.missing() else ""
        values = ", ".join(f"{a}={v}" for a, v in impl.values)
        print(f"{impl.name:<32} {impl.protocol:<8} {impl.language:<7} {impl.library:<18} "
              f"port +{impl.port_offset(position):<4} {impl.server}{f' ({values})' if values else ''}{missing}")
        position += 1
        for variant in variants_of(impl):
            axis = next(a for a, v in variant.values if v in variant.variant)
            default = "" if axes.VARIANT_AXES[axis].in_default_run else "  [on request]"
            value = "+".join(variant.variant)
            print(f"  +{value:<29} {'':<8} {'':<7} {f'{axis}={value}':<18} "
                  f"port +{variant.port_offset(position):<4} {variant.server}{default}")
            position += 1
        for axis, why in impl.unsupported:
            print(f"  ({axis}: not supported: {why})")
    print(f"\nmodes: {', '.join(axes.MODES)} (--lab-mode, LAB_MODE: a comma list measures them side by side)")
    print("network paths: loopback, veth, or a shaped link: rtt<N>ms, <N>mbit, loss<N>pct joined by _ "
          "(--lab-paths, LAB_PATHS), e.g. rtt20ms_10mbit")
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
    serve_parser.add_argument("--empty", action="store_true",
                              help="start with an empty collection (default: the dataset's 3,424 games)")
    serve_parser.add_argument("--port-base", type=int, metavar="N",
                              help="fixed ports: the database on N, each service on N + its manifest's "
                                   "[run] port_offset (services/<protocol>/<implementation>/manifest.toml; "
                                   "`protolab list` prints them); default: free ports")
    serve_parser.add_argument("--host", metavar="ADDR",
                              help="address the services bind (default 127.0.0.1; 0.0.0.0: every interface)")
    serve_parser.add_argument("--dial-host", metavar="ADDR",
                              help="address the endpoints name and clients dial (default: the bound "
                                   "address, or 127.0.0.1 when that is a wildcard)")
    serve_parser.add_argument("--endpoints-file", metavar="PATH",
                              help="also write the endpoints as JSON to PATH")
    serve_parser.set_defaults(run=serve)
    commands.add_parser("list", help="list the discovered implementations").set_defaults(
        run=list_implementations)
    commands.add_parser("load", add_help=False, help="concurrent load on Locust (make load; protolab load --help)")
    commands.add_parser("advise", add_help=False,
                        help="which protocol for given conditions, from the saved sweep (make sweep; "
                             "protolab advise --help)")
    args, rest = parser.parse_known_args(argv)
    if args.command == "advise":
        # The sweep instrument sits above the lab, as load does: its own command line.
        os.execv(sys.executable, [sys.executable, "-m", "sweep.advise", *rest])
    if args.command == "load":
        # The load instrument sits above the lab (imports point one way): its own
        # command line, in this process's place, with the arguments given after `load`.
        os.environ["LAB_MODE"] = args.lab_mode
        os.execv(sys.executable, [sys.executable, "-m", "load", *rest])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
