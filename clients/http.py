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

# What each value of the lab's compression axis (lab/axes.py) asks an HTTP server for:
# Accept-Encoding as the client sends it. None: the client's own default (requests':
# "gzip, deflate", both of which it decodes).
ACCEPT_ENCODING: dict[str, str | None] = {"identity": None, "gzip": "gzip"}


def accept_encoding(compression: str | None) -> str | None:
    """The Accept-Encoding a client sends for `compression` (None: its default)."""
    if compression is None:
        return None
    try:
        return ACCEPT_ENCODING[compression]
    except KeyError:
        raise ValueError(f"compression {compression!r}: expected one of {', '.join(ACCEPT_ENCODING)}") from None


class Reply(NamedTuple):
    status: int
    content: bytes  # decoded: what the body says, whatever its content coding on the wire
    encoding: str = ""  # its Content-Encoding on the wire ("" for none)

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
    (the lab's own: lab/tls.py), in place of the system's. `compression` (lab/axes.py): the
    Accept-Encoding it asks with; requests (urllib3) decodes gzip and deflate replies either way."""

    def __init__(self, timeout: float, ca_file: str | None = None, compression: str | None = None):
        self.timeout = timeout
        self.session = requests.Session()
        if ca_file:
            trust_only(self.session, ca_file)
        asked = accept_encoding(compression)
        if asked is not None:
            self.session.headers["Accept-Encoding"] = asked

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        response = self.session.request(method, url, data=body, headers=headers or None, timeout=self.timeout)
        return Reply(response.status_code, response.content, response.headers.get("Content-Encoding", ""))

    def close(self) -> None:
        self.session.close()
