"""The HTTP transport for clients inside a Locust process (gevent): one kept-alive
geventhttpclient connection, the engine Locust's own FastHttpUser runs on,
about half the client CPU of requests per call. It sends the header set
requests sends (clients/http.py RequestsTransport), so a service receives the
same request line, headers and body from the load instrument as from the
latency suite. requests asks for gzip and deflate (Accept-Encoding), and a server
may answer in either: they are decoded here as requests decodes them, so that the
load instrument reads the same body. Import it only in a process gevent has patched.

Over HTTP/2 (lab/axes.py, axis http) the transport is the latency suite's own (httpx with
h2, clients/http.py: gevent's patching makes its sockets and locks cooperative), each user
on a connection of its own, or, with `shared`, every user of the process on one connection,
each call a stream of it (the load instrument's --share-connection)."""

from __future__ import annotations

import zlib
from urllib.parse import urlsplit

import requests
from geventhttpclient import HTTPClient

from clients.http import HttpxTransport, Reply, SharedHttp2, Transport, accept_encoding, check_http

# What requests adds to every request (requests.utils.default_headers()), in its order.
REQUESTS_HEADERS = dict(requests.utils.default_headers())




def decode(body: bytes, encoding: str) -> bytes:
    """A body in the content codings named by `encoding` (Content-Encoding: gzip, deflate
    or none; applied in order, so decoded in reverse), as requests (urllib3) decodes it:
    "deflate" as zlib's format, or raw DEFLATE from a server that sends it so."""
    for coding in reversed([c.strip().lower() for c in encoding.split(",") if c.strip()]):
        if coding in ("gzip", "x-gzip"):
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            try:
                body = zlib.decompress(body)
            except zlib.error:
                body = zlib.decompress(body, -zlib.MAX_WBITS)
        elif coding != "identity":
            raise ValueError(f"a reply in content coding {coding!r}, which this client did not ask for")
    return body


class GeventTransport:
    """`ca_file`: over TLS (an https:// endpoint: a +tls13 or +tls12 subject), the CA the server's
    certificate must chain to (the lab's: lab/tls.py), in place of the system's."""

    def __init__(self, endpoint: str, timeout: float, compression: str | None = None, ca_file: str | None = None):
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// endpoint: {endpoint!r}")
        if (parts.scheme == "https") != bool(ca_file):
            raise ValueError(f"{endpoint}: an https:// endpoint with the CA to verify (ca_file), or http:// without")
        asked = accept_encoding(compression)
        headers = REQUESTS_HEADERS if asked is None else {**REQUESTS_HEADERS, "Accept-Encoding": asked}
        secure = {"ssl": True, "ssl_options": {"ca_certs": ca_file}} if ca_file else {}
        self.client = HTTPClient(parts.hostname, parts.port or (443 if ca_file else 80), headers=headers,
                                 connection_timeout=timeout, network_timeout=timeout, concurrency=1, **secure)
        self.origin = f"{parts.scheme}://{parts.netloc}"

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        if not url.startswith(self.origin):
            raise ValueError(f"{url} is not on {self.origin}")
        path = url[len(self.origin):] or "/"
        response = self.client.request(method, path, body=body or b"", headers=headers)
        try:
            encoding = response.get("content-encoding") or ""
            return Reply(response.status_code, decode(response.read(), encoding), encoding)
        finally:
            response.release()

    def close(self) -> None:
        self.client.close()


_SHARED = SharedHttp2()  # this process's shared HTTP/2 connections


def load_transport(endpoint: str, timeout: float, compression: str | None = None, http: str | None = None,
                   ca_file: str | None = None, shared: bool = False) -> Transport:
    """The transport of a Locust user: HTTP/1.1 over geventhttpclient (one connection per user;
    cleartext), HTTP/2 over httpx (one connection per user, or with `shared` one per process)."""
    http = check_http(http, ca_file)
    if http == "h1":
        if shared:
            raise ValueError("HTTP/1.1 carries one request at a time on a connection: users share a "
                             "connection over HTTP/2 only (a subject +h2 or +h2c)")
        return GeventTransport(endpoint, timeout, compression, ca_file)
    if shared:
        parts = urlsplit(endpoint)
        return _SHARED.transport(f"{parts.scheme}://{parts.netloc}", timeout, http, ca_file, compression)
    return HttpxTransport(timeout, http, ca_file, compression)
