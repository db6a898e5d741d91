"""GraphQL over HTTP: graphene executed from a Flask view, served by gunicorn.

POST /graphql with {"query", "variables", "operationName"}. Execution errors
answer 200 with `errors`; a request that cannot be parsed, validated or
coerced answers 400; an oversize one 413. Every error carries
extensions.code from the contract's table.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from contract.codec import dumps, loads
from contract.errors import CODE_OF_HTTP_STATUS, HTTP_STATUS, INVALID_ARGUMENT, ContractError
from services.common.http_body import read_body
from services.common.store import Store
from services.graphql.python_graphene.schema import schema

app = Flask(__name__)
store = Store()


def _respond(body: dict[str, Any], status: int) -> Response:
    return Response(dumps(body), status=status, mimetype="application/json")


def _fail(code: str, message: str, status: int | None = None) -> Response:
    return _respond({"errors": [{"message": message, "extensions": {"code": code}}]},
                    status or HTTP_STATUS[code])


@app.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    return _fail(CODE_OF_HTTP_STATUS.get(status, INVALID_ARGUMENT), exc.description or "", status)


@app.post("/graphql")
def graphql() -> Response:
    try:
        body = loads(read_body(request))
    except ContractError as exc:
        return _fail(exc.code, exc.message)
    except ValueError as exc:
        return _fail(INVALID_ARGUMENT, f"malformed JSON body: {exc}")
    if type(body) is not dict or type(body.get("query")) is not str:
        return _fail(INVALID_ARGUMENT, "the body must be an object with a string 'query'")
    variables = body.get("variables") or {}
    if type(variables) is not dict:
        return _fail(INVALID_ARGUMENT, "'variables' must be an object")
    result = schema.execute(
        body["query"], variable_values=variables, operation_name=body.get("operationName"),
        context_value={"store": store},
    )
    errors = []
    for error in result.errors or ():
        formatted = error.formatted
        # Errors without a contract code are graphql-core's own: a query that
        # does not parse, validate or coerce is the caller's invalid argument.
        formatted.setdefault("extensions", {}).setdefault("code", INVALID_ARGUMENT)
        errors.append(formatted)
    payload: dict[str, Any] = {}
    if errors:
        payload["errors"] = errors
    # Errors without a path come before execution (parse, validation,
    # variable coercion): the request was never run, so GraphQL over HTTP
    # answers 400 and no data. Execution errors answer 200 with data.
    executed = not errors or any("path" in e for e in errors)
    if executed:
        payload["data"] = result.data
    return _respond(payload, 200 if executed else 400)


@app.get("/health")
def health() -> Response:
    store.health()
    return _respond({"status": "ok"}, 200)
