"""Timeplus: SSE against WebSocket push, events/s and CPU as the batch size
(test I) and the subscriptions (test II) grow. Its scenario: scenario.py
(python -m studies push --scenario timeplus)."""

from studies import Study

STUDY = Study(
    name="timeplus",
    citation="Timeplus, \"WebSocket vs. Server-sent Events: A Performance Comparison\"",
    measured="events/s and client CPU of SSE (HTTP/2) and WebSocket push as the batch size goes 1-400 "
             "(test I) and the subscriptions 1-60 (test II)",
    order=30,
)
