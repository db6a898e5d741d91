"""The GraphQL schema, built with graphene from the contract's field table.

contract/schema.graphql is this schema printed (a test keeps them equal).
Field names are the dataset's, unchanged (no camel-casing).
"""

from __future__ import annotations

from typing import Any

import graphene
from graphql import GraphQLError

from contract.errors import ContractError
from contract.game import (
    BOOL,
    DEFAULT_LIST_LIMIT,
    FIELDS,
    LANGUAGE_DETAIL_FIELDS,
    LANGUAGE_DETAILS,
    NULLABLE_BOOL,
    STR,
    STR_LIST,
)
from services.common.store import Store


def _graphene_type(kind: str, detail_type: Any) -> Any:
    return {
        STR: graphene.String(required=True),
        BOOL: graphene.Boolean(required=True),
        NULLABLE_BOOL: graphene.Boolean(),
        STR_LIST: graphene.List(graphene.NonNull(graphene.String), required=True),
        LANGUAGE_DETAILS: graphene.List(graphene.NonNull(detail_type), required=True),
    }[kind]


def _fields(table: dict[str, str], detail_type: Any = None) -> dict[str, Any]:
    return {name: _graphene_type(kind, detail_type) for name, kind in table.items()}


LanguageDetail = type("LanguageDetail", (graphene.ObjectType,), _fields(LANGUAGE_DETAIL_FIELDS))
LanguageDetailInput = type(
    "LanguageDetailInput", (graphene.InputObjectType,), _fields(LANGUAGE_DETAIL_FIELDS))
Game = type("Game", (graphene.ObjectType,), {
    "id": graphene.ID(required=True), **_fields(FIELDS, LanguageDetail)})
GameInput = type("GameInput", (graphene.InputObjectType,), _fields(FIELDS, LanguageDetailInput))


def _plain(value: Any) -> Any:
    """graphene hands input objects over as dict subclasses; the store wants
    plain JSON values. A field left out of the input stays out, so the store
    reports it as missing (only is_kernel_ac, being nullable, may be omitted
    in GraphQL; the store reads that as null)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _game_input(value: Any) -> dict[str, Any]:
    game = _plain(value)
    game.setdefault("is_kernel_ac", None)
    return game


def _errors(fn: Any) -> Any:
    def resolver(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ContractError as exc:
            raise GraphQLError(exc.message, extensions={"code": exc.code}) from None
    return resolver


def _store(info: Any) -> Store:
    return info.context["store"]


class Query(graphene.ObjectType):
    game = graphene.Field(Game, required=True, id=graphene.ID(required=True))
    games = graphene.List(
        graphene.NonNull(Game), required=True,
        limit=graphene.Int(default_value=DEFAULT_LIST_LIMIT), offset=graphene.Int(default_value=0))
    health = graphene.Boolean(required=True)

    @staticmethod
    @_errors
    def resolve_game(root: Any, info: Any, id: str) -> dict[str, Any]:
        return _store(info).get(id)

    @staticmethod
    @_errors
    def resolve_games(root: Any, info: Any, limit: int, offset: int) -> list[dict[str, Any]]:
        return _store(info).list(limit, offset)

    @staticmethod
    @_errors
    def resolve_health(root: Any, info: Any) -> bool:
        _store(info).health()
        return True


class Mutation(graphene.ObjectType):
    create_game = graphene.Field(Game, required=True, game=GameInput(required=True))
    update_game = graphene.Field(
        Game, required=True, id=graphene.ID(required=True), game=GameInput(required=True))
    delete_game = graphene.Boolean(required=True, id=graphene.ID(required=True))

    @staticmethod
    @_errors
    def resolve_create_game(root: Any, info: Any, game: Any) -> dict[str, Any]:
        return _store(info).create(_game_input(game))

    @staticmethod
    @_errors
    def resolve_update_game(root: Any, info: Any, id: str, game: Any) -> dict[str, Any]:
        return _store(info).update(id, _game_input(game))

    @staticmethod
    @_errors
    def resolve_delete_game(root: Any, info: Any, id: str) -> bool:
        _store(info).delete(id)
        return True


schema = graphene.Schema(query=Query, mutation=Mutation, auto_camelcase=False)
