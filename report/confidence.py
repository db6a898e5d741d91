"""The report's sections on what a run's numbers support: rankings with their
bootstrap intervals, where each operation's time goes (CPU of client,
service and database beside wall time), and the noise guard. (The Go and Node.js clients at
concurrency 1 beside the Python client: report/load.py.)"""

from __future__ import annotations

from typing import Any

from lab.stats import noise
from lab.stats.statistics import resampled_in_runs
from report import figures
from report.inputs import MODES, RUN_COMMAND, Inputs
from report.page import Bullets, Figure, Heading, Page, Para, Table

CPU_PARTS = {"client": "#4c78a8", "service": "#f58518", "database": "#54a24b", "rest": "#d9d9d9"}


def cpu_parts(row: dict[str, Any]) -> dict[str, float] | None:
    """µs per operation: client / service / database CPU and the rest of the wall time."""
    cpu, wall = row.get("cpu_us_per_op"), row.get("wall_us_per_op")
    if not cpu or not wall:
        return None
    parts = {p: float(cpu.get(p, 0.0)) for p in ("client", "service", "database")}
    parts["rest"] = max(wall - sum(parts.values()), 0.0)   # < 0: the processes overlapped (see overlap())
    return parts


def overlap(row: dict[str, Any]) -> float:
    """µs per operation by which the processes' CPU exceeds the wall time: they ran at once."""
    cpu, wall = row.get("cpu_us_per_op") or {}, row.get("wall_us_per_op") or 0.0
    return max(sum(float(cpu.get(p, 0.0)) for p in ("client", "service", "database")) - wall, 0.0)


def cpu_figure(op: str, mode: str, rows: dict[str, dict[str, Any]], subjects: list[str]) -> str | None:
    names = [s for s in subjects if s in rows and cpu_parts(rows[s])]
    if not names:
        return None
    plt = figures.plt
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(names) + 2), 3.8))
    bottoms = [0.0] * len(names)
    for part, colour in CPU_PARTS.items():
        heights = [cpu_parts(rows[n])[part] for n in names]  # type: ignore[index]
        ax.bar(range(len(names)), heights, bottom=bottoms, color=colour, label=part, width=0.7)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("µs per operation")
    ax.set_title(f"{op}, {mode} mode: where the time goes", fontsize=10)
    ax.grid(axis="y", alpha=0.25)
    ax.legend(fontsize=7, ncol=4, loc="upper left")
    return figures._svg(fig, f"cpu-{op}-{mode}")


def _ci(r: dict[str, Any]) -> str:
    return f"{r['ratio']:.2f} [{r['ci'][0]:.2f}–{r['ci'][1]:.2f}]"


def rankings_section(page: Page, inputs: Inputs) -> list[str]:
    """Returns the ranking chains, for the command line's summary."""
    page.add(Heading(2, "Rankings with confidence", "rankings"),
             Para("The subjects of one operation are measured interleaved: every cycle visits every "
                  "implementation and `direct` once, in random order, a short warm block each. Each "
                  "ratio is paired by cycle: the median over cycles of a's time ÷ b's in the same cycle "
                  "(a slow spell of the machine slows both and cancels), with a 99 % bootstrap interval "
                  "(99 % over the looks of the sequential rule that stopped the operation: each table's "
                  "caption gives its level, e.g. 99.5 % at the cap; docs/methodology.md, \"Stopping when "
                  "the intervals are narrow\") that resamples whole cycles in runs of consecutive cycles "
                  "(the machine's spells outlast a "
                  "cycle; benchmarks/README.md, \"Intervals in runs of cycles\"). It covers one run's noise, not the "
                  "machine's from one run to the next: `make bench-runs` measures that. The ranking "
                  "reads as one order: implementations by their paired ratio to direct, in groups the "
                  "intervals cannot tell apart (`a = b`: every pair's interval in the group includes 1), "
                  "`<` between groups (each group is slower than a member of the one before)."))
    out: list[str] = []
    for mode in MODES:
        run = inputs.runs.get(mode)
        if run is None:
            continue
        rankings = run.get("rankings") or {}
        if not rankings:
            page.add(Para(f"{mode} mode: this run has no rankings (made before interleaved runs); "
                          f"rerun `{RUN_COMMAND[mode]}`.", "missing"))
            continue
        for op in inputs.operations():
            ranking = rankings.get(op)
            if not ranking or not ranking.get("order"):
                continue
            out.append(f"{mode}, {op}: {ranking['chain']}")
            page.add(Heading(3, f"{op}, {mode} mode", f"rank-{op}-{mode}"),
                     Para(f"**{ranking['chain']}**"))
            by_pair = {(p["a"], p["b"]): p for p in ranking["pairs"]}
            rows = []
            for a, b in zip(ranking["order"], ranking["order"][1:], strict=False):
                p = by_pair[(a, b)]
                rows.append([a, p["relation"], b, _ci(p),
                             "no significant difference" if p["relation"] == "~" else "significant"])
            page.add(Table(["a", "", "b", f"a ÷ b, paired by cycle [{ranking['confidence'] * 100:g} % CI]",
                            "verdict"], rows,
                           caption=f"{op}, {mode}: neighbours in median order "
                                   f"({ranking['cycles']} cycles, {ranking['confidence'] * 100:g} % intervals, "
                                   f"{ranking['resamples']} resamples{resampled_in_runs(ranking)})",
                           anchor=f"pairs-{op}-{mode}"))
            to_base = ranking.get("to_baseline") or {}
            if to_base:
                page.add(Table(["implementation", f"÷ direct, paired by cycle [{ranking['confidence'] * 100:g} % CI]"],
                               [[s, _ci(r)] for s, r in to_base.items()],
                               caption=f"{op}, {mode}: ratio to direct", anchor=f"ratio-{op}-{mode}"))
            ties = [p["text"] for p in ranking["pairs"] if p["relation"] == "~"
                    and (p["a"], p["b"]) not in set(zip(ranking["order"], ranking["order"][1:], strict=False))]
            if ties:
                page.add(Para("Also not significantly different (not neighbours): " + "; ".join(ties) + "."))
    return out


