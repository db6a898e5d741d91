"""The run's headline findings, computed from its results, each with its interval and the
run it came from: the list the README's findings block is made of (make reference writes it
to docs/reference/readme-findings.txt and copies it into README.md between FINDINGS_START and
FINDINGS_END; `python -m report.reference --check` fails when the two differ).

Each finding is a sentence built from one saved result; a result that is absent gives no
finding (never a placeholder figure). Read through report.inputs, the sweep's and the
capture's files, and the studies' claims as studies.claims judges them."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from lab.stats import noise
from report.inputs import Inputs
from studies.claims import count_text, counts, judge_all
from studies.common import read_json

FINDINGS_START = ("<!-- findings: written by make reference from docs/reference/readme-findings.txt; "
                  "do not edit -->")
FINDINGS_END = "<!-- end of findings -->"
FILE = "readme-findings.txt"   # in docs/reference/: the block, as make reference wrote it


def _ci(r: dict[str, Any]) -> str:
    return f"{r['ratio']:.2f}× [{r['ci'][0]:.2f}–{r['ci'][1]:.2f}]"


def _plain(name: str) -> bool:
    return "@" not in name


def extremes(inputs: Inputs, operation: str) -> str | None:
    """The fastest and the slowest implementation of `operation` against `direct`, and the groups the
    intervals separate (the native run's ranking, else the Docker one's)."""
    for mode in ("native", "docker"):
        ranking = ((inputs.runs.get(mode) or {}).get("rankings") or {}).get(operation) or {}
        to_base = {s: r for s, r in (ranking.get("to_baseline") or {}).items() if _plain(s) and s != "direct"}
        if to_base:
            break
    else:
        return None
    noise = (inputs.runs[mode]["context"].get("noise") or {})
    reasons = noise.get("reasons") or ["its speed moved"]
    reason = next((r for r in reasons if f" {operation} " in r), reasons[0])   # this operation's, if named
    flagged = f" The noise guard flagged this run: {reason}{_ratios_held(inputs.runs[mode], operation)}." \
        if noise.get("flagged") else ""
    ordered = sorted(to_base, key=lambda s: to_base[s]["ratio"])
    tiers = [g for g in ([s for s in t if s != "direct"] for t in ranking.get("tiers") or []) if g]
    level = ranking.get("confidence", 0.99) * 100
    first, last = ordered[0], ordered[-1]
    tied = [s for s in (tiers[0] if tiers else []) if s != first and s in to_base]
    beside = f" (not told apart from {', '.join(f'`{s}`' for s in tied)})" if tied else ""
    return (f"**{operation}** ({mode}, {ranking.get('cycles', '?')} cycles): the fastest of {len(ordered)}, "
            f"`{first}`{beside}, takes {_ci(to_base[first])} the direct database call; the slowest, `{last}`, "
            f"{_ci(to_base[last])} ({level:g} % intervals, ratio paired by cycle); the intervals separate "
            f"{len(tiers)} groups ({inputs.runs[mode]['context'].get('date', '?')[:16]}).{flagged}")


def _ratios_held(run: dict[str, Any], operation: str) -> str:
    """How far the subjects' paired ratios to direct moved over the same run (lab/stats/noise.py,
    paired_drift): what a flag on the absolute times means for the ratios above."""
    found = {s: d for s in (run["results"].get(operation) or {}) if s != "direct"
             if (d := noise.paired_drift(run, operation, s, "direct")) is not None}
    if not found:
        return ""
    moves = sorted(d[0] for d in found.values())
    widest = max(found, key=lambda s: abs(found[s][0]))
    moved = sum(noise.ratio_moved(d) for d in found.values())
    return (f"; the {len(found)} ratios to it moved a median {statistics.median(moves):+.1%} (the widest, "
            f"`{widest}`, {found[widest][0]:+.1%}; {moved} beyond ±{noise.DRIFT_THRESHOLD:.0%} with 99 % "
            "confidence)")


def _comparisons(inputs: Inputs, axis: str, operation: str) -> list[dict[str, Any]]:
    runs = [*inputs.side_by_side.values(), *inputs.runs.values()]
    seen, out = set(), []
    for run in runs:
        for c in (run.get("comparisons") or {}).get(operation) or []:
            if c["axis"] == axis and (c["a"], c["b"]) not in seen:
                seen.add((c["a"], c["b"]))
                out.append(c)
    return out


def _spread(rows: list[dict[str, Any]], what: str, operation: str) -> str | None:
    if not rows:
        return None
    slower = [r for r in rows if r["ci"][0] > 1]
    faster = [r for r in rows if r["ci"][1] < 1]
    biggest = max(rows, key=lambda r: abs(r["ratio"] - 1))
    return (f"**{what}** ({operation}, {len(rows)} pairs, each paired by cycle in one run): median ratio "
            f"{statistics.median(r['ratio'] for r in rows):.2f}; {len(slower)} slower and {len(faster)} faster "
            f"with the interval excluding 1, {len(rows) - len(slower) - len(faster)} not told apart; the largest, "
            f"`{biggest['a']}` ÷ `{biggest['b']}`, {_ci(biggest)}.")


def docker(inputs: Inputs, operation: str = "fetch-one") -> str | None:
    """Docker ÷ native over the implementations (`direct`'s own pair, the database in Docker, left out)."""
    rows = [c for c in _comparisons(inputs, "mode", operation) if c["b"] != "direct"]
    return _spread(rows, "Docker ÷ native", operation)


def variants(inputs: Inputs, operation: str = "fetch-one") -> str | None:
    rows = [c for c in _comparisons(inputs, "variant", operation) if _plain(c["a"])]
    return _spread(rows, "A variant ÷ its base implementation", operation)


def wire(inputs: Inputs, operation: str = "fetch-one") -> str | None:
    data = inputs.wire   # results/capture/wire.json, as report.inputs read it
    if not data:
        return None
    totals = {impl: ops[operation]["total"]["frame_bytes"] for impl, ops in (data.get("steady") or {}).items()
              if operation in ops and (ops[operation].get("total") or {}).get("frame_bytes")}
    if not totals:
        return None
    ordered = sorted(totals, key=totals.get)
    first, last = ordered[0], ordered[-1]
    return (f"**Bytes on the wire** ({operation}, a kept-alive connection, both directions, frame bytes counted by "
            f"tshark, {data['context'].get('date', '?')[:16]}): from {totals[first]:,.0f} B (`{first}`) to "
            f"{totals[last]:,.0f} B (`{last}`), {totals[last] / totals[first]:.1f}× apart, over "
            f"{len(totals)} implementations (a count: no interval).")


def crossovers(results_dir: Path) -> str | None:
    data = read_json(results_dir / "sweep" / "latest.json", "sweep")
    if not data:
        return None
    said = [s for s in data.get("crossovers") or [] if s.get("kind") == "crossover"]
    cells = len(data.get("cells") or [])
    if not said:
        return (f"**Across conditions** (payload, compression, network path; {cells} cells): no crossover the "
                "intervals support in the range measured: the order at one condition holds at the others.")
    return (f"**Across conditions** (payload, compression, network path; {cells} cells): {len(said)} crossover"
            f"{'s' if len(said) != 1 else ''} the intervals support, e.g. {said[0]['axis']} "
            f"({said[0]['line']}): {said[0]['text']}")


def claims(results_dir: Path) -> str | None:
    found = judge_all(results_dir)
    if not found:
        return None
    c = counts(found)
    return (f"**The published studies** ({count_text(found)}): a verdict is computed for each claim from the "
            f"run's results; {c['not measured'] + c['invalid']} of them have no valid lab figure yet, and the "
            "report says which instrument or condition is missing.")


def across(inputs: Inputs) -> list[str]:
    """The findings beyond one operation's ranking (the report's opening lists them after its own; the
    claims' count is in its own section, judged once there)."""
    found = [docker(inputs), variants(inputs), wire(inputs), crossovers(inputs.results_dir)]
    return [f for f in found if f]


def headline(inputs: Inputs) -> list[str]:
    """The README's five findings and the studies' count, in the order a reader meets them; those whose
    results are absent left out (the report's opening has these and the variants' too)."""
    results_dir = inputs.results_dir
    found = [extremes(inputs, "fetch-one"), extremes(inputs, "fetch-100"), docker(inputs), wire(inputs),
             crossovers(results_dir), claims(results_dir)]
    return [f for f in found if f]


def block(run_line: str, findings: list[str], figure: str | None) -> str:
    """The README's findings block (the lines between its markers)."""
    lines = [run_line, ""]
    if figure:
        lines += [f"![Each implementation's time per operation ÷ the direct database call, 99 % intervals]({figure})",
                  ""]
    lines += [f"- {f}" for f in findings]
    return "\n".join(lines) + "\n"


def replace_block(text: str, new: str) -> str:
    """`text` (the README) with the lines between the markers replaced by `new`; ValueError without markers."""
    start, end = text.find(FINDINGS_START), text.find(FINDINGS_END)
    if start < 0 or end < start:
        raise ValueError("README.md has no findings markers")
    return text[:start + len(FINDINGS_START)] + "\n" + new + text[end:]


def current_block(text: str) -> str | None:
    start, end = text.find(FINDINGS_START), text.find(FINDINGS_END)
    return None if start < 0 or end < start else text[start + len(FINDINGS_START) + 1:end]
