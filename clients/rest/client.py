"""REST over HTTP/1.1 with one keep-alive requests.Session."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import requests

from clients.base import CALL_TIMEOUT, Game
from contract.codec import dumpb, loads
from contract.errors import CODE_OF_HTTP_STATUS, INTERNAL, ContractError, error_for

JSON = {"Content-Type": "application/json"}


class RestClient:
    protocol = "rest"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT):
        self.base = endpoint.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()

    def _call(self, method: str, path: str, body: bytes | None = None,
              params: dict[str, int] | None = None) -> Any:
        response = self.session.request(
            method, self.base + path, data=body, params=params,
            headers=JSON if body is not None else None, timeout=self.timeout)
        if response.status_code >= 400:
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
        self.session.close()


def _error(response: requests.Response) -> ContractError:
    try:
        error = loads(response.content)["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        code = CODE_OF_HTTP_STATUS.get(response.status_code, INTERNAL)
        message = response.text[:200]
    return error_for(code, message, native=response.status_code)
