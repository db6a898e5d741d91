"""Connect RPC in a Locust process (gevent): the lab's ConnectClient, its HTTP carried by one kept-alive
geventhttpclient connection (pyqwest's own transport runs in Rust and would block the gevent hub), given
to connect-python as a pyqwest transport, so the calls are the library's as in the latency suite. gRPC
needs HTTP/2, which geventhttpclient does not speak: the `grpc` wire runs on grpcio made cooperative
(clients/grpc/load.py), against the same server and method paths."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from geventhttpclient import HTTPClient
from pyqwest import Headers, HTTPVersion, SyncRequest, SyncResponse

from clients.connect.client import ConnectClient
from clients.cooperative import decode


class GeventTransport:
    """A pyqwest SyncTransport over one geventhttpclient connection (HTTP/1.1). The compression a client
    asks for is connect-python's headers (Accept-Encoding; grpc-accept-encoding); a gzip reply is decoded
    here, as pyqwest's own transport decodes it."""

    def __init__(self, endpoint: str, timeout: float):
        parts = urlsplit(endpoint)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not an http:// endpoint: {endpoint!r}")
        self.client = HTTPClient(parts.hostname, parts.port or 80, connection_timeout=timeout,
                                 network_timeout=timeout, concurrency=1)
        self.origin = f"{parts.scheme}://{parts.netloc}"

    def execute_sync(self, request: SyncRequest) -> SyncResponse:
        if not request.url.startswith(self.origin):
            raise ValueError(f"{request.url} is not on {self.origin}")
        content = request.content
        body = content if isinstance(content, bytes) else b"".join(bytes(c) for c in (content or ()))
        headers = {k: v for k, v in request.headers.items()}
        response = self.client.request(request.method, request.url[len(self.origin):] or "/", body=body,
                                       headers=headers)
        try:
            encoding = response.get("content-encoding") or ""
            return SyncResponse(status=response.status_code, http_version=HTTPVersion.HTTP1,
                                headers=Headers(list(response.items())),
                                content=decode(response.read(), encoding))
        finally:
            response.release()

    def close(self) -> None:
        self.client.close()


def connect(endpoint: str, timeout: float, compression: str | None = None, wire: str = "connect",
            codec: str = "proto") -> Any:
    if wire == "grpc":
        if codec != "proto":
            raise ValueError("the load instrument's gRPC client (grpcio) speaks protobuf only")
        from clients.grpc.load import connect as grpc_connect

        return grpc_connect(urlsplit(endpoint).netloc, timeout, compression)
    return ConnectClient(endpoint, timeout, compression=compression, wire=wire, codec=codec,
                         transport=GeventTransport(endpoint, timeout))
