"""socket.io: the WebSocket protocol's requests (contract/ws-protocol.schema.json)
as socket.io carries them (contract/socketio-protocol.md: the event `call`
with one argument, the reply in its ack, no request_id), and what that
protocol refuses: wrong members and values, an argument that is no object (a
binary attachment included), another event, more or fewer arguments. Every
ack must be the reply the WebSocket schema describes (its request_id aside)
and carry a contract code when it is an error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import socketio
from hypothesis import strategies as st

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally, hostile_text
from clients.socketio.client import CODEC, EVENT
from clients.ws.fuzz import JSON_VALUES, invalid_requests, judge, valid_requests

# Names socket.io keeps for itself: a client may not emit them.
RESERVED = {"connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener"}


def _without_id(request: Any) -> Any:
    return {k: v for k, v in request.items() if k != "request_id"} if isinstance(request, dict) else request


def _cases(seeded: Sequence[str]) -> st.SearchStrategy[tuple[str, str, tuple[Any, ...]]]:
    """(kind, event, arguments); kind: "valid", "mutated" (members or values
    the schema refuses, as the WebSocket fuzzer makes them: most are refused),
    "refused" (what socket.io's protocol refuses whatever the request)."""
    valid = valid_requests(seeded).map(lambda r: ("valid", EVENT, (_without_id(r),)))
    mutated = invalid_requests(seeded).map(lambda r: ("mutated", EVENT, (_without_id(r),)))
    refused = st.one_of(
        st.binary(max_size=200).map(lambda b: ("refused", EVENT, (b,))),  # a binary attachment
        st.tuples(hostile_text(20).filter(lambda e: e not in RESERVED and e != EVENT),
                  valid_requests(seeded)).map(lambda t: ("refused", t[0], (_without_id(t[1]),))),
        st.lists(JSON_VALUES, min_size=2, max_size=3).map(lambda a: ("refused", EVENT, tuple(a))),
        st.just(("refused", EVENT, ())))
    return st.one_of(valid, mutated, refused)


def fuzzer(endpoint: str, seeded_ids: Sequence[str]):
    url = urlsplit(endpoint)
    sio = socketio.Client(reconnection=False, handle_sigint=False, json=CODEC)
    sio.connect(f"{url.scheme}://{url.netloc}", transports=["websocket"],
                socketio_path=url.path.strip("/") or "socket.io", wait_timeout=CALL_TIMEOUT)

    def execute(case: Any, tally: Tally, model: Model) -> None:
        kind, event, arguments = case
        # python-socketio sends a tuple as that many arguments (none for ()).
        data = arguments[0] if len(arguments) == 1 else arguments
        ack = sio.call(event, data, timeout=CALL_TIMEOUT)
        if not isinstance(ack, dict):
            tally.fail(case, f"the ack is not an object: {ack!r}")
            return
        # The WebSocket protocol's reply, its request_id aside (an ack pairs them).
        request = arguments[0] if kind != "refused" else None
        judge(case, kind, kind == "valid", request, {"request_id": "fuzz", **ack}, tally, model)
        if kind == "refused" and "error" not in ack:
            tally.fail(case, "a request the protocol refuses was answered with a result")

    return _cases(seeded_ids), execute, sio.disconnect
