"""Server-Sent Events: push-only feeds over HTTP (contract/push.md)."""

from clients.protocols import Protocol, PushWay
from clients.rest import http_status

DESCRIPTOR = Protocol(
    name="sse", order=70, label="SSE", client="clients.sse.client:SseClient",
    endpoint="http://{host}:{port}", default_port=8000, transport="http", payload="http_body",
    payload_source="HTTP body: http.content_length, or a chunked body's http.chunk_size (an event stream's "
                   "chunks as tshark reassembles them)",
    client_packages=("httpx", "h2"), native_error=http_status,
    error_spelling="the HTTP status of the contract's error table (contract/push.md)",
    fuzzer="clients.sse.fuzz:fuzzer",
    no_load="push-only: no request/response operation to load; the push scenarios "
            "(python -m studies push) drive its feeds with the lab's Go push client",
    no_crosscheck="push-only: the push scenarios measure it with the lab's Go push client",
    push=(PushWay("sse-h1", "SSE, HTTP/1.1", "SSE h1", mode="sse", capture_label="HTTP/1.1",
                  framing="SSE over HTTP/1.1: a message's `id:`/`event:`/`data:` lines in a chunk "
                          "(hex length and CRLFs)"),
          PushWay("sse-h2c", "SSE, HTTP/2 (h2c)", "SSE h2c", mode="sse", h2=True, capture_label="HTTP/2 (h2c)",
                  client_options={"http2": True},
                  framing="SSE over HTTP/2 (h2c): those `id:`/`event:`/`data:` lines in DATA frames "
                          "(9-byte header each)"),
          # Timeplus's browser tab: HTTP/2 over TLS, on the http axis' h2 subject (its service over TLS 1.3);
          # the push capture does not decrypt it
          PushWay("sse-h2", "SSE, HTTP/2 over TLS 1.3 (h2)", "SSE h2", mode="sse", h2=True, variant="h2",
                  framing="SSE over HTTP/2 over TLS 1.3: DATA frames in TLS records",
                  note="HTTP/2 chosen by ALPN on the service's h2 variant, the lab's CA verified; one connection "
                       "shared by every subscription"),
          # Pathan's REST loop: not a stream, so not in every push scenario, and not captured
          PushWay("poll", "HTTP polling (HTTP/1.1)", "polling", mode="poll", default=False,
                  note="GET /events?feed=synthetic&count=1&rate=0 on the SSE service, HTTP/1.1 kept alive, "
                       "one request outstanding per client")))
