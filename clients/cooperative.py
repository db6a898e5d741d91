"""The HTTP transport for clients inside a Locust process (gevent): one kept-alive
geventhttpclient connection, the engine Locust's own FastHttpUser runs on,
about half the client CPU of requests per call. It sends the header set
requests sends (clients/http.py RequestsTransport), so a service receives the
same request line, headers and body from the load instrument as from the
latency suite. Import it only in a process gevent has patched."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
from geventhttpclient import HTTPClient

from clients.http import Reply

# What requests adds to every request (requests.utils.default_headers()), in its order.
REQUESTS_HEADERS = dict(requests.utils.default_headers())


class GeventTransport:
    def __init__(self, endpoint: str, timeout: float):
        parts = urlsplit(endpoint)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not an http:// endpoint: {endpoint!r}")
        self.client = HTTPClient(parts.hostname, parts.port or 80, headers=REQUESTS_HEADERS,
                                 connection_timeout=timeout, network_timeout=timeout, concurrency=1)
        self.origin = f"{parts.scheme}://{parts.netloc}"

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        if not url.startswith(self.origin):
            raise ValueError(f"{url} is not on {self.origin}")
        path = url[len(self.origin):] or "/"
        response = self.client.request(method, path, body=body or b"", headers=headers)
        try:
            return Reply(response.status_code, response.read())
        finally:
            response.release()

    def close(self) -> None:
        self.client.close()
