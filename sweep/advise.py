"""python -m sweep.advise (protolab advise): which protocol, for these conditions?

    protolab advise --games 100 --rtt-ms 20
    protolab advise --bytes 2000 --compression no --languages go,node
    protolab advise --games 1000 --mbit 10

From saved results only (results/sweep/latest.json, `make sweep`): the
measured cell nearest to the conditions (payload by games per response or
bytes, round trip, rate, compression, on a log scale), its subjects ranked by
their ratio to `direct` in the groups the 99 % intervals support (the latency
tables' rule: '<' only where the interval of the paired ratio excludes 1), the
cell it used, which run, machine and date the figures came from, and a plain
warning where the conditions fall outside the grid or the nearest cell differs
from them.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from lab import results as lab_results
from lab import settings
from sweep import cells, crossover

UNLIMITED_MBIT = 10_000.0       # a path without a rate limit, for the distance
COMPRESSION_MISMATCH = 5.0      # a cell of the other compression value is far away
VETH_AT_ZERO = 0.01             # at 0 ms, loopback before a bare veth


def latest(results_dir: Path | None = None) -> Path:
    return (results_dir or settings.RESULTS) / "sweep" / "latest.json"


def _rtt(cell: dict[str, Any]) -> float:
    return float(cell["link"].get("rtt_ms") or 0.0)


def _rate(cell: dict[str, Any]) -> float:
    return float(cell["link"].get("rate_mbit") or UNLIMITED_MBIT)


def _log_distance(a: float, b: float) -> float:
    return abs(math.log10(max(a, 1e-9) / max(b, 1e-9)))


def distance(cell: dict[str, Any], conditions: dict[str, Any], base: str) -> float | None:
    """How far a cell is from the conditions (None: not comparable: a payload it does not state)."""
    d = 0.0
    if conditions.get("games") is not None:
        if cell.get("games") is None or cell.get("family") != "fetch":
            return None
        d += _log_distance(conditions["games"], cell["games"])
    elif conditions.get("bytes") is not None:
        if not cell.get("bytes") or cell.get("family", "").startswith("insert"):
            return None
        d += _log_distance(conditions["bytes"], cell["bytes"])
    d += _log_distance(1 + conditions.get("rtt_ms", 0.0), 1 + _rtt(cell))
    d += _log_distance(conditions.get("mbit") or UNLIMITED_MBIT, _rate(cell))
    d += float(cell["link"].get("loss_pct") or 0.0)
    compressed = cell["variant"] != base
    if conditions.get("compression") is not None and compressed != conditions["compression"]:
        d += COMPRESSION_MISMATCH
    elif conditions.get("compression") is None and compressed:
        d += COMPRESSION_MISMATCH / 10
    if cell["link"].get("veth") and not _rtt(cell) and not cell["link"].get("rate_mbit"):
        d += VETH_AT_ZERO
    return d


def nearest(cells: list[dict[str, Any]], conditions: dict[str, Any], base: str) -> dict[str, Any] | None:
    scored = [(d, -(c.get("cycles") or 0), i) for i, c in enumerate(cells)
              if (d := distance(c, conditions, base)) is not None]
    return cells[min(scored)[2]] if scored else None


def warnings(cells: list[dict[str, Any]], cell: dict[str, Any], conditions: dict[str, Any], base: str,
             languages: list[str]) -> list[str]:
    """Plain words where the conditions leave the grid, or the cell used differs from them."""
    out = []

    def outside(what: str, asked: float, measured: list[float], unit: str) -> None:
        if not measured:
            return
        low, high = min(measured), max(measured)
        if asked > high * 1.0001 or asked < low * 0.9999:
            span = f"{low:,g}–{high:,g}" if high > low else f"only {low:,g}"
            out.append(f"{asked:,g} {unit} {what} is outside the grid (measured {span} {unit}): the "
                       "figures are the nearest cell's, and the order can change beyond the measured range")
    if conditions.get("games") is not None:
        outside("per response", conditions["games"], [c["games"] for c in cells if c.get("games")], "games")
        if cell["games"] != conditions["games"]:
            out.append(f"{conditions['games']:,} games asked; the nearest measured cell has {cell['games']:,}")
    if conditions.get("bytes") is not None:
        outside("per response", conditions["bytes"], [c["bytes"] for c in cells if c.get("bytes")], "bytes")
        if cell.get("bytes") != conditions["bytes"]:
            out.append(f"{conditions['bytes']:,} bytes asked; the nearest measured cell carries "
                       f"{cell.get('bytes') or '?':,} bytes ({cell['operation']})")
    rtt = conditions.get("rtt_ms", 0.0)
    outside("round trip", rtt, [_rtt(c) for c in cells], "ms")
    if abs(_rtt(cell) - rtt) > 1e-9:
        out.append(f"{rtt:g} ms round trip asked; the nearest measured cell has {_rtt(cell):g} ms")
    if conditions.get("mbit") is not None:
        rates = [c["link"]["rate_mbit"] for c in cells if c["link"].get("rate_mbit")]
        if not rates:
            out.append(f"{conditions['mbit']:g} Mbit/s asked; no rate-limited path was measured: the figures are "
                       "from a link without a limit")
        else:
            outside("", conditions["mbit"], rates, "Mbit/s")
            if cell["link"].get("rate_mbit") != conditions["mbit"]:
                have = f"{cell['link']['rate_mbit']:g} Mbit/s" if cell["link"].get("rate_mbit") else "no rate limit"
                out.append(f"{conditions['mbit']:g} Mbit/s asked; the nearest measured cell has {have}")
    elif cell["link"].get("rate_mbit"):
        out.append(f"no rate asked; the nearest measured cell is limited to {cell['link']['rate_mbit']:g} Mbit/s")
    if conditions.get("compression") is not None and (cell["variant"] != base) != conditions["compression"]:
        out.append(f"compression {'on' if conditions['compression'] else 'off'} asked; no such cell near these "
                   f"conditions: the figures are {cell['variant'] or 'the base'}'s")
    missing = [lang for lang in languages if not any(s.get("language") == lang for s in cell["subjects"].values())]
    if missing:
        out.append(f"no implementation in {', '.join(missing)} was measured in this cell")
    if cell["run"].get("noise_flagged"):
        out.append("the run's noise guard flagged it: the machine's speed moved during the run")
    return out


def ranked(cell: dict[str, Any], languages: list[str]) -> dict[str, Any]:
    """The cell's subjects (those in `languages`, if given) in the groups the intervals support."""
    subjects = {n: s for n, s in cell["subjects"].items() if not languages or s.get("language") in languages}
    return {**cells.ranking(subjects, cell.get("pairs", [])), "subjects": subjects}


