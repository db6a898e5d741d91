"""The figures, drawn with matplotlib (Agg) and returned as SVG text."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from lab.page import svg as _svg  # noqa: E402

MODE_COLOURS = {"native": "#4c78a8", "docker": "#f58518"}
PHASE_COLOURS = {"setup": "#9ecae9", "request": "#4c78a8", "response": "#f58518", "teardown": "#bab0ac"}


def whisker_outliers(values: list[float]) -> int:
    """Points a box plot (whis=1.5) draws beyond its whiskers."""
    ordered = sorted(values)
    if len(ordered) < 4:
        return 0

    def q(p: float) -> float:
        pos = (len(ordered) - 1) * p
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
    q1, q3 = q(0.25), q(0.75)
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return sum(1 for v in ordered if v < lo or v > hi)


def latency(operation: str, runs: dict[str, dict[str, Any]], subjects: list[str]) -> str:
    """Box plots per implementation of the per-round times (µs), one box per
    mode side by side, every outlier drawn; log scale so the boxes stay
    readable next to the longest rounds."""
    modes = [m for m in ("native", "docker") if m in runs]
    subjects = [s for s in subjects if any(runs[m].get(s, {}).get("data_s") for m in modes)]
    width = 0.8 / max(len(modes), 1)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.6 * len(subjects) + 2.0), 4.6))
    for j, mode in enumerate(modes):
        data, positions = [], []
        for i, subject in enumerate(subjects):
            row = runs[mode].get(subject)
            if row and row.get("data_s"):
                data.append([t * 1e6 for t in row["data_s"]])
                positions.append(i + (j - (len(modes) - 1) / 2) * width)
        if not data:
            continue
        colour = MODE_COLOURS[mode]
        ax.boxplot(data, positions=positions, widths=width * 0.85, patch_artist=True, showmeans=True,
                   showfliers=True, manage_ticks=False,
                   boxprops={"facecolor": colour, "alpha": 0.55, "edgecolor": colour},
                   medianprops={"color": "black", "linewidth": 1.2},
                   meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black",
                              "markersize": 4},
                   flierprops={"marker": "o", "markersize": 2.2, "markerfacecolor": colour,
                               "markeredgecolor": "none", "alpha": 0.45},
                   whiskerprops={"color": colour}, capprops={"color": colour})
    ax.set_xticks(range(len(subjects)), subjects, rotation=15, ha="right", fontsize=9)
    ax.set_yscale("log")
    ax.set_ylabel("µs per operation (log scale)")
    ax.set_title(f"{operation}: latency per round at the client", pad=34)
    ax.grid(axis="y", which="both", alpha=0.25)
    handles = [Patch(facecolor=MODE_COLOURS[m], alpha=0.55, label=m) for m in modes]
    handles.append(Line2D([], [], marker="D", linestyle="", markerfacecolor="white",
                          markeredgecolor="black", label="mean"))
    handles.append(Line2D([], [], marker="o", linestyle="", markersize=3, color="grey", label="outlier"))
    ax.legend(handles=handles, fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles),
              frameon=False)
    return _svg(fig, f"latency-{operation}")


def wire_parts(cell: dict[str, Any]) -> dict[str, float]:
    """Frame bytes of one new-connection operation: setup, request, response, teardown."""
    op = cell["phases"]["operation"]
    return {"setup": cell["setup"]["total"]["frame_bytes"],
            "request": op["to_server"]["frame_bytes"],
            "response": op["to_client"]["frame_bytes"],
            "teardown": cell["teardown"]["total"]["frame_bytes"]}


def wire(wire_results: dict[str, Any], study: dict[str, dict[str, int]], impl_of: dict[str, str]) -> str:
    """Stacked bars per operation and implementation (one operation on a new
    connection), with the study's Table 7 total marked where it has one."""
    ops = wire_results["operations"]
    names = list(wire_results["new_connection"])
    fig, axes = plt.subplots(1, len(ops), figsize=(2.3 * len(ops) + 1.5, 4.2), squeeze=False)
    study_marked = False
    for ax, op in zip(axes[0], ops, strict=True):
        bottoms = [0.0] * len(names)
        for part, colour in PHASE_COLOURS.items():
            heights = [wire_parts(wire_results["new_connection"][n][op])[part]
                       if op in wire_results["new_connection"][n] else 0.0 for n in names]
            ax.bar(range(len(names)), heights, bottom=bottoms, color=colour, label=part, width=0.7)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        for protocol, value in study.get(op, {}).items():
            name = impl_of.get(protocol)
            if name in names:
                ax.plot([names.index(name)], [value], marker="D", color="black", markersize=5, linestyle="")
                study_marked = True
        ax.set_title(op, fontsize=10)
        ax.set_xticks(range(len(names)), [n.split("/")[0] for n in names], rotation=30, ha="right",
                      fontsize=8)
        ax.grid(axis="y", alpha=0.25)
    axes[0][0].set_ylabel("frame bytes, both directions")
    handles = [Patch(color=c, label=p) for p, c in PHASE_COLOURS.items()]
    if study_marked:
        handles.append(Line2D([], [], marker="D", color="black", linestyle="", label="study, Table 7"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, bbox_to_anchor=(0.5, -0.06))
    fig.suptitle("Bytes on the wire: one operation on a new connection", fontsize=11)
    return _svg(fig, "wire")
