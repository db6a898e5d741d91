"""The sweep's section of the page (make sweep): per axis, each implementation's ratio
to `direct` against the axis (a table and a figure per line of cells), the
implementation to pick in each cell with the ranking its intervals support,
and the crossover statements with their intervals. Reads only
results/sweep/latest.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter

from report.figures import _svg
from report.page import Bullets, Figure, Heading, Page, Para, Table
from studies.common import read_json
from sweep import crossover
from sweep.cells import chain_text

AXIS_TITLES = {"payload": "Payload", "rtt": "Round trip", "bandwidth": "Bandwidth"}   # a variant axis: its name


def _ratio(row: dict[str, Any] | None) -> str:
    r = (row or {}).get("ratio_to_direct")
    return "–" if not r else f"{r['ratio']:.2f} [{r['ci'][0]:.2f}–{r['ci'][1]:.2f}]"


def pick_text(cell: dict[str, Any]) -> str:
    first = cell["ranking"]["tiers"][0] if cell["ranking"]["tiers"] else []
    if len(first) == 1:
        return f"**{first[0]}**" + ("" if len(cell["subjects"]) == 1 else " (told apart from every other)")
    return "any of " + ", ".join(f"**{n}**" for n in first) + " (the intervals cannot tell them apart)"


def figure(line: crossover.Line, stem: str) -> str:
    """Ratio to `direct` per implementation against the line's points, with 99 % intervals."""
    entities = sorted({n for c in line.cells for n in c["subjects"]})
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    xs = list(range(len(line.cells)))
    for k, name in enumerate(entities):
        points = [(x, c["subjects"][name]["ratio_to_direct"]) for x, c in zip(xs, line.cells, strict=True)
                  if name in c["subjects"] and c["subjects"][name].get("ratio_to_direct")]
        if not points:
            continue
        shift = (k - (len(entities) - 1) / 2) * 0.04
        x = [p[0] + shift for p in points]
        y = [p[1]["ratio"] for p in points]
        err = [[p[1]["ratio"] - p[1]["ci"][0] for p in points], [p[1]["ci"][1] - p[1]["ratio"] for p in points]]
        ax.errorbar(x, y, yerr=err, marker="o", markersize=4, capsize=3, linewidth=1.2, label=name)
    ax.set_xticks(xs, list(line.labels), fontsize=9)
    ax.set_xlabel(line.unit or line.axis)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_ylabel("× direct (log scale), 99 % CI")
    ax.set_title(f"{AXIS_TITLES.get(line.axis, line.axis.capitalize())}: {line.fixed}", fontsize=10, pad=30)
    ax.grid(axis="y", which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=min(4, len(entities)), frameon=False)
    return _svg(fig, stem)


def section(page: Page, results_dir: Path) -> list[str]:
    page.add(Heading(2, "Across conditions: payload, compression, network path", "sweep"))
    sweep = read_json(results_dir / "sweep" / "latest.json", "sweep", page)
    if not sweep:
        page.add(Para("Not run: `make sweep` (the latency suite over payload sizes, compression on and off and "
                      "shaped network paths; `protolab advise` reads it).", "missing"))
        return []
    ctx = sweep["context"]
    axis = ctx.get("sweep", {}).get("variant_axis", {})
    cells = sweep["cells"]
    runs = sorted({c["run"]["file"] for c in cells})
    cycles = sorted({c["cycles"] for c in cells if c.get("cycles")})
    page.add(Para(
        f"`results/sweep/latest.json`, {ctx.get('date')}: {len(cells)} cells from {len(runs)} runs of the latency "
        f"suite ({', '.join(f'`{r}`' for r in runs)}), {', '.join(map(str, cycles)) or '?'} cycles a cell. Every "
        "subject of a cell was measured together, interleaved; each ratio is to `direct` on the same path, paired "
        "by cycle, with its 99 % interval; the ranking says '<' only where the interval of the two subjects' "
        "paired ratio excludes 1."))
    lines = crossover.lines(cells, axis.get("values", []), axis.get("name") or "compression")
    for i, line in enumerate(lines):
        entities = sorted({n for c in line.cells for n in c["subjects"]})
        page.add(Heading(3, f"{AXIS_TITLES.get(line.axis, line.axis.capitalize())}: {line.fixed}", f"sweep-{i}"))
        short = line.unit.split(" ")[0]
        page.add(Table(["implementation", *[crossover.with_unit(label, short) for label in line.labels]],
                       [[name, *(_ratio(c["subjects"].get(name)) for c in line.cells)] for name in entities],
                       caption=f"× direct [99 % CI] against {line.unit or line.axis} ({line.fixed})",
                       anchor=f"sweep-table-{i}"))
        page.add(Figure(f"sweep-{i}", figure(line, f"sweep-{i}"),
                        f"Ratio to direct against {line.unit or line.axis}, {line.fixed}; bars: 99 % intervals."))
        said = [s for s in sweep["crossovers"] if s["axis"] == line.axis and s["line"] == line.fixed]
        if said:
            page.add(Bullets([s["text"] for s in said]))
    page.add(Heading(3, "The implementation to pick, per cell", "sweep-pick"))
    page.add(Table(["operation", axis.get("name") or "variant", "path", "run", "cycles", "pick", "ranking (× direct)"],
                   [[c["operation"], c["variant"] or "–", c["path"], c.get("group") or Path(c["run"]["file"]).stem,
                     str(c.get("cycles") or "–"), pick_text(c), chain_text(c)] for c in cells],
                   caption="per cell (a cell two slices measured: once per run): the first group of its ranking",
                   anchor="sweep-pick-table"))
    crossings = [s for s in sweep["crossovers"] if s["kind"] == "crossover"]
    page.add(Heading(3, "Crossovers", "sweep-crossovers"))
    page.add(Bullets([f"{AXIS_TITLES.get(s['axis'], s['axis'].capitalize())} ({s['line']}): {s['text']}"
                      for s in crossings]
                     or ["No crossover the intervals support in the range measured."]))
    return [f"sweep: {s['text']}" for s in crossings]
