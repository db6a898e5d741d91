"""Does a faster database build give a slower server? The measurement behind
lab.database.BUILD_PROFILE:

    python -m benchmarks.dbprofile build [--profile KEY=VALUE ...]   # build, timed (wall and CPU)
    python -m benchmarks.dbprofile compare [--profile KEY=VALUE ...] # both servers, interleaved

`compare` starts the crate's own build and the build with the profile side by
side, and times the latency suite's operations (lab/workload.py LATENCY:
insert, fetch-one, fetch-100), each from its state, through the lab's store
(the `direct` subject), the two servers interleaved in cycles of warm blocks; it prints
the medians and each ratio with its 99 % bootstrap interval.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import time

from benchmarks.interleave import Design, measure
from clients.direct.client import DirectClient
from lab import workload
from lab.database import build_key, embedded, secantus_binary
from lab.stats.statistics import rank

DEFAULT = {"CARGO_PROFILE_RELEASE_LTO": "false", "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16"}


def parse(pairs: list[str] | None) -> dict[str, str]:
    return dict(p.split("=", 1) for p in pairs) if pairs else dict(DEFAULT)


def build(profile: dict[str, str]) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    binary = secantus_binary(profile)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"{binary}: wall {time.monotonic() - start:.0f} s, CPU (user+sys of the build) {cpu:.0f} s "
          "(0 s: it was already built)")


def compare(profile: dict[str, str], cycles: int) -> None:
    binaries = {"crate profile": secantus_binary({}), f"profile{build_key(profile)}": secantus_binary(profile)}
    with contextlib.ExitStack() as stack:
        clients = {}
        for label, binary in binaries.items():
            db = stack.enter_context(embedded(binary))
            clients[label] = DirectClient(db.uri)
            stack.callback(clients[label].close)
        for name in workload.LATENCY:
            op = workload.get(name)
            for c in clients.values():
                workload.prepare(c.store.games, op)
            calls = {label: op.call(c) for label, c in clients.items()}
            design = Design(block=20, discard=3, blocks=cycles, warmup=30)
            emptied = (lambda s, *_: clients[s].store.games.delete_many({})) if op.creates else None
            result = measure(calls, design, seed=1, after_untimed=emptied, between=emptied)
            ranking = rank(result.times, design.block, baseline="crate profile")
            medians = {s: sorted(t)[len(t) // 2] * 1e6 for s, t in result.times.items()}
            print(f"{name}: medians " + ", ".join(f"{s} {m:.0f} µs" for s, m in medians.items()))
            for s, r in ranking["to_baseline"].items():
                print(f"  {s} ÷ crate profile: {r['ratio']:.3f} [99 % CI {r['ci'][0]:.3f}–{r['ci'][1]:.3f}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dbprofile", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "compare"))
    parser.add_argument("--profile", nargs="*", metavar="KEY=VALUE")
    parser.add_argument("--cycles", type=int, default=30)
    args = parser.parse_args(argv)
    profile = parse(args.profile)
    if args.action == "build":
        build(profile)
    else:
        compare(profile, args.cycles)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
