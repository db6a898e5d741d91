"""Every message the tests' clients receive, checked against the contract
files once the test ends: REST responses (openapi.yaml), WebSocket replies and
push messages (ws-protocol.schema.json, its payloads by push.schema.json),
socket.io push messages (the same Push schema), SSE events (push.schema.json),
SOAP responses and the requests the service accepted (games.wsdl's XML
Schema). During a test a message is only recorded (a list append); it is
validated after the test (benchmarks/ has no such hook, so nothing of it is
ever timed).

    watch(client)           # once per client
    problems = checked()    # after the test: what is outside the contract ([] when all conforms)
"""

from __future__ import annotations

from typing import Any

from contract.validate import (
    SOAP_ENV,
    rest_response_errors,
    soap_message_errors,
    sse_event_errors,
    ws_message_errors,
)

CHECKED: dict[str, int] = {"rest": 0, "ws": 0, "socketio": 0, "sse": 0, "soap": 0}
_SEEN: dict[str, list[Any]] = {kind: [] for kind in CHECKED}
_WATCHED: set[int] = set()


def watch(client: Any) -> Any:
    """Record what `client` receives (once per client object); returns it."""
    from clients.rest.client import RestClient
    from clients.soap.client import SoapClient
    from clients.socketio.client import PUSH_EVENT, SocketIOClient
    from clients.sse.client import SseClient
    from clients.ws.client import WebSocketClient

    if id(client) in _WATCHED:
        return client
    _WATCHED.add(id(client))
    if isinstance(client, RestClient | SoapClient):
        kind = "rest" if isinstance(client, RestClient) else "soap"
        if client.session is not None:  # requests (HTTP/1.1)
            client.session.hooks["response"].append(lambda response, *a, **k: _SEEN[kind].append(response))
        else:  # an HTTP/2 subject's httpx client (clients/http.py HttpxTransport): read by the time it is checked
            client.transport.client.event_hooks["response"].append(lambda response: _SEEN[kind].append(response))
    elif isinstance(client, WebSocketClient):
        receive = client.ws.receive

        def receiving(*args: Any, **kwargs: Any) -> Any:
            message = receive(*args, **kwargs)
            if message is not None:
                _SEEN["ws"].append(message)
            return message
        client.ws.receive = receiving
    elif isinstance(client, SocketIOClient):
        on_push = client._on_push

        def pushed(message: Any) -> None:
            _SEEN["socketio"].append(message)
            on_push(message)
        client.sio.on(PUSH_EVENT, pushed)
    elif isinstance(client, SseClient):
        open_stream = client.open_stream

        def opening(*args: Any, **kwargs: Any) -> Any:
            return _RecordedStream(open_stream(*args, **kwargs))
        client.open_stream = opening
    return client


class _RecordedStream:
    """An SSE EventStream whose events are recorded as they are read."""

    def __init__(self, stream: Any):
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __iter__(self) -> Any:
        for event in self._stream:
            _SEEN["sse"].append(event)
            yield event

    def __enter__(self) -> _RecordedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


def clear() -> None:
    for seen in _SEEN.values():
        seen.clear()


def checked() -> list[str]:
    """Validate what was recorded since the last call; the problems found."""
    problems: list[str] = []
    for response in _SEEN["rest"]:
        request = response.request  # requests' PreparedRequest, or httpx's Request
        path = (request.path_url if hasattr(request, "path_url") else request.url.path).split("?")[0]
        problems += rest_response_errors(response.request.method, path, response.status_code,
                                         response.headers.get("Content-Type"), response.content)
    for message in _SEEN["ws"] + _SEEN["socketio"]:
        problems += ws_message_errors(message)
    for event in _SEEN["sse"]:
        problems += sse_event_errors(event.event, event.data, event.id)
    for response in _SEEN["soap"]:
        problems += _soap_exchange_errors(response)
    for kind, seen in _SEEN.items():
        CHECKED[kind] += len(seen)
    clear()
    return problems


def _soap_exchange_errors(response: Any) -> list[str]:
    """The response by the WSDL, and so the request unless the service refused
    it as the client's fault (an accepted request must have been valid);
    HTTP 500 with every Fault and only then (SOAP 1.1)."""
    problems = [f"response: {p}" for p in soap_message_errors(response.content)]
    fault = _fault_code(response.content)  # "" when none
    if (response.status_code == 500) != bool(fault):
        problems.append(f"HTTP {response.status_code} with {'a Fault' if fault else 'no Fault'}")
    if fault != "Client":
        request = response.request.body
        problems += [f"request accepted: {p}" for p in soap_message_errors(
            request.encode() if isinstance(request, str) else request or b"")]
    return problems


def _fault_code(body: bytes) -> str:
    from lxml import etree

    try:
        fault = etree.fromstring(body).find(f"{{{SOAP_ENV}}}Body/{{{SOAP_ENV}}}Fault")
    except etree.XMLSyntaxError:
        return ""
    return "" if fault is None else (fault.findtext("faultcode") or "").split(":")[-1].split(".")[0]
