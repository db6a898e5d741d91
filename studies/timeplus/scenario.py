"""Timeplus's tests on the push instrument (load/push.py):

- test I: events/s as the batch size goes 1-400 at 10 subscriptions;
- test II: events/s as the subscriptions go 1-60 at batch 50;

one message per ms per subscription (its 1 ms interval); SSE over HTTP/2
over TLS 1.3 (h2, its browser tab's: all subscriptions on one connection, on
the service's http=h2 variant, the lab's CA verified), over cleartext HTTP/2
(h2c, the same without TLS) and over HTTP/1.1 (a connection each), and
WebSocket push (a connection each); beside them, the
lab's addition, gRPC server streaming (Subscribe, all subscriptions on one
HTTP/2 connection). Each run a 0.5 s warm-up (the subscriptions open) and a 2 s
window (--quick: 1 s, batch 1, 50, 400 and 1, 10, 60 subscriptions).

By default one of each protocol per language: the first SSE, WebSocket and gRPC
implementation (registry order) that serve `subscribe`, by their manifests'
protocol and language fields.
"""

from __future__ import annotations

from typing import Any

from lab.registry import first_of_each, select
from load.push import Run, subject, transports
from studies.timeplus import STUDY

INSTRUMENT = "push"  # python -m studies push runs it, interleaved with the other push studies


def default() -> list[str]:
    """One SSE and one WebSocket implementation per language that has both, and that
    language's gRPC one beside them ("beside_protocols")."""
    scenario = STUDY.published()["scenario"]
    protocols = [*scenario["protocols"], *scenario.get("beside_protocols", [])]
    chosen = first_of_each([i for i in select() if i.protocol in protocols
                            and i.serves(scenario["operation"])], lambda i: (i.language, i.protocol))
    return [name for (language, _), name in chosen.items()
            if all((language, p) in chosen for p in scenario["protocols"])]


def runs(quick: bool, names: list[str] | None) -> dict[str, list[Run]]:
    s = STUDY.published()["scenario"]
    batch, concurrency = s["batch"], s["concurrency"]
    seconds = s["window_quick_s"] if quick else s["window_s"]
    batches = batch["quick"] if quick else batch["batches"]
    clients = concurrency["quick"] if quick else concurrency["clients"]
    out: dict[str, list[Run]] = {}
    for name in names or default():
        for transport in transports(name):
            out.setdefault(subject(name, transport), []).extend(
                [Run(f"{STUDY.name}-batch", transport, batch["clients"], b, s["rate_per_s"], seconds, s["warmup_s"])
                 for b in batches] +
                [Run(f"{STUDY.name}-concurrency", transport, c, concurrency["batch"], s["rate_per_s"], seconds,
                     s["warmup_s"]) for c in clients])
    return out


def figures() -> dict[str, Any]:
    """Its figures as the push results embed them (results' "studies" member)."""
    published = STUDY.published()
    return {key: row["value"] for key, row in published["tables"]["text"]["rows"].items()} | \
        {"setup": published["setup"]}
