"""The report's opening: what the run found. One figure (each implementation's
ratio to `direct` with its 99 % interval, per operation, grouped by protocol
and by language within it) and the findings those intervals support, in
sentences: the ranking as one order of groups, and within each protocol which
language's implementation the intervals tell apart. Read from the latency
suite's result (its rankings), through report.inputs."""

from __future__ import annotations

from typing import Any

from clients.protocols import label
from report import findings as run_findings
from report.figures import _svg, plt
from report.grouping import language_label
from report.inputs import Inputs
from report.page import Bullets, Figure, Heading, Page, Para


def _rankings(inputs: Inputs) -> tuple[str, dict[str, Any]] | None:
    """(mode, {operation: ranking}) of the native run, else the Docker one."""
    for mode in ("native", "docker"):
        run = inputs.runs.get(mode)
        if run and run.get("rankings"):
            return mode, run["rankings"]
    return None


def figure(rankings: dict[str, Any], operations: list[str], subjects: list[str], inputs: Inputs) -> str:
    shown = [s for s in subjects if s != "direct" and any(s in (rankings.get(op) or {}).get("to_baseline", {})
                                                          for op in operations)]
    fig, axes = plt.subplots(1, len(operations), figsize=(3.2 * len(operations) + 2.4, 0.28 * len(shown) + 1.4),
                             sharey=True, squeeze=False)
    ys = {s: len(shown) - 1 - i for i, s in enumerate(shown)}
    colours = {"python": "#4c78a8", "go": "#54a24b", "node": "#e45756"}
    for ax, op in zip(axes[0], operations, strict=True):
        to_base = (rankings.get(op) or {}).get("to_baseline", {})
        for s in shown:
            r = to_base.get(s)
            if not r:
                continue
            low, high = r["ci"]
            colour = colours.get(inputs.language_of(s), "#888888")
            ax.plot([low, high], [ys[s], ys[s]], "-", color=colour, linewidth=2.2, solid_capstyle="butt")
            ax.plot([r["ratio"]], [ys[s]], "o", color=colour, markersize=3.5)
        ax.axvline(1.0, color="#999999", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_title(op, fontsize=9)
        ax.set_xlabel("× direct (log), 99 % CI", fontsize=8)
        ax.grid(axis="x", which="both", alpha=0.25)
        ax.tick_params(labelsize=7)
    protocols = [inputs.protocol_of(s) for s in shown]
    for i in range(1, len(shown)):  # a rule between protocols
        if protocols[i] != protocols[i - 1]:
            for ax in axes[0]:
                ax.axhline(ys[shown[i]] + 0.5, color="#cccccc", linewidth=0.6)
    axes[0][0].set_yticks([ys[s] for s in shown], shown, fontsize=7)
    handles = [plt.Line2D([], [], color=c, marker="o", linewidth=2, label=language_label(k))
               for k, c in colours.items() if any(inputs.language_of(s) == k for s in shown)]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return _svg(fig, "summary")


def findings(rankings: dict[str, Any], operations: list[str], subjects: list[str], inputs: Inputs) -> list[str]:
    out = []
    for op in operations:
        ranking = rankings.get(op) or {}
        to_base = ranking.get("to_baseline") or {}
        groups = [[s for s in g if s != "direct"] for g in ranking.get("tiers") or []]
        groups = [g for g in groups if g]
        if not to_base or not groups:
            continue
        ratios = sorted((r["ratio"], s) for s, r in to_base.items())
        first = groups[0]
        lead = (f"{first[0]} is the fastest" if len(first) == 1 else
                f"{', '.join(first[:-1])} and {first[-1]} are the fastest, indistinguishable from each other")
        out.append(f"**{op}**: {lead} ({ratios[0][0]:.2f}× direct); the slowest, {ratios[-1][1]}, takes "
                   f"{ratios[-1][0]:.2f}× direct. The intervals give {len(groups)} groups in one order: "
                   + " < ".join("{" + ", ".join(g) + "}" if len(g) > 1 else g[0] for g in groups) + ".")
        pairs = {(p["a"], p["b"]): p for p in ranking.get("pairs") or []}
        sentences = []
        by_protocol: dict[str, list[str]] = {}
        for s in subjects:
            if s in to_base:
                by_protocol.setdefault(inputs.protocol_of(s), []).append(s)
        for protocol, impls in by_protocol.items():
            if len(impls) < 2:
                continue
            best = min(impls, key=lambda s: to_base[s]["ratio"])
            beaten, tied = [], []
            for other in impls:
                if other == best:
                    continue
                p = pairs.get((best, other)) or pairs.get((other, best))
                (tied if p is None or p["relation"] == "~" else beaten).append(other)
            text = f"{label(protocol)}: {best} ({language_label(inputs.language_of(best))}) first"
            if beaten:
                text += f", ahead of {', '.join(beaten)}"
            if tied:
                text += f"; not told apart from {', '.join(tied)}"
            sentences.append(text)
        if sentences:
            out.append(f"{op}, within each protocol: " + "; ".join(sentences) + ".")
    return out


def section(page: Page, inputs: Inputs) -> None:
    page.add(Heading(2, "What the run found", "found"))
    found = _rankings(inputs)
    if found is None:
        page.add(Para("No latency run with rankings yet: `make bench` measures one; this section then opens "
                      "the report with its figure and findings.", "missing"))
        return
    mode, rankings = found
    operations = [op for op in inputs.operations() if op in rankings]
    subjects = inputs.subjects()
    page.add(Figure("summary", figure(rankings, operations, subjects, inputs),
                    f"Each implementation's time per operation ÷ direct's ({mode} mode), the median over cycles of "
                    "the ratio paired by cycle, with its 99 % bootstrap interval; grouped by protocol, by "
                    "language within it (colour). Left of 1: no implementation can be."),
             Bullets(findings(rankings, operations, subjects, inputs) + run_findings.across(inputs)),
             Para("A group is a set of implementations the intervals cannot tell apart (every pair's 99 % "
                  "interval includes 1); each group is slower than a member of the one before. One run's "
                  "intervals cover that run's noise, not the machine's from one run to the next "
                  "(`make bench-runs`; docs/methodology.md)."))