def cpu_section(page: Page, inputs: Inputs) -> None:
    page.add(Heading(2, "Where the time goes", "cpu"),
             Para("CPU time per operation, read around the timed blocks from the scheduler's "
                  "per-thread counters: the client (the benchmark's own process: the protocol's Python "
                  "client library and its decoding), the service (its process with threads and "
                  "children), the database; the rest of the wall time is waiting: the wire, wake-ups, "
                  "scheduling. With two cores the processes can run at the same time (the client decoding "
                  "while the service finishes its request): then their CPU adds up to more than the wall "
                  "time, the rest is 0 and `overlap` says by how much."))
    subjects = inputs.subjects()
    for mode in MODES:
        run = inputs.runs.get(mode)
        if run is None:
            continue
        for op in inputs.operations():
            rows = run["results"].get(op, {})
            body = []
            for s in subjects:
                parts = cpu_parts(rows.get(s, {}))
                if parts:
                    body.append([s, f"{rows[s]['wall_us_per_op']:.0f}",
                                 *(f"{parts[p]:.0f}" for p in CPU_PARTS), f"{overlap(rows[s]):.0f}"])
            if not body:
                page.add(Para(f"{op}, {mode} mode: no CPU figures in this run; rerun "
                              f"`{RUN_COMMAND[mode]}`.", "missing"))
                continue
            page.add(Table(["implementation", "wall µs/op", "client CPU", "service CPU", "database CPU",
                            "rest", "overlap"], body, caption=f"{op}, {mode} mode (µs per operation)",
                           anchor=f"cpu-{op}-{mode}"))
            svg = cpu_figure(op, mode, rows, subjects)
            if svg:
                page.add(Figure(f"cpu-{op}-{mode}", svg,
                                f"{op}, {mode} mode: wall time per operation split into client CPU, service "
                                "CPU, database CPU and the rest (waiting and wire)."))


def noise_section(page: Page, inputs: Inputs) -> None:
    page.add(Heading(2, "Noise guard", "noise"))
    items = []
    for mode in MODES:
        run = inputs.runs.get(mode)
        if run is None:
            continue
        guard = run["context"].get("noise")
        if guard is None:
            items.append(f"{mode}: not recorded (a run made before the noise guard); rerun "
                         f"`{RUN_COMMAND[mode]}`.")
        else:
            items.append(f"{mode}: " + ("**flagged** — " if guard.get("flagged") else "") + noise.describe(guard))
    page.add(Bullets(items) if items else Para("No benchmark run saved.", "missing"))


def sections(page: Page, inputs: Inputs) -> list[str]:
    rankings = rankings_section(page, inputs)
    cpu_section(page, inputs)
    noise_section(page, inputs)  # the concurrency-1 cross-check: the load section (report/load.py)
    return rankings
