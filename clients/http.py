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


def trust_only(session: requests.Session, ca_file: str) -> None:
    """`session` verifies every server against `ca_file` alone. requests lets the environment's
    REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE override a session's own `verify`, so the session
    reads nothing of the environment (proxies and .netrc neither: the lab's services are its own)."""
    session.verify = ca_file
    session.trust_env = False


class RequestsTransport:
    """One kept-alive requests.Session; `session` is there for tests that watch it.
    `ca_file`: over TLS (an https:// URL), the CA the server's certificate must chain to
    (the lab's own: lab/tls.py), in place of the system's."""

    def __init__(self, timeout: float, ca_file: str | None = None):
        self.timeout = timeout
        self.session = requests.Session()
        if ca_file:
            trust_only(self.session, ca_file)

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        response = self.session.request(method, url, data=body, headers=headers or None, timeout=self.timeout)
        return Reply(response.status_code, response.content)

    def close(self) -> None:
        self.session.close()
