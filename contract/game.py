"""The Game resource: its 29 dataset fields, their types, and validation.

Fields, types and limits are data, in contract/contract.json, which the
services of every language read; types are those of data/steam/README.md.
Validation is strict (every field present, exact JSON types, no unknown
fields) because it is also what keeps a MongoDB operator such as
{"$ne": null} out of every query and document.
"""

from __future__ import annotations

import re
from typing import Any

from contract.errors import CONTRACT, InvalidArgument, ResourceExhausted

STR, STR_LIST, BOOL, NULLABLE_BOOL, LANGUAGE_DETAILS = (
    "string", "list of string", "bool", "bool or null", "list of language detail",
)

# Field order is the dataset's most common key order (JSON objects keep it).
FIELDS: dict[str, str] = CONTRACT["fields"]
LANGUAGE_DETAIL_FIELDS: dict[str, str] = CONTRACT["language_detail_fields"]

# Seeded games use the Steam appid; created games get a 24-hex-digit ObjectId.
ID_PATTERN: str = CONTRACT["id_pattern"]
_ID_RE = re.compile(ID_PATTERN)
APPID_RE = re.compile(r"^https://store\.steampowered\.com/app/(\d+)/?$")

# The largest game in the dataset encodes to ~10 KB; 64 KiB leaves room and
# bounds what a request can make a server parse.
LIMITS: dict[str, int] = CONTRACT["limits"]
MAX_REQUEST_BYTES = LIMITS["max_request_bytes"]
MAX_LIST_LIMIT = LIMITS["max_list_limit"]
DEFAULT_LIST_LIMIT = LIMITS["default_list_limit"]
MAX_OFFSET = LIMITS["max_offset"]
# The largest answer a service sends: gRPC clients refuse more than 4 MiB by
# default. A page of the dataset's 1,000 largest games is ~2.5 MB of JSON;
# created games of up to 64 KiB each could make a page of 64 MB.
MAX_RESPONSE_BYTES = LIMITS["max_response_bytes"]
# The longest HTTP request target (path and query) the HTTP services take,
# under every server's own limit (gunicorn's request line, raised to its
# maximum of 8190 bytes; Node.js's 16 KiB of headers; Go's 1 MiB), so that the
# contract's 414 is what a client meets first.
MAX_URI_BYTES = LIMITS["max_uri_bytes"]


def appid_of(game: dict[str, Any]) -> str:
    match = APPID_RE.match(game["link"])
    if not match:
        raise ValueError(f"no appid in link {game['link']!r}")
    return match.group(1)


def check_id(game_id: Any) -> str:
    if type(game_id) is not str or not _ID_RE.fullmatch(game_id):
        raise InvalidArgument(
            f"invalid id {game_id!r}: expected 1-12 digits or 24 hex digits"
        )
    return game_id


def check_page(limit: Any, offset: Any) -> tuple[int, int]:
    if type(limit) is not int or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidArgument(f"invalid limit {limit!r}: expected an integer 1..{MAX_LIST_LIMIT}")
    if type(offset) is not int or not 0 <= offset <= MAX_OFFSET:
        raise InvalidArgument(f"invalid offset {offset!r}: expected an integer 0..{MAX_OFFSET}")
    return limit, offset


def check_size(size: int) -> None:
    if size > MAX_REQUEST_BYTES:
        raise ResourceExhausted(f"request of {size} bytes exceeds the limit of {MAX_REQUEST_BYTES}")


def check_uri_size(size: int) -> None:
    if size > MAX_URI_BYTES:
        raise ResourceExhausted(f"request target of {size} bytes exceeds the limit of {MAX_URI_BYTES}")


def check_response_size(size: int) -> None:
    if size > MAX_RESPONSE_BYTES:
        raise ResourceExhausted(f"the answer would be {size} bytes, over the limit of {MAX_RESPONSE_BYTES}: "
                                "ask for fewer games")


def _check_value(path: str, kind: str, value: Any) -> None:
    ok = {
        STR: lambda v: type(v) is str,
        BOOL: lambda v: type(v) is bool,
        NULLABLE_BOOL: lambda v: v is None or type(v) is bool,
        STR_LIST: lambda v: type(v) is list and all(type(x) is str for x in v),
        LANGUAGE_DETAILS: lambda v: type(v) is list,
    }[kind](value)
    if not ok:
        raise InvalidArgument(f"field {path!r} must be a {kind}, got {type(value).__name__}")
    if kind == LANGUAGE_DETAILS:
        for i, item in enumerate(value):
            _check_object(f"{path}[{i}]", LANGUAGE_DETAIL_FIELDS, item)


def _check_object(path: str, fields: dict[str, str], obj: Any) -> None:
    if type(obj) is not dict:
        raise InvalidArgument(f"{path or 'game'} must be an object, got {type(obj).__name__}")
    unknown = [k for k in obj if k not in fields]
    if unknown:
        raise InvalidArgument(f"unknown field {unknown[0]!r} in {path or 'game'}")
    missing = [k for k in fields if k not in obj]
    if missing:
        raise InvalidArgument(f"missing field {missing[0]!r} in {path or 'game'}")
    for key, kind in fields.items():
        _check_value(f"{path}.{key}" if path else key, kind, obj[key])


def check_game(game: Any) -> dict[str, Any]:
    """Return the game with its fields in contract order, or raise InvalidArgument."""
    _check_object("", FIELDS, game)
    return {key: game[key] for key in FIELDS}
