"""One client per protocol, one interface (clients.base.GameClient)."""

from __future__ import annotations

from clients.base import GameClient
from clients.direct import DirectClient
from clients.graphql import GraphQLClient
from clients.grpc import GrpcClient
from clients.rest import RestClient
from clients.soap import SoapClient
from clients.sse import SseClient
from clients.ws import WebSocketClient

CLIENTS: dict[str, type] = {
    "rest": RestClient, "grpc": GrpcClient, "graphql": GraphQLClient, "ws": WebSocketClient,
    "soap": SoapClient, "sse": SseClient, "direct": DirectClient,
}


def connect(protocol: str, endpoint: str) -> GameClient:
    try:
        return CLIENTS[protocol](endpoint)
    except KeyError:
        raise ValueError(f"no client for protocol {protocol!r}") from None


def check_health(protocol: str, endpoint: str) -> None:
    """Connect, make one health call (it reaches the database), close; raises if not healthy."""
    client = connect(protocol, endpoint)
    try:
        client.health()
    finally:
        client.close()
