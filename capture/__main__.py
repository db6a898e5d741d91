"""`python -m capture [--netns] [-n N] [--only NAME ...]`: bytes on the wire per
operation for every implementation; writes results/capture/{wire,wire-netns}.{md,csv,json}
and the pcapng files beside them (open them in Wireshark)."""

from __future__ import annotations

import argparse
import sys
import time

from capture.report import markdown, write
from capture.tshark import CaptureError
from capture.wire import DEFAULT_N, measure
from lab import settings
from lab.host.netns import NetnsUnavailable


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
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 96:  # delete needs a distinct game per operation (100 in the set)
        parser.error("-n must be between 1 and 96")
    started = time.monotonic()
    stem = "wire-netns" if args.netns else "wire"
    out = settings.ROOT / args.out  # an absolute --out replaces ROOT
    try:
        results = measure(n=args.n, netns=args.netns, names=args.only,
                          keep_pcap=out / f"{stem}-pcap" if args.keep_pcap else None,
                          progress=lambda m: print(f"capture: {m}", flush=True))
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
