"""HTTP transports for the clients that speak HTTP (REST, GraphQL, SOAP).

A client builds its request (method, URL, headers, body) and reads its reply
(status, body); the transport only carries them. Over HTTP/1.1 the latency
suite's clients use one kept-alive requests.Session; the load instrument's Locust
processes run the same clients over geventhttpclient (clients/cooperative.py), so both
send the same request line, headers and body.

Over HTTP/2 (lab/axes.py, axis http: a subject's client option `http`, "h2" or "h2c")
the transport is httpx with h2 (HttpxTransport): "h2" over TLS, ALPN offering h2 and
http/1.1 as a browser does, "h2c" cleartext with prior knowledge (the connection preface
first, RFC 9113 3.3). Every answer's HTTP version is checked: an answer that did not
come in HTTP/2 raises NotHttp2, never passes as a silent fallback to HTTP/1.1.

"h1tls" is HTTP/1.1 over TLS on that same httpx client (ALPN offering http/1.1 alone), to the
h2 subject's own server process (lab/axes.py): the reference an h2 subject is divided by with
the client library the same; every answer checked to be HTTP/1.1 chosen by ALPN.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any, NamedTuple, Protocol

import httpx
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


# The HTTP versions of the lab's axis (lab/axes.py, axis http) and what each means to a client:
# h1 on requests; h1tls (HTTP/1.1 over TLS), h2 and h2c on httpx (HttpxTransport).
HTTP_VERSIONS = ("h1", "h1tls", "h2", "h2c")
ON_HTTPX = ("h1tls", "h2", "h2c")


class WrongHttpVersion(ConnectionError):
    """A subject answered in another HTTP version than its `http` names: the lab's client
    refuses it rather than measure the other."""


class NotHttp2(WrongHttpVersion):
    """An HTTP/2 subject answered in another HTTP version (ALPN chose http/1.1, or an h2c
    port answered HTTP/1.1): the lab's client refuses it rather than measure the other."""


def check_http(http: str | None, ca_file: str | None) -> str:
    """`http` (the client option) checked against the TLS it is given: "h1" for None."""
    http = http or "h1"
    if http not in HTTP_VERSIONS:
        raise ValueError(f"http {http!r}: expected one of {', '.join(HTTP_VERSIONS)}")
    if http in ("h2", "h1tls") and not ca_file:
        raise ValueError(f"http {http!r} is over TLS: give the CA to verify (ca_file)")
    if http == "h2c" and ca_file:
        raise ValueError("http 'h2c' is cleartext HTTP/2: no ca_file")
    return http


def request_headers(compression: str | None) -> dict[str, str]:
    """The headers requests sends on every request (User-Agent, Accept-Encoding, Accept), with
    the Accept-Encoding `compression` asks for; without Connection, which HTTP/2 forbids
    (RFC 9113 8.2.2): so that an HTTP/2 request carries what the HTTP/1.1 one does."""
    headers = {k: v for k, v in requests.utils.default_headers().items() if k.lower() != "connection"}
    asked = accept_encoding(compression)
    if asked is not None:
        headers["Accept-Encoding"] = asked
    return headers


def http2_client(http: str, timeout: float | httpx.Timeout, ca_file: str | None = None,
                 headers: dict[str, str] | None = None, **limits: Any) -> httpx.Client:
    """An httpx client that speaks as `http` says: "h2" over TLS verifying `ca_file` alone
    (ALPN offers h2 and http/1.1), "h2c" with prior knowledge (HTTP/1.1 off), "h1tls" HTTP/1.1
    over TLS verifying `ca_file` alone (HTTP/2 off: ALPN offers http/1.1 alone). The environment's
    proxies and CA bundles are not read (the lab's services are its own). `limits`: httpx.Limits'."""
    if http not in ON_HTTPX:
        raise ValueError(f"http {http!r}: the lab's httpx client is one of {', '.join(ON_HTTPX)}")
    # ssl.create_default_context reads SSLKEYLOGFILE: the capture's key log (capture/wire.py).
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
    return httpx.Client(http1=(http != "h2c"), http2=(http != "h1tls"), verify=verify, timeout=timeout,
                        headers=headers, trust_env=False, limits=httpx.Limits(**limits) if limits else httpx.Limits())


