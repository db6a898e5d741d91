"""GraphQL over HTTP (contract/schema.graphql)."""

from clients.protocols import Protocol
from contract.errors import RESOURCE_EXHAUSTED, UNAVAILABLE


def graphql_error(native: object, code: str) -> bool:
    status, extension_code = native  # type: ignore[misc]
    allowed = {RESOURCE_EXHAUSTED: (413,), UNAVAILABLE: (200, 503)}.get(code, (200, 400))
    return extension_code == code and status in allowed


DESCRIPTOR = Protocol(
    name="graphql", order=30, label="GraphQL", client="clients.graphql.client:GraphQLClient",
    endpoint="http://{host}:{port}/graphql", default_port=8000, transport="http",
    payload="http_body",
    payload_source="HTTP body (query + variables / data): http.content_length, or a chunked body's http.chunk_size",
    client_packages=("requests", "urllib3", "httpx", "h2"), native_error=graphql_error,
    error_spelling="errors[].extensions.code = the contract code, HTTP 200/400 "
                   "(413 when too large, 503 allowed when unavailable)",
    fuzzer="clients.graphql.fuzz:fuzzer", load_client="clients.graphql.load:connect",
    crosscheck="crosscheck",
    crosscheck_plan="clients.graphql.client:wire_plan", codegen="clients.graphql.codegen:write")
