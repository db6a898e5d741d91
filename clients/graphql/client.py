"""GraphQL over HTTP: POST with variables, on one keep-alive requests.Session, or over HTTP/2 (h2, h2c) with httpx."""

from __future__ import annotations

from typing import Any

import requests

from clients.base import CALL_TIMEOUT, OperationClient
from clients.http import Transport
from clients.http import transport as http_transport
from clients.rest.client import http_plan
from contract.codec import dumpb, loads
from contract.errors import CODE_OF_HTTP_STATUS, INTERNAL, ContractError, error_for
from contract.game import FIELDS, LANGUAGE_DETAIL_FIELDS, LANGUAGE_DETAILS

# Every field, so a GraphQL fetch moves the same document as the other protocols.
GAME_FIELDS = " ".join(
    ["id"] + [f"{name} {{ {' '.join(LANGUAGE_DETAIL_FIELDS)} }}" if kind == LANGUAGE_DETAILS
              else name for name, kind in FIELDS.items()])

QUERIES = {
    "create": f"mutation($game: GameInput!) {{ create_game(game: $game) {{ {GAME_FIELDS} }} }}",
    "get": f"query($id: ID!) {{ game(id: $id) {{ {GAME_FIELDS} }} }}",
    "list": f"query($limit: Int, $offset: Int) {{ games(limit: $limit, offset: $offset) {{ {GAME_FIELDS} }} }}",
    "update": f"mutation($id: ID!, $game: GameInput!) {{ update_game(id: $id, game: $game) {{ {GAME_FIELDS} }} }}",
    "delete": "mutation($id: ID!) { delete_game(id: $id) }",
    "health": "{ health }",
}
FIELD_OF = {"create": "create_game", "get": "game", "list": "games", "update": "update_game",
            "delete": "delete_game", "health": "health"}
JSON = {"Content-Type": "application/json"}


class GraphQLClient(OperationClient):
    protocol = "graphql"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, transport: Transport | None = None,
                 ca_file: str | None = None, compression: str | None = None, http: str | None = None):
        """`ca_file`: the CA a TLS server must chain to (lab/tls.py); `compression` (lab/axes.py):
        what the transport asks the server for (Accept-Encoding); `http` (lab/axes.py, axis http):
        "h2" or "h2c" for HTTP/2 over httpx, every answer checked to be HTTP/2 (clients/http.py)."""
        self.url = endpoint
        self.timeout = timeout
        self.transport = transport or http_transport(timeout, http, ca_file, compression)
        self.session = getattr(self.transport, "session", None)  # requests' (tests watch it)

    def _post(self, op: str, body: bytes) -> Any:
        response = self.transport("POST", self.url, body, JSON)
        try:
            payload = loads(response.content)
        except ValueError:
            raise error_for(CODE_OF_HTTP_STATUS.get(response.status, INTERNAL),
                            response.text[:200], native=response.status) from None
        if payload.get("errors"):
            raise _error(payload["errors"][0], response.status)
        return payload["data"][FIELD_OF[op]]

    def _call(self, op: str, **variables: Any) -> Any:
        return self._post(op, dumpb({"query": QUERIES[op], "variables": variables}))

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        return self._post(op, body)

    def close(self) -> None:
        self.transport.close()


def _error(error: dict[str, Any], status: int) -> ContractError:
    code = (error.get("extensions") or {}).get("code", INTERNAL)
    return error_for(code, str(error.get("message")), native=(status, code))


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The request GraphQLClient sends for `op` with `params` as its variables."""
    with requests.Session() as session:
        return http_plan(session, "POST", endpoint, dumpb({"query": QUERIES[op], "variables": params}), headers=JSON)