def advise(sweep: dict[str, Any], conditions: dict[str, Any], languages: list[str] | None = None) -> dict[str, Any]:
    """The answer, as data: the cell used, the ranking, the pick, the source and the warnings."""
    languages = languages or []
    base = sweep["context"].get("sweep", {}).get("variant_axis", {}).get("base", "")
    measured = sweep["cells"]
    cell = nearest(measured, conditions, base)
    if cell is None:
        return {"cell": None, "warnings": ["no measured cell states that payload (run make sweep)"]}
    order = ranked(cell, languages)
    first = order["tiers"][0] if order["tiers"] else []
    return {"conditions": conditions, "languages": languages, "cell": {
                k: cell[k] for k in ("operation", "variant", "path", "games", "bytes", "cycles", "link")},
            "ranking": order, "pick": first, "source": cell["run"],
            "crossovers": [s["text"] for s in sweep.get("crossovers", []) if s["kind"] == "crossover"
                           and {*s["implementations"]} <= set(order["subjects"])
                           and crossover.cell_key(cell) in s.get("cells", [])],
            "warnings": warnings(measured, cell, conditions, base, languages)}


def describe_conditions(conditions: dict[str, Any]) -> str:
    plural = "s" if conditions.get("games") != 1 else ""
    payload = (f"{conditions['games']:,} game{plural} per response" if conditions.get("games") is not None else
               f"{conditions['bytes']:,} bytes per response" if conditions.get("bytes") is not None else "any payload")
    rate = f"{conditions['mbit']:g} Mbit/s" if conditions.get("mbit") else "no rate limit"
    compression = {None: "compression either way", True: "compression on", False: "compression off"}
    return (f"{payload}, {conditions.get('rtt_ms', 0.0):g} ms round trip, {rate}, "
            f"{compression[conditions.get('compression')]}")


