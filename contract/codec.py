"""The one JSON encoding every JSON-speaking service and client uses, so that
byte counts compare protocols, not encoder settings."""

from __future__ import annotations

import json
from typing import Any


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def dumpb(obj: Any) -> bytes:
    return dumps(obj).encode("utf-8")


def loads(data: str | bytes) -> Any:
    return json.loads(data)