def negotiated(response: httpx.Response) -> tuple[str, str | None]:
    """(its HTTP version, the ALPN protocol of its TLS connection or None in cleartext)."""
    stream = response.extensions.get("network_stream")
    tls = stream.get_extra_info("ssl_object") if stream is not None else None
    return response.http_version, tls.selected_alpn_protocol() if tls is not None else None


def require_http2(response: httpx.Response, http: str) -> None:
    """Raises NotHttp2 unless `response` came in HTTP/2 (over TLS: h2 chosen by ALPN); for "h1tls",
    WrongHttpVersion unless it came in HTTP/1.1 with http/1.1 chosen by ALPN."""
    version, alpn = negotiated(response)
    if http == "h1tls":
        if version != "HTTP/1.1" or alpn != "http/1.1":
            raise WrongHttpVersion(f"an h1tls subject answered in {version} (ALPN chose {alpn!r}) at "
                                   f"{response.request.url}: expected HTTP/1.1 chosen by ALPN")
        return
    if version != "HTTP/2" or (http == "h2" and alpn != "h2"):
        raise NotHttp2(f"an {http} subject answered in {version}" + (f" (ALPN chose {alpn!r})" if alpn else "")
                       + f" at {response.request.url}: the lab's client does not fall back to HTTP/1.1")


class HttpxTransport:
    """HTTP/2 (h2 over TLS by ALPN, or h2c with prior knowledge) on one httpx client: one
    connection, kept, each call a stream on it; every answer checked to be HTTP/2 (require_http2).
    "h1tls": HTTP/1.1 over TLS on the same client, one kept-alive connection, checked the same way.
    `client`: an httpx client to share (the load instrument's users share one connection:
    clients/<protocol>/load.py); closed here only when this transport made it."""

    def __init__(self, timeout: float, http: str, ca_file: str | None = None, compression: str | None = None,
                 client: httpx.Client | None = None):
        self.http = check_http(http, ca_file)
        self.timeout = timeout
        self.owned = client is None
        self.client = client or http2_client(self.http, timeout, ca_file, request_headers(compression))
        self.last: tuple[str, str | None] | None = None  # the last answer's (version, ALPN)

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        response = self.client.request(method, url, content=body, headers=headers or None)
        self.last = negotiated(response)
        require_http2(response, self.http)
        return Reply(response.status_code, response.content, response.headers.get("content-encoding", ""))

    def close(self) -> None:
        if self.owned:
            self.client.close()


def transport(timeout: float, http: str | None = None, ca_file: str | None = None,
              compression: str | None = None) -> Transport:
    """The lab's transport for a client of the HTTP version `http` (None or "h1": requests, as
    every client always had; "h2" or "h2c": httpx with h2; "h1tls": httpx in HTTP/1.1 over TLS)."""
    if check_http(http, ca_file) == "h1":
        return RequestsTransport(timeout, ca_file, compression)
    return HttpxTransport(timeout, http or "h1", ca_file, compression)


class SharedHttp2:
    """One HTTP/2 connection per process and target for every client that asks for it (the load
    instrument's users, each its own stream on it), closed when the last client closes.

    For greenlets (a Locust process, gevent-patched), not OS threads: httpcore 1.0's sync HTTP/2
    connection reads the next stream id and sends that stream's HEADERS as two steps, which two
    threads can interleave (two streams on one id: the server ends the connection with
    PROTOCOL_ERROR; httpx issue 908), while a greenlet runs both without yielding (no I/O between)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clients: dict[tuple[Any, ...], list[Any]] = {}

    def transport(self, origin: str, timeout: float, http: str, ca_file: str | None = None,
                  compression: str | None = None) -> HttpxTransport:
        key = (origin, timeout, http, ca_file, compression)
        with self.lock:
            entry = self.clients.get(key)
            if entry is None:
                client = http2_client(check_http(http, ca_file), timeout, ca_file, request_headers(compression),
                                      max_connections=1, max_keepalive_connections=1)
                entry = self.clients[key] = [client, 0]
            entry[1] += 1
        return _SharedTransport(self, key, timeout, http, ca_file, compression, client=entry[0])

    def release(self, key: tuple[Any, ...]) -> None:
        with self.lock:
            entry = self.clients.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self.clients[key]
                entry[0].close()


class _SharedTransport(HttpxTransport):
    def __init__(self, pool: SharedHttp2, key: tuple[Any, ...], *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.pool, self.key, self.released = pool, key, False

    def close(self) -> None:
        if not self.released:
            self.released = True
            self.pool.release(self.key)
