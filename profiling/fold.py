"""Each runtime's native profile, folded into collapsed stacks: {"root;...;leaf": samples}."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

Stacks = Counter  # "a;b;c" (root first) -> sample count


def _clean(frame: str) -> str:
    # ";" separates frames and a trailing " N" is the count in the collapsed form
    return frame.replace(";", ",").strip() or "?"


def read_collapsed(path: Path) -> Stacks:
    stacks: Stacks = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


def write_collapsed(stacks: Stacks, path: Path) -> None:
    path.write_text("".join(f"{stack} {n}\n" for stack, n in stacks.most_common()))


def pprof(profile: Path) -> Stacks:
    """A Go CPU profile (.pb.gz) through `go tool pprof -traces` (the names are in
    the profile: no binary needed). Each trace is a block of frames, leaf first,
    its value (10ms, 1.20s, ...) on the first line; inlined calls count as frames."""
    text = subprocess.run(["go", "tool", "pprof", "-traces", str(profile)], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    stacks: Stacks = Counter()
    for block in text.split("-----------+-")[1:]:
        lines = [line for line in block.splitlines()[1:] if line.strip()]
        if not lines:
            continue
        value, _, first = lines[0].strip().partition(" ")
        frames = [first.strip()] + [line.strip() for line in lines[1:]]
        frames = [re.sub(r"\s+\(inline\)$", "", f) for f in frames if f and not f.startswith("bytes:")]
        count = round(_seconds(value) * 100)  # runtime/pprof samples at 100 Hz
        if count and frames:
            stacks[";".join(_clean(f) for f in reversed(frames))] += count
    return stacks


def _seconds(value: str) -> float:
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    match = re.fullmatch(r"([0-9.]+)([a-zµ]+)", value)
    return float(match[1]) * units[match[2]] if match else 0.0


# Nodes V8 adds that are not JavaScript: (root) is dropped, (idle) is the event loop waiting.
V8_DROP = {"(root)"}
V8_IDLE = "(idle)"


def v8_window(profile: dict[str, Any], start_us: int, end_us: int) -> dict[str, Any]:
    """The .cpuprofile cut to [start_us, end_us] (V8's clock is CLOCK_MONOTONIC, as Python's
    time.monotonic_ns: the window the profiler's loop ran): still a valid profile for speedscope."""
    kept, deltas, hits = [], [], Counter()
    t = profile["startTime"]
    last = start_us
    for node_id, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        t += delta
        if start_us <= t <= end_us:
            kept.append(node_id)
            deltas.append(t - last)
            last = t
            hits[node_id] += 1
    nodes = [{**n, "hitCount": hits.get(n["id"], 0)} for n in profile["nodes"]]
    return {**profile, "nodes": nodes, "samples": kept, "timeDeltas": deltas,
            "startTime": start_us, "endTime": max(last, start_us)}


def v8(profile: dict[str, Any]) -> Stacks:
    """A .cpuprofile's samples as stacks of "function (file:line)"; (idle) samples left out."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", ())}
    names: dict[int, str] = {}

    def stack(node_id: int) -> str:
        if node_id not in names:
            chain = []
            i: int | None = node_id
            while i is not None:
                frame = nodes[i]["callFrame"]
                name = frame["functionName"] or "(anonymous)"
                if name not in V8_DROP:
                    url = re.sub(r"^file://", "", frame.get("url", ""))
                    chain.append(_clean(f"{name} ({url}:{frame['lineNumber'] + 1})" if url else name))
                i = parent.get(i)
            names[node_id] = ";".join(reversed(chain))
        return names[node_id]

    stacks: Stacks = Counter()
    for node_id in profile["samples"]:
        if nodes[node_id]["callFrame"]["functionName"] != V8_IDLE:
            stacks[stack(node_id)] += 1
    return stacks


def v8_file(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def perf_script(text: str) -> Stacks:
    """`perf script` output: blocks of "addr symbol (dso)" lines, leaf first, a header line above."""
    stacks: Stacks = Counter()
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        frames = []
        for line in lines[1:]:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                frames.append(_clean(re.sub(r"\+0x[0-9a-f]+", "", parts[1])))
        if frames:
            stacks[";".join(reversed(frames))] += 1
    return stacks
