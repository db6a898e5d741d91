"""REST over HTTP/1.1 with one keep-alive requests.Session, or over HTTP/2 (h2, h2c) with httpx (clients/http.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import requests

from clients.base import CALL_TIMEOUT, Game
from clients.http import Reply, Transport
from clients.http import transport as http_transport
from contract.codec import dumpb, loads
from contract.errors import CODE_OF_HTTP_STATUS, INTERNAL, ContractError, error_for

JSON = {"Content-Type": "application/json"}


class RestClient:
    protocol = "rest"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, transport: Transport | None = None,
                 ca_file: str | None = None, compression: str | None = None, http: str | None = None):
        """`ca_file`: the CA a TLS server must chain to (lab/tls.py); `compression` (lab/axes.py):
        what the transport asks the server for (Accept-Encoding); `http` (lab/axes.py, axis http):
        "h2" or "h2c" for HTTP/2 over httpx, every answer checked to be HTTP/2 (clients/http.py)."""
        self.base = endpoint.rstrip("/")
        self.timeout = timeout
        self.transport = transport or http_transport(timeout, http, ca_file, compression)
        self.session = getattr(self.transport, "session", None)  # requests' (tests watch it)

    def _call(self, method: str, path: str, body: bytes | None = None,
              params: dict[str, int] | None = None) -> Any:
        url = self.base + path + ("?" + urlencode(params) if params else "")
        response = self.transport(method, url, body, JSON if body is not None else {})
        if response.status >= 400:
            raise _error(response)
        return loads(response.content) if response.content else None

    @staticmethod
    def _path(game_id: str) -> str:
        return "/games/" + quote(game_id, safe="")

    def create(self, game: Game) -> Game:
        return self._call("POST", "/games", dumpb(game))

    def get(self, game_id: str) -> Game:
        return self._call("GET", self._path(game_id))

    def list(self, limit: int = 100, offset: int = 0) -> list[Game]:
        return self._call("GET", "/games", params={"limit": limit, "offset": offset})

    def update(self, game_id: str, game: Game) -> Game:
        return self._call("PUT", self._path(game_id), dumpb(game))

    def delete(self, game_id: str) -> None:
        self._call("DELETE", self._path(game_id))

    def health(self) -> None:
        self._call("GET", "/health")

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        method, path = {"create": ("POST", "/games"),
                        "update": ("PUT", self._path(game_id))}[op]
        return self._call(method, path, body)

    def close(self) -> None:
        self.transport.close()


def _error(response: Reply) -> ContractError:
    try:
        error = loads(response.content)["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        code = CODE_OF_HTTP_STATUS.get(response.status, INTERNAL)
        message = response.text[:200]
    return error_for(code, message, native=response.status)


def http_plan(session: requests.Session, method: str, url: str, body: bytes | None = None,
              params: dict[str, int] | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The HTTP request as `session` prepares it for sending (URL with its query, every
    header requests adds, body), never sent: a cross-check client's plan (load/crosscheck.py)."""
    prepared = session.prepare_request(requests.Request(method, url, data=body, params=params, headers=headers))
    sent = prepared.body
    return {"method": prepared.method, "url": prepared.url, "headers": dict(prepared.headers),
            "body": sent.decode() if isinstance(sent, bytes) else sent}


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The request RestClient sends for `op` with `params` (as its methods build it)."""
    game_id = params.get("id", "")
    method, path, body, query = {
        "create": lambda: ("POST", "/games", dumpb(params["game"]), None),
        "get": lambda: ("GET", RestClient._path(game_id), None, None),
        "list": lambda: ("GET", "/games", None, {"limit": params.get("limit", 100), "offset": params.get("offset", 0)}),
        "update": lambda: ("PUT", RestClient._path(game_id), dumpb(params["game"]), None),
        "delete": lambda: ("DELETE", RestClient._path(game_id), None, None),
        "health": lambda: ("GET", "/health", None, None),
    }[op]()
    with requests.Session() as session:
        return http_plan(session, method, endpoint.rstrip("/") + path, body, query,
                         JSON if body is not None else None)
