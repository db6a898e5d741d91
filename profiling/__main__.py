"""make profile PROFILE_ARGS="--impl grpc/go_grpc --operation fetch-100 --seconds 10"."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab import settings
from profiling.run import DEFAULT, OUT, profilable, run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m profiling", description=__doc__)
    p.add_argument("--impl", nargs="+", metavar="NAME",
                   help="implementations (default: every one serving the operations)")
    p.add_argument("--operation", nargs="+", type=profilable, default=list(DEFAULT), metavar="NAME",
                   help="operations of the workload table, lab/workload.py (fetch-<N>, fetch-one:<size> too; "
                        f"default: {' '.join(DEFAULT)})")
    p.add_argument("--seconds", type=float, default=10.0, help="sampling window per implementation and operation")
    p.add_argument("--warmup-seconds", type=float, default=20.0,
                   help="at most this long for the warm-up calls (the manifest's count, else 30)")
    p.add_argument("--out", type=Path, default=OUT, help="where the profiles go (default results/profiles)")
    return p


def main(argv: list[str] | None = None) -> int:
    settings.measuring()  # as make bench: not here in run(), which the tests call in their own process
    run(parser().parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
