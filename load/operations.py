"""What one request of an operation is, per protocol: the bytes the lab's own
clients send (clients/), written into the plan the k6 scripts read, so that
every implementation of a protocol receives the same request and k6 and the
Python clients send the same thing.

Operations: fetch-one, fetch-100 and insert (as benchmarks/: the dataset's
median game, the fetch set's middle game, its first 100), and health (the
smallest call every protocol has: the "tiny get" of the Feathers comparison),
and echo (Fernando & Engel's echo test: ECHO_PAYLOAD back to its sender; the
WebSocket protocol and socket.io only).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from google.protobuf.json_format import MessageToDict

from clients.graphql.client import QUERIES
from contract import games_pb2 as pb
from contract.codec import dumps
from contract.grpc_codec import game_to_message
from lab import dataset
from lab.settings import ROOT

OPERATIONS = ("fetch-one", "fetch-100", "insert", "health", "echo")
PROTO = ROOT / "contract" / "games.proto"
GRPC_SERVICE = "protolab.games.v1.Games"
JSON = {"Content-Type": "application/json"}
# The echo test's payload: the study does not give its message size; the lab
# sends this object, 120 bytes of JSON as a payload (the request ~160 bytes).
ECHO_PAYLOAD = {"text": "x" * 109}


def _call(operation: str) -> tuple[str, dict[str, Any]]:
    """(the contract's op name, its parameters)."""
    if operation == "fetch-one":
        return "get", {"id": dataset.fetch_id()}
    if operation == "fetch-100":
        return "list", {"limit": dataset.FETCH_SET, "offset": 0}
    if operation == "insert":
        return "create", {"game": dataset.median_game()}
    if operation == "health":
        return "health", {}
    if operation == "echo":
        return "echo", {"payload": ECHO_PAYLOAD}
    raise SystemExit(f"unknown operation {operation!r}: expected one of {', '.join(OPERATIONS)}")


def request(protocol: str, endpoint: str, operation: str) -> dict[str, Any]:
    op, params = _call(operation)
    if protocol == "rest":
        base = endpoint.rstrip("/")
        if op == "get":
            return {"method": "GET", "url": f"{base}/games/{quote(params['id'], safe='')}", "body": None}
        if op == "list":
            return {"method": "GET", "url": f"{base}/games?limit={params['limit']}&offset={params['offset']}",
                    "body": None}
        if op == "create":
            return {"method": "POST", "url": f"{base}/games", "body": dumps(params["game"]), "headers": JSON}
        return {"method": "GET", "url": f"{base}/health", "body": None}
    if protocol == "graphql":
        return {"method": "POST", "url": endpoint, "headers": JSON,
                "body": dumps({"query": QUERIES[op], "variables": params})}
    if protocol == "grpc":
        method, message = {
            "get": ("GetGame", lambda: pb.GameId(id=params.get("id", ""))),
            "list": ("ListGames", lambda: pb.ListGamesRequest(**params)),
            "create": ("CreateGame", lambda: game_to_message(params.get("game", {}))),
            "health": ("Health", pb.Empty),
        }[op]
        return {"method": f"{GRPC_SERVICE}/{method}",
                "message": MessageToDict(message(), preserving_proto_field_name=True)}
    if protocol == "soap":
        return {"method": "POST", "url": endpoint, "body": soap_envelope(op, params),
                "headers": {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": f'"{op}"'}}
    if protocol == "ws":
        return {"message": {"op": op, "params": params}}
    if protocol == "socketio":  # the WebSocket transport only (contract/socketio-protocol.md)
        url = endpoint.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        return {"message": {"op": op, "params": params}, "url": f"{url}?EIO=4&transport=websocket"}
    raise SystemExit(f"the load instrument has no k6 script for protocol {protocol!r}")


def soap_envelope(op: str, params: dict[str, Any]) -> str:
    """The SOAP 1.1 envelope the lab's SOAP client (zeep, from contract/games.wsdl) sends for `op`."""
    from lxml import etree

    from clients.soap.client import SoapClient, _game_to
    client = SoapClient("http://127.0.0.1:9/soap")  # builds messages only: never dials
    try:
        args = [_game_to(v) if k == "game" else v for k, v in params.items()]
        return etree.tostring(client.zeep.create_message(client.service, op, *args)).decode()
    finally:
        client.close()


# Protocols whose k6 virtual user holds one connection and exchanges messages on it.
MESSAGING = ("ws", "socketio")
SCRIPTS = {"rest": "http.js", "graphql": "http.js", "soap": "http.js", "grpc": "grpc.js", "ws": "ws.js",
           "socketio": "ws.js"}


def why_not(impl: Any, operation: str) -> str | None:
    """Why the load instrument cannot drive `impl` with `operation` (None: it can)."""
    op, _ = _call(operation)
    if not impl.serves(op):
        return f"it does not serve {op!r} (its manifest's operations; SSE is push-only)"
    if impl.protocol not in SCRIPTS:
        return f"no k6 script for protocol {impl.protocol!r} (load/scripts/)"
    return None


def script(protocol: str) -> str:
    """The k6 script of a protocol (load/scripts/)."""
    return SCRIPTS[protocol]
