"""GraphQL in a Locust process: the lab's GraphQLClient over geventhttpclient (HTTP/1.1), or over
httpx with h2 for an HTTP/2 subject, its users on one shared connection when asked (clients/cooperative.py)."""

from clients.cooperative import load_transport
from clients.graphql.client import GraphQLClient


def connect(endpoint: str, timeout: float, compression: str | None = None, http: str | None = None,
            ca_file: str | None = None, shared: bool = False) -> GraphQLClient:
    transport = load_transport(endpoint, timeout, compression, http, ca_file, shared)
    return GraphQLClient(endpoint, timeout, transport=transport)
