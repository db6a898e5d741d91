"""Server-Sent Events: the push feeds of contract/push.md over HTTP/1.1 or
cleartext HTTP/2 (httpx), parsed as the WHATWG event-stream format.

    client = SseClient("http://127.0.0.1:8000")
    with client.subscribe("synthetic", batch=50, count=10) as stream:
        for event in stream:          # Event(id="1", event="synthetic", data=[[...], ...])
            ...

A push service serves no CRUD: this client has health() and subscribe(), and
the CRUD suites skip SSE implementations (their manifests list the operations).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx

from clients.base import CALL_TIMEOUT, Event
from clients.http import ON_HTTPX, WrongHttpVersion, accept_encoding, check_http, http2_client, require_http2
from contract.codec import loads
from contract.errors import CODE_OF_HTTP_STATUS, INTERNAL, ContractError, Unavailable, error_for
from services.common.feeds import KEEPALIVE_SECONDS, PUSH


class EventStream:
    """One open subscription: iterate for its events; ends with the stream."""

    def __init__(self, response: httpx.Response, context: Any):
        self.response = response
        self._context = context
        self._lines = response.iter_lines()
        self.comment = ""
        self.http_version = response.http_version
        self.encoding = response.headers.get("content-encoding", "")  # on the wire ("" for none)

    def wait_subscribed(self) -> None:
        """Read up to the server's ': subscribed <feed>' comment (push.md)."""
        for line in self._lines:
            if line.startswith(": subscribed"):
                self.comment = line[2:]
                return
        raise ContractError("the stream ended before the subscription was confirmed")

    def __iter__(self) -> Iterator[Event]:
        fields: dict[str, str] = {}
        data: list[str] = []
        size = 0
        for line in self._lines:
            size += len(line.encode()) + 1
            if line == "":
                if data:
                    yield Event(event=fields.get("event", "message"), data=loads("\n".join(data)),
                                id=fields.get("id"), wire_bytes=size)
                fields, data, size = {}, [], 0
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value

    def close(self) -> None:
        self._context.__exit__(None, None, None)

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SseClient:
    protocol = "sse"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, http2: bool = False,
                 ca_file: str | None = None, compression: str | None = None, http: str | None = None):
        """`compression` (lab/axes.py): the Accept-Encoding it asks with (httpx decodes
        a gzip stream as it arrives, event by event, when the server sync-flushes it).
        `http` (lab/axes.py, axis http): "h2" (over TLS, ALPN offering h2 and http/1.1) or
        "h2c" (prior knowledge), every answer checked to be HTTP/2, or "h1tls" (HTTP/1.1 by ALPN,
        checked so) (clients/http.py
        require_http2); `http2` (a push way's option): HTTP/2 without that check."""
        self.endpoint = endpoint.rstrip("/")
        self.timeout = timeout
        self.checked = check_http(http, ca_file) if http else None
        asked = accept_encoding(compression)
        timeouts = httpx.Timeout(timeout, read=max(timeout, KEEPALIVE_SECONDS + 5))
        if self.checked in ON_HTTPX:
            self.http = http2_client(self.checked, timeouts, ca_file, {"Accept-Encoding": asked} if asked else None)
            return
        # HTTP/2 over cleartext is prior knowledge (h2c): http1 off, http2 on; over TLS
        # (https://) the same switches make ALPN offer "h2" alone, or "http/1.1" alone.
        # `ca_file`: the CA the server's certificate must chain to (the lab's: lab/tls.py).
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
        self.http = httpx.Client(http1=not http2, http2=http2, verify=verify,
                                 headers={"Accept-Encoding": asked} if asked else None, timeout=timeouts)

    def _check(self, response: httpx.Response) -> None:
        if self.checked in ON_HTTPX:
            require_http2(response, self.checked)

    def health(self) -> None:
        try:
            response = self.http.get(f"{self.endpoint}/health")
        except httpx.HTTPError as exc:
            raise Unavailable(f"no answer: {exc}", native=type(exc).__name__) from None
        self._check(response)
        if response.status_code != 200:
            raise _error(response)

    def subscribe(self, feed: str, last_event_id: str | None = None, **params: Any) -> EventStream:
        """Open a subscription and wait until the server confirms it; raises the
        contract's error when the server refuses it."""
        return self.open_stream(urlencode({"feed": feed, **params}), last_event_id)

    def open_stream(self, query: str, last_event_id: str | None = None) -> EventStream:
        """GET /events?<query> as given (for bad-input tests: any query string)."""
        headers = {"accept": "text/event-stream"}
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        context = self.http.stream("GET", f"{self.endpoint}{PUSH['sse_path']}?{query}", headers=headers)
        try:
            response = context.__enter__()
        except httpx.HTTPError as exc:
            raise Unavailable(f"no answer: {exc}", native=type(exc).__name__) from None
        try:
            self._check(response)
        except WrongHttpVersion:
            context.__exit__(None, None, None)
            raise
        if response.status_code != 200:
            response.read()
            context.__exit__(None, None, None)
            raise _error(response)
        stream = EventStream(response, context)
        try:
            stream.wait_subscribed()
        except BaseException:
            stream.close()
            raise
        return stream

    def close(self) -> None:
        self.http.close()


def _error(response: httpx.Response) -> ContractError:
    try:
        error = response.json()["error"]
        return error_for(error["code"], error["message"], native=response.status_code)
    except (ValueError, KeyError, TypeError):
        code = CODE_OF_HTTP_STATUS.get(response.status_code, INTERNAL)
        return error_for(code, response.text[:200], native=response.status_code)
