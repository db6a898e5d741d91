"""REST over HTTP/1.1: Flask, served by gunicorn (see manifest.toml)."""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException, UnsupportedMediaType

from contract.codec import dumpb, loads
from contract.errors import (
    CODE_OF_HTTP_STATUS,
    HTTP_STATUS,
    INTERNAL,
    INVALID_ARGUMENT,
    ContractError,
    InvalidArgument,
)
from contract.game import DEFAULT_LIST_LIMIT, check_response_size, check_uri_size
from services.common import gunicorn_errors
from services.common.http_body import read_body, request_target_bytes
from services.common.http_compression import gzip_replies
from services.common.store import Store

app = Flask(__name__)
app.wsgi_app = gzip_replies(app.wsgi_app)  # type: ignore[method-assign]  # LAB_COMPRESSION (lab/axes.py)
store = Store()


def _json(body: Any, status: int = 200, **headers: str) -> Response:
    data = dumpb(body)
    check_response_size(len(data))
    return Response(data, status=status, mimetype="application/json", headers=headers)


def _error(code: str, message: str, status: int | None = None) -> Response:
    return _json({"error": {"code": code, "message": message}}, status or HTTP_STATUS[code])


gunicorn_errors.install(lambda code, message: (
    "application/json", dumpb({"error": {"code": code, "message": message}})))


def _body() -> Any:
    body = read_body(request)  # read whole first: the connection stays usable
    if request.mimetype != "application/json":
        raise UnsupportedMediaType(
            f"the body must be application/json, not {request.mimetype or 'untyped'!r}")
    try:
        return loads(body)
    except ValueError as exc:
        raise InvalidArgument(f"malformed JSON body: {exc}") from None


def _int_arg(name: str, default: int) -> int:
    values = request.args.getlist(name)
    if not values:
        return default
    if len(values) > 1:  # which one counts is not for a server to guess
        raise InvalidArgument(f"query parameter {name!r} given {len(values)} times: at most once")
    raw = values[0]
    # ASCII digits only: str.isdigit() also takes "²" (which int() refuses: a
    # 500) and "５"; and at most 19 of them, so int() never meets a huge string.
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19):
        raise InvalidArgument(f"query parameter {name!r} must be a non-negative integer "
                              "(at most 19 ASCII digits)")
    return int(raw)


@app.before_request
def uri_limit() -> Response | None:
    """A request target over max_uri_bytes is the contract's 414 (gunicorn's own
    limit on the request line, raised to its maximum, lies above it)."""
    try:
        check_uri_size(request_target_bytes(request.environ))
    except ContractError as exc:
        return _error(exc.code, exc.message, 414)
    return None


@app.errorhandler(ContractError)
def contract_error(exc: ContractError) -> Response:
    return _error(exc.code, exc.message)


@app.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    code = CODE_OF_HTTP_STATUS.get(status, INVALID_ARGUMENT if status < 500 else INTERNAL)
    response = _error(code, exc.description or "", status)
    # werkzeug's own headers, e.g. the Allow of a 405 (RFC 9110 requires it)
    for name, value in exc.get_headers():
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


@app.get("/health")
def health() -> Response:
    store.health()
    return _json({"status": "ok"})


@app.post("/games")
def create_game() -> Response:
    game = store.create(_body())
    return _json(game, 201, Location=f"/games/{game['id']}")


@app.get("/games")
def list_games() -> Response:
    return _json(store.list(_int_arg("limit", DEFAULT_LIST_LIMIT), _int_arg("offset", 0)))


@app.get("/games/<game_id>")
def get_game(game_id: str) -> Response:
    return _json(store.get(game_id))


@app.put("/games/<game_id>")
def update_game(game_id: str) -> Response:
    return _json(store.update(game_id, _body()))


@app.delete("/games/<game_id>")
def delete_game(game_id: str) -> Response:
    store.delete(game_id)
    return Response(status=204)
