"""The one client interface every protocol implements.

A client opens its connection once, when it is made, so that a benchmark
times operations, not connection setup. Every failure is raised as the
contract's ContractError (contract.errors) with the protocol's own spelling
in `.native`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Game = dict[str, Any]

# Seconds allowed for every network call of a client, unless its maker passes its own
# (lab/settings.py takes it from here: the clients sit below the lab and import none of it).
CALL_TIMEOUT = 10.0


@dataclass(frozen=True)
class Event:
    """One pushed message of a feed (contract/push.md), from any push protocol."""
    event: str  # the feed's name, "end", "error" or "broadcast"
    data: Any  # its decoded JSON payload
    id: str | None = None
    wire_bytes: int = 0  # its bytes as the protocol frames them (SSE fields; a WebSocket message)


class GameClient(Protocol):
    protocol: str

    def create(self, game: Game) -> Game: ...
    def get(self, game_id: str) -> Game: ...
    def list(self, limit: int = 100, offset: int = 0) -> list[Game]: ...
    def update(self, game_id: str, game: Game) -> Game: ...
    def delete(self, game_id: str) -> None: ...
    def health(self) -> None: ...

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        """Send `body` as the encoded request of `op`, bypassing the client's
        own encoding (for bad-input tests); decode the reply as usual."""
        ...

    def close(self) -> None: ...


class OperationClient:
    """The CRUD methods for protocols whose requests are (operation, named
    parameters) — GraphQL, WebSocket: a subclass supplies _call."""

    def _call(self, op: str, **params: Any) -> Any:
        raise NotImplementedError

    def create(self, game: Game) -> Game:
        return self._call("create", game=game)

    def get(self, game_id: str) -> Game:
        return self._call("get", id=game_id)

    def list(self, limit: int = 100, offset: int = 0) -> list[Game]:
        return self._call("list", limit=limit, offset=offset)

    def update(self, game_id: str, game: Game) -> Game:
        return self._call("update", id=game_id, game=game)

    def delete(self, game_id: str) -> None:
        self._call("delete", id=game_id)

    def health(self) -> None:
        self._call("health")
