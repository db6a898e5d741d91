"""GraphQL in a Locust process: the lab's GraphQLClient over geventhttpclient (clients/cooperative.py)."""

from clients.cooperative import GeventTransport
from clients.graphql.client import GraphQLClient


def connect(endpoint: str, timeout: float, compression: str | None = None) -> GraphQLClient:
    return GraphQLClient(endpoint, timeout, transport=GeventTransport(endpoint, timeout, compression))
