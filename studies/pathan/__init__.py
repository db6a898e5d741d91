"""Pathan: push latency of WebSocket, SSE and REST polling at 10-1,000
clients, with CPU. Its scenario: scenario.py (python -m studies push
--scenario pathan)."""

from studies import Study

STUDY = Study(
    name="pathan",
    citation="Pathan, \"Empirical Comparison of REST, WebSocket and SSE for Web Applications\"",
    measured="latency (mean ± sd, ms; Table 3) and CPU (Table 5) of REST polling, WebSocket and SSE at "
             "10-1,000 clients",
    order=35,
)
