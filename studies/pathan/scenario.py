"""Pathan's test on the push instrument (load/push.py): latency (receive time
- the server's send timestamp) at 10-1,000 clients, one message per second
each, batch 1, a 1 s warm-up and a 10 s window (the study's 10 s); WebSocket
push, SSE (HTTP/1.1) and HTTP polling (each client in a loop: GET
/events?feed=synthetic&count=1&rate=0 on the SSE service, kept alive, one
request outstanding: the study's REST client). --quick: 2 s windows at 10
and 100 clients.

By default the study's runtime: the implementations whose manifest's language
is the study's (Node.js) and whose protocol is SSE or WebSocket, serving
`subscribe`.
"""

from __future__ import annotations

from typing import Any

from lab.registry import select
from load.push import Run
from studies.pathan import STUDY

INSTRUMENT = "push"  # python -m studies push runs it, interleaved with the other push studies


def default() -> list[str]:
    s = STUDY.published()["scenario"]
    return [i.name for i in select() if i.language == s["language"] and i.protocol in s["protocols"]
            and i.serves(s["operation"])]


def runs(quick: bool, names: list[str] | None) -> dict[str, list[Run]]:
    s = STUDY.published()["scenario"]
    seconds = s["window_quick_s"] if quick else s["window_s"]
    counts = s["clients_quick"] if quick else s["clients"]
    protocol = {i.name: i.protocol for i in select(names)} if names else {i.name: i.protocol for i in select()}
    out: dict[str, list[Run]] = {}
    for name in names or default():
        if protocol[name] not in s["protocols"]:  # named for another study's scenario (a gRPC stream: Timeplus's)
            continue
        # WebSocket push on a WebSocket service; SSE and polling (the study's REST) on an SSE one
        for transport in ("ws",) if protocol[name] == "ws" else ("sse-h1", "poll"):
            out.setdefault(name, []).extend(Run(STUDY.name, transport, n, 1, 1, seconds, s["warmup_s"])
                                            for n in counts)
    return out


def figures() -> dict[str, Any]:
    """Its figures as the push results embed them (results' "studies" member):
    {"latency_ms": {protocol: {clients: [mean, sd]}}, "cpu_percent": {...}, "memory_mb": {protocol:
    {clients: [mean, sd]}}, "setup"}."""
    published = STUDY.published()
    tables = published["tables"]
    latency, cpu, memory = tables["3"]["rows"], tables["5"]["rows"], tables["6"]["rows"]
    return {"latency_ms": {p: {n: [v["mean"], v["sd"]] for n, v in by.items()} for p, by in latency.items()},
            "cpu_percent": cpu, "memory_mb": {p: {n: [v["mean"], v["sd"]] for n, v in by.items()}
                                              for p, by in memory.items()},
            "setup": published["setup"]}
