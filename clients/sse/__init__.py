"""Server-Sent Events: push-only feeds over HTTP (contract/push.md)."""

from clients.protocols import Protocol
from clients.rest import http_status

DESCRIPTOR = Protocol(
    name="sse", order=70, label="SSE", client="clients.sse.client:SseClient",
    endpoint="http://{host}:{port}", default_port=8000, transport="http", payload="http_body",
    payload_source="HTTP body: http.content_length (an event stream's chunks are not counted)",
    client_packages=("httpx", "h2"), native_error=http_status,
    error_spelling="the HTTP status of the contract's error table (contract/push.md)",
    fuzzer="clients.sse.fuzz:fuzzer",
    no_load="push-only: no request/response operation to load; the push scenarios "
            "(python -m studies push) drive its feeds with the lab's Go push client",
    no_crosscheck="push-only: the push scenarios measure it with the lab's Go push client")
