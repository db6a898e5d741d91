"""Fernando & Engel 2025: WebSocket libraries (ws, socket.io, gorilla/websocket,
coder/websocket) under the echo and broadcast tests at 100-1,000 clients.
Its scenario: scenario.py (python -m studies fernando)."""

from studies import Study

STUDY = Study(
    name="fernando",
    citation="Fernando & Engel, \"Comparative Performance Benchmarking of WebSocket Libraries on Node.js "
             "and Golang\", Sinkron 2025",
    measured="connection time, RTT and throughput (echo) and broadcast latency of four WebSocket libraries "
             "at 100-1,000 clients (Table 2: 1,000 clients)",
    order=40,
)
