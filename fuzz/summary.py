"""`python -m fuzz.summary [FILE]`: per implementation, the cases, failures, server errors and time of
the last fuzz run (results/fuzz/latest.json, written by make fuzz; latest-test.json by make test's
shorter run when there is no other). make fuzz and make reference print it at the end."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab import results, settings


def latest() -> Path | None:
    found = [settings.RESULTS / "fuzz" / name for name in ("latest.json", "latest-test.json")]
    return next((p for p in found if p.exists()), None)


def lines(path: Path) -> list[str]:
    data = results.read(path, "fuzz")
    rows = data["tallies"]
    out = [f"{path.name}: {data['cases_per_implementation']:,} cases per implementation, seed {data['seed']}"]
    for t in rows:
        seconds = f"{t['seconds']:8.1f} s" if "seconds" in t else "    (no time recorded)"
        out.append(f"  {t['implementation']:<40} {t['cases']:>7,} cases {t['failures']:>4} failures "
                   f"{t['server_errors']:>4} server errors {seconds}")
    timed = [t["seconds"] for t in rows if "seconds" in t]
    out.append(f"  all {len(rows)} implementations: {sum(t['cases'] for t in rows):,} cases, "
               f"{sum(t['failures'] for t in rows)} failures, {sum(t['server_errors'] for t in rows)} server errors"
               + (f", {sum(timed) / 60:.1f} min of cases" if timed else ""))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.summary", description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=None, help="default: results/fuzz/latest.json")
    args = parser.parse_args(argv)
    path = args.file or latest()
    if path is None:
        print("no fuzz results: run make fuzz")
        return 1
    for line in lines(path):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
