"""The profiles section (make profile, profiling/): per implementation and
operation a flame graph drawn here from results/profiles/<impl>/<op>/stacks.collapsed
(SVG, one rectangle per frame, its width its share of the samples, coloured by
category), its top frames by self-CPU share and the split into categories.
Reads only the files the profiling run wrote."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from lab.workload import NAMES
from report.page import Figure, Heading, Page, Para, Table, slug

# One colour per category (profiling/summary.py CATEGORY_ORDER).
COLOURS = {"protocol library": "#e8a33d", "encoding": "#d9534f", "database driver": "#5b8ff9",
           "contract checks": "#9b59b6", "runtime": "#8c8c8c", "the lab's own code": "#3cb371",
           "database server": "#2f6fb0", "other": "#c9b28f"}
WIDTH, ROW = 1100, 16
MIN_SHARE = 0.002  # narrower frames are not drawn (their samples stay in their parent's width)


def read(results_dir: Path) -> list[tuple[dict[str, Any], Path]]:
    """(summary, its folder) of every profile, in the registry's order as written by the run."""
    found = []
    for path in sorted((results_dir / "profiles").glob("**/summary.json")):
        try:
            found.append((json.loads(path.read_text()), path.parent))
        except (OSError, json.JSONDecodeError):
            continue
    return sorted(found, key=lambda f: (f[0].get("implementation", ""),  # operations in the workload table's order
                                        NAMES.index(f[0]["operation"]) if f[0].get("operation") in NAMES
                                        else len(NAMES), f[0].get("operation", "")))


def _tree(lines: list[str]) -> dict[str, Any]:
    root: dict[str, Any] = {"n": 0, "kids": {}}
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        root["n"] += n
        node = root
        for frame in stack.split(";"):
            node = node["kids"].setdefault(frame, {"n": 0, "kids": {}})
            node["n"] += n
    return root


def flame_svg(collapsed: str, language: str, name: str) -> str:
    """A flame graph (root at the bottom) of collapsed stacks, as standalone SVG."""
    from profiling.summary import category  # the same table the summary used

    root = _tree(collapsed.splitlines())
    total = root["n"] or 1
    rects: list[str] = []
    depth_max = 0

    def draw(node: dict[str, Any], x: float, depth: int, path: list[str]) -> None:
        nonlocal depth_max
        for frame, kid in sorted(node["kids"].items()):
            share = kid["n"] / total
            w = share * WIDTH
            if share >= MIN_SHARE:
                depth_max = max(depth_max, depth + 1)
                colour = COLOURS.get(category([*path, frame], language), COLOURS["other"])
                label = html.escape(frame)
                text = frame if len(frame) * 6.2 < w - 4 else frame[: max(0, int((w - 4) / 6.2) - 1)] + "…"
                text = html.escape(text) if w > 24 else ""
                rects.append(f'<g><title>{label} — {share:.1%}</title>'
                             f'<rect x="{x:.1f}" y="{{y{depth}}}" width="{max(w - 0.5, 0.5):.1f}" height="{ROW - 1}" '
                             f'fill="{colour}" rx="1"/>'
                             + (f'<text x="{x + 2:.1f}" y="{{t{depth}}}">{text}</text>' if text else "") + "</g>")
                draw(kid, x, depth + 1, [*path, frame])
            x += w

    draw(root, 0.0, 0, [])
    height = (depth_max + 1) * ROW + 24
    body = "\n".join(rects)
    for d in range(depth_max + 1):  # rows from the bottom: the root frames lowest, as flame graphs are drawn
        body = body.replace(f"{{y{d}}}", str(height - 24 - (d + 1) * ROW)).replace(f"{{t{d}}}",
                                                                                  str(height - 24 - d * ROW - 4))
    legend = "".join(f'<rect x="{10 + i * 150}" y="{height - 16}" width="10" height="10" fill="{c}"/>'
                     f'<text x="{24 + i * 150}" y="{height - 7}">{html.escape(k)}</text>'
                     for i, (k, c) in enumerate(COLOURS.items()))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph" data-profile="{html.escape(name)}" '
            f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="monospace" '
            f'font-size="10">\n{body}\n{legend}\n</svg>')


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else "<1%" if x > 0 else "0%"


def section(page: Page, results_dir: Path) -> list[str]:
    page.add(Heading(2, "Where the CPU goes: profiles", "profiles"))
    profiles = read(results_dir)
    if not profiles:
        page.add(Para("Not profiled: run `make profile` (each runtime's own profiler around the latency "
                      "suite's calls; `PROFILE_ARGS=\"--impl NAME... --operation fetch-100\"` picks some)."))
        return []
    ctx = profiles[0][0].get("context", {})
    page.add(Para(
        "Each service driven with the latency suite's call, one after another, while its runtime's profiler "
        "sampled it: py-spy (threads holding the GIL), Go's runtime/pprof, V8's --cpu-prof; the database by "
        "perf where the kernel allows it. Self share: the samples in which the frame is the leaf. The split: "
        "each sample's category is its leaf-most frame that a pattern of `profiling/categories.toml` names "
        "(a copy or an allocation counts for its caller). Coverage: the profile's samples against the "
        "service's CPU seconds: runtime/pprof counts CPU time (below 1: time it does not see); py-spy and V8 "
        "sample by the clock, so a thread holding the GIL or running JavaScript while it waits for a CPU is "
        "counted too (above 1 on a busy machine), and py-spy does not see threads without the GIL. "
        f"Profiled {ctx.get('date', '?')}; the native files (speedscope, `go tool pprof`) are beside each "
        "`stacks.collapsed` under `results/profiles/`."))
    rows = []
    for s, _ in profiles:
        who = s["implementation"] + (" (client)" if s.get("process") == "client" else "")
        if "error" in s:
            rows.append([who, s["operation"], "–", "–", "–", f"not profiled: {s['error']}", "–"])
            continue
        cpu = s.get("cpu_us_per_call", {})
        top = "; ".join(f"{t['frame']} {_pct(t['self_share'])}" for t in s.get("top", [])[:5])
        split = ", ".join(f"{c} {_pct(v)}" for c, v in s.get("categories", {}).items())
        rows.append([who, s["operation"], f"{s['calls']:,}", f"{cpu.get('service', cpu.get('client', 0)):,.0f}",
                     f"{s.get('coverage', 0):.2f}", top, split])
    page.add(Table(["implementation", "operation", "calls", "CPU µs/call", "coverage", "top 5 frames (self)",
                    "split"], rows, "CPU profiles: top frames and categories", "profiles-table"))
    for s, folder in profiles:
        collapsed = folder / "stacks.collapsed"
        if "error" in s or not collapsed.exists():
            continue
        name = f"{s['implementation']} {s['operation']}" + (" (its client)" if s.get("process") == "client" else "")
        page.add(Figure(f"flame-{slug(name)}", flame_svg(collapsed.read_text(), s["language"], name),
                        f"{name}: {s['samples']:,} samples by {s['profiler']}, {s['calls']:,} calls; "
                        f"width = share of the samples, colour = category."))
    return []
