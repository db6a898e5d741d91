"""The Feathers comparison: requests/s of HTTP against one WebSocket
(socket.io) per client as the calls per connection grow. Its scenario:
scenario.py (python -m studies feathers)."""

from studies import Study

STUDY = Study(
    name="feathers",
    citation="\"HTTP vs Websockets: A performance comparison\" (the Feathers blog)",
    measured="requests/s of Express (HTTP) and socket.io, 100 connections making 1-2,000 calls each, and "
             "bytes per call",
    order=20,
)
