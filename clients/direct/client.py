"""The baseline: the services' own store, called in-process, straight to MongoDB
with pymongo. What a protocol adds on top of this row is its cost."""

from __future__ import annotations

from typing import Any

from clients.base import Game
from services.common.store import Store


class DirectClient:
    protocol = "direct"

    def __init__(self, uri: str, timeout: float = 0):
        self.store = Store(uri)

    def create(self, game: Game) -> Game:
        return self.store.create(game)

    def get(self, game_id: str) -> Game:
        return self.store.get(game_id)

    def list(self, limit: int = 100, offset: int = 0) -> list[Game]:
        return self.store.list(limit, offset)

    def update(self, game_id: str, game: Game) -> Game:
        return self.store.update(game_id, game)

    def delete(self, game_id: str) -> None:
        self.store.delete(game_id)

    def health(self) -> None:
        self.store.health()

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        raise NotImplementedError("the direct baseline has no wire format")

    def close(self) -> None:
        self.store.close()
