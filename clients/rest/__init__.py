"""REST over HTTP/1.1 (contract/openapi.yaml)."""

from clients.protocols import Protocol
from contract.errors import HTTP_STATUS


def http_status(native: object, code: str) -> bool:
    return native == HTTP_STATUS[code]


DESCRIPTOR = Protocol(
    name="rest", order=10, label="REST", client="clients.rest.client:RestClient",
    endpoint="http://{host}:{port}", default_port=8000, transport="http", payload="http_body",
    payload_source="HTTP body: http.content_length, or a chunked body's http.chunk_size",
    client_packages=("requests", "urllib3", "httpx", "h2"), native_error=http_status,
    error_spelling="the HTTP status of the contract's error table",
    fuzzer="clients.rest.fuzz:fuzzer", load_client="clients.rest.load:connect", crosscheck="crosscheck",
    crosscheck_plan="clients.rest.client:wire_plan")
