"""One client per protocol, one interface (clients.base.GameClient)."""

from __future__ import annotations

from typing import Any

from clients.base import GameClient
from clients.protocols import get as protocol_descriptor


def connect(protocol: str, endpoint: str, **options: Any) -> GameClient:
    """The client of `protocol` (its descriptor in clients/<protocol>/__init__.py), or the
    in-process baseline for "direct"; `options`: its client's own keywords (a push way's,
    e.g. http2=True)."""
    if protocol == "direct":
        from clients.direct.client import DirectClient  # the services' store: pymongo, only when asked for

        return DirectClient(endpoint)  # type: ignore[return-value]
    return protocol_descriptor(protocol).client_class()(endpoint, **options)


def check_health(protocol: str, endpoint: str, **options: Any) -> None:
    """Connect, make one health call (it reaches the database), close; raises if not healthy.
    `options`: its client's keywords (a TLS subject's ca_file)."""
    client = connect(protocol, endpoint, **options)
    try:
        client.health()
    finally:
        client.close()