def lines(answer: dict[str, Any]) -> list[str]:
    if answer["cell"] is None:
        return [f"warning: {w}" for w in answer["warnings"]]
    cell, order, source = answer["cell"], answer["ranking"], answer["source"]
    machine = source.get("machine", {})
    out = [f"conditions: {describe_conditions(answer['conditions'])}"
           + (f"; languages {', '.join(answer['languages'])}" if answer["languages"] else ""),
           f"nearest measured cell: {cell['operation']} | {cell['variant'] or 'base'} | {cell['path']}"
           f" ({cell['games'] if cell['games'] is not None else '?'} game{'' if cell['games'] == 1 else 's'}, "
           f"{cell.get('bytes') or '?'} bytes; "
           f"{cell['cycles']} cycles)",
           "ranking (99 % intervals of the paired ratio; '<' only where the interval excludes 1, '=' where it "
           f"cannot tell them apart): {order['chain']}"]
    for i, name in enumerate(order["order"], 1):
        s = order["subjects"][name]
        r = s.get("ratio_to_direct")
        ratio = f"× direct {r['ratio']:.2f} [{r['ci'][0]:.2f}–{r['ci'][1]:.2f}]" if r else "× direct –"
        out.append(f"  {i}. {name:<28} {s.get('protocol', ''):<9} {s.get('language', ''):<7} "
                   f"median {s['median_us']:>10,.0f} µs   {ratio}")
    pick = answer["pick"]
    if len(pick) == 1:
        out.append(f"pick: {pick[0]} (its interval against every other excludes 1)" if len(order["order"]) > 1
                   else f"pick: {pick[0]} (the only one measured here)")
    elif pick:
        out.append(f"pick: any of {', '.join(pick)}: the intervals cannot tell them apart in this cell")
    for text in answer["crossovers"]:
        out.append(f"crossover: {text}")
    out.append(f"figures from: {source['file']} (run {source.get('date')}, commit {str(source.get('commit'))[:12]}; "
               f"machine: {machine.get('cores')} × {machine.get('cpu')}, {machine.get('platform')})")
    out += [f"warning: {w}" for w in answer["warnings"]]
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="protolab advise", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    payload = p.add_mutually_exclusive_group()
    payload.add_argument("--games", type=int, help="typical games per response (default: 1)")
    payload.add_argument("--bytes", type=int, help="typical response size in bytes")
    p.add_argument("--rtt-ms", type=float, default=0.0, help="round trip between client and server (default 0)")
    p.add_argument("--mbit", type=float, help="the link's rate, Mbit/s (default: no limit)")
    p.add_argument("--compression", choices=("yes", "no"), help="responses compressed (default: either)")
    p.add_argument("--languages", help="server languages to consider, a comma list (e.g. go,node)")
    p.add_argument("--results", type=Path, help="a sweep result (default results/sweep/latest.json)")
    p.add_argument("--json", action="store_true", help="the answer as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    path = args.results or latest()
    if not path.exists():
        print(f"no sweep result at {path}: run `make sweep` first (advise reads saved results only)")
        return 2
    sweep = lab_results.read(path, "sweep")
    conditions = {"games": args.games, "bytes": args.bytes, "rtt_ms": args.rtt_ms, "mbit": args.mbit,
                  "compression": None if args.compression is None else args.compression == "yes"}
    if args.games is None and args.bytes is None:
        conditions["games"] = 1
    languages = [x.strip() for x in (args.languages or "").split(",") if x.strip()]
    answer = advise(sweep, conditions, languages)
    print(json.dumps(answer, indent=1, default=str) if args.json else "\n".join(lines(answer)))
    return 0 if answer["cell"] is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
