"""`python -m capture [--netns] [-n N] [--only NAME ...]`: bytes on the wire per
operation for every implementation; writes results/capture/{wire,wire-netns}.{md,csv,json}
and the pcapng files beside them (open them in Wireshark).

`--operations` captures other rows of the workload table (the payload axis' fetch-<N>,
insert:<size>, fetch-one:<size>) into results/capture/wire-payload.* (`--name`), e.g. with
and without compression in one capture (`--axis compression`: every implementation and
its +gzip subject, nothing else; LAB_VARIANTS=compression adds the +gzip subjects to all):

    python -m capture --axis compression --operations fetch-1 fetch-100 fetch-1000 -n 3 \
        --new-connections 1 --no-database
"""

from __future__ import annotations

import argparse
import sys
import time

from capture.report import markdown, write
from capture.tshark import CaptureError
from capture.wire import DEFAULT_N, NEW_CONNECTION_REPEATS, axis_subjects, measure
from clients.protocols import PROTOCOLS
from lab import registry, settings, workload
from lab.host.netns import NetnsUnavailable
from lab.workload import CAPTURE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m capture", description=__doc__)
    parser.add_argument("--netns", action="store_true",
                        help="capture over a veth pair into a network namespace, MTU 1500")
    parser.add_argument("-n", type=int, default=DEFAULT_N,
                        help=f"operations per steady-state window (default {DEFAULT_N})")
    parser.add_argument("--only", nargs="*", default=None, help="implementations to capture")
    parser.add_argument("--keep-pcap", action="store_true",
                        help="keep the pcapng files (~80 MB) in the output folder")
    parser.add_argument("--out", default=str(settings.RESULTS / "capture"))
    parser.add_argument("--operations", nargs="+", metavar="OP", default=list(CAPTURE),
                        help="the workload table's operations (default: "
                             + " ".join(CAPTURE) + "; e.g. fetch-1 fetch-100 fetch-1000)")
    parser.add_argument("--new-connections", type=int, default=NEW_CONNECTION_REPEATS,
                        help=f"connections made per new-connection cell, its median kept (default "
                             f"{NEW_CONNECTION_REPEATS}; 0: the kept-alive rows alone)")
    parser.add_argument("--no-database", action="store_true",
                        help="leave the service<->database traffic out of the capture (faster to read with "
                             "large payloads)")
    parser.add_argument("--axis", metavar="AXIS",
                        help="every implementation and its subjects on this variant axis of lab/axes.py, nothing "
                             "else (e.g. compression: each implementation and its +gzip subject)")
    parser.add_argument("--name", help="the results' file name (default wire, wire-netns; wire-payload, "
                                       "wire-payload-netns when --operations names others)")
    args = parser.parse_args(argv)
    try:
        for op in args.operations:
            workload.get(op)
    except ValueError as exc:
        parser.error(str(exc))
    if args.new_connections < 0:
        parser.error("--new-connections must be 0 or more")
    names = args.only
    if args.axis:
        if args.only is not None:
            parser.error("--axis chooses the implementations; --only names them: one or the other")
        try:
            names = axis_subjects(args.axis)
        except ValueError as exc:
            parser.error(str(exc))
    if names is None:   # every implementation, but a protocol whose descriptor says why not
        found = registry.select(None)
        left = {i.name: PROTOCOLS[i.protocol].no_capture for i in found if PROTOCOLS[i.protocol].no_capture}
        for name, why in left.items():
            print(f"capture: {name} left out: {why}", flush=True)
        names = [i.name for i in found if i.name not in left] if left else None
    if not 1 <= args.n <= 96:  # delete needs a distinct game per operation (100 in the set)
        parser.error("-n must be between 1 and 96")
    started = time.monotonic()
    default_ops = list(args.operations) == list(CAPTURE)
    stem = args.name or (("wire" if default_ops else "wire-payload") + ("-netns" if args.netns else ""))
    if "/" in stem or stem.startswith("."):
        parser.error(f"--name {stem!r}: a name, not a path (the results go to --out)")
    out = settings.ROOT / args.out  # an absolute --out replaces ROOT
    try:
        results = measure(n=args.n, netns=args.netns, names=names,
                          keep_pcap=out / f"{stem}-pcap" if args.keep_pcap else None,
                          progress=lambda m: print(f"capture: {m}", flush=True),
                          operations=args.operations, new_connections=args.new_connections,
                          database=not args.no_database)
    except (CaptureError, NetnsUnavailable) as exc:
        print(f"capture: {exc}", file=sys.stderr)
        return 2
    paths = write(results, out, stem)
    print(markdown(results))
    for path in paths:
        print(f"wrote {path}")
    print(f"capture: done in {time.monotonic() - started:.1f} s")
    return 1 if results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
