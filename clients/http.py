"""HTTP/1.1 transports for the clients that speak HTTP (REST, GraphQL, SOAP).

A client builds its request (method, URL, headers, body) and reads its reply
(status, body); the transport only carries them. The latency suite's clients
use one kept-alive requests.Session; the load instrument's Locust processes
run the same clients over geventhttpclient (clients/cooperative.py), so both
send the same request line, headers and body.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import requests


class Reply(NamedTuple):
    status: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class Transport(Protocol):
    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply: ...
    def close(self) -> None: ...


class RequestsTransport:
    """One kept-alive requests.Session; `session` is there for tests that watch it."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.session = requests.Session()

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        response = self.session.request(method, url, data=body, headers=headers or None, timeout=self.timeout)
        return Reply(response.status_code, response.content)

    def close(self) -> None:
        self.session.close()
