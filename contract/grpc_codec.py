"""Game documents <-> protobuf messages, shared by the gRPC server and client.

is_kernel_ac is the one nullable field: proto3 `optional` carries its
presence, so null survives the round trip.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from contract import games_pb2 as pb
from contract.game import FIELDS, LANGUAGE_DETAIL_FIELDS, LANGUAGE_DETAILS, NULLABLE_BOOL, STR_LIST


def game_to_message(game: dict[str, Any], game_id: str = "") -> pb.Game:
    message = pb.Game(id=game_id)
    for name, kind in FIELDS.items():
        value = game[name]
        if kind == LANGUAGE_DETAILS:
            message.language_details.extend(pb.LanguageDetail(**d) for d in value)
        elif kind == STR_LIST:
            getattr(message, name).extend(value)
        elif kind == NULLABLE_BOOL:
            if value is not None:
                setattr(message, name, value)
        else:
            setattr(message, name, value)
    return message


def message_to_game(message: pb.Game) -> dict[str, Any]:
    """The game's fields (without id) as plain JSON values."""
    game: dict[str, Any] = {}
    for name, kind in FIELDS.items():
        if kind == LANGUAGE_DETAILS:
            game[name] = [{k: getattr(d, k) for k in LANGUAGE_DETAIL_FIELDS}
                          for d in message.language_details]
        elif kind == STR_LIST:
            game[name] = list(getattr(message, name))
        elif kind == NULLABLE_BOOL:
            game[name] = getattr(message, name) if message.HasField(name) else None
        else:
            game[name] = getattr(message, name)
    return game


def message_to_document(message: pb.Game) -> dict[str, Any]:
    return {"id": message.id, **message_to_game(message)}


def unknown_field_numbers(message: Message) -> list[int]:
    """Field numbers the schema does not know, in the message or any nested
    one. A field sent with the wrong wire type lands here too, which is how
    a wrong type shows up in protobuf."""
    numbers = [field.field_number for field in UnknownFieldSet(message)]
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        items = value if descriptor.is_repeated else [value]
        for item in items:
            numbers.extend(unknown_field_numbers(item))
    return numbers
