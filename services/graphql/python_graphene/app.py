"""GraphQL over HTTP: graphene executed from a Flask view, served by gunicorn.

As the GraphQL-over-HTTP specification says: POST /graphql with a JSON body
{"query", "variables", "operationName"} (Content-Type application/json,
else 415), or GET /graphql?query=...&variables=<JSON> for queries (a
mutation over GET is 405 with Allow: POST). The reply's media type follows
Accept: application/graphql-response+json when the client asks for it,
else application/json (also when Accept is absent); a client accepting
neither gets 406. Execution errors answer 200 with `errors` and `data`; a
request that cannot be parsed, validated or coerced answers 400 without
`data`; an oversize one 413. Every error carries extensions.code from the
contract's table.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, request
from graphql import OperationType, get_operation_ast, parse
from graphql.error import GraphQLError
from werkzeug.exceptions import HTTPException

from contract.codec import dumpb, loads
from contract.errors import CODE_OF_HTTP_STATUS, HTTP_STATUS, INVALID_ARGUMENT, ContractError
from contract.game import check_response_size, check_uri_size
from services.common import gunicorn_errors
from services.common.http_body import read_body, request_target_bytes
from services.common.http_compression import gzip_replies
from services.common.store import Store
from services.graphql.python_graphene.schema import schema

app = Flask(__name__)
app.wsgi_app = gzip_replies(app.wsgi_app)  # type: ignore[method-assign]  # LAB_COMPRESSION (lab/axes.py)
store = Store()


GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"


def _media_type() -> str | None:
    """The reply's media type by Accept: application/graphql-response+json when
    the client names it (and prefers it at least as much as JSON), else
    application/json (also for no Accept or */*, as legacy clients send);
    none when Accept allows neither."""
    accept = request.accept_mimetypes
    if not request.headers.get("Accept"):
        return JSON
    named = {value for value, _ in accept}
    if GRAPHQL_RESPONSE in named and accept[GRAPHQL_RESPONSE] >= accept[JSON]:
        return GRAPHQL_RESPONSE
    return accept.best_match([JSON, GRAPHQL_RESPONSE])


def _respond(body: dict[str, Any], status: int, **headers: str) -> Response:
    data = dumpb(body)
    try:
        check_response_size(len(data))
    except ContractError as exc:
        return _fail(exc.code, exc.message)
    return Response(data, status=status, mimetype=_media_type() or JSON, headers=headers)


def _fail(code: str, message: str, status: int | None = None, **headers: str) -> Response:
    return _respond({"errors": [{"message": message, "extensions": {"code": code}}]},
                    status or HTTP_STATUS[code], **headers)


# gunicorn's own refusals (a request line past its limit, ...) before a media
# type is negotiated: application/json, which every GraphQL client reads.
gunicorn_errors.install(lambda code, message: (
    JSON, dumpb({"errors": [{"message": message, "extensions": {"code": code}}]})))


@app.before_request
def uri_limit() -> Response | None:
    """A request target over max_uri_bytes (a long GET query) is the contract's 414."""
    try:
        check_uri_size(request_target_bytes(request.environ))
    except ContractError as exc:
        return _fail(exc.code, exc.message, 414)
    return None


@app.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    response = _fail(CODE_OF_HTTP_STATUS.get(status, INVALID_ARGUMENT), exc.description or "", status)
    for name, value in exc.get_headers():  # e.g. the Allow of a 405
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


def _get_params() -> dict[str, Any]:
    """GET: query, operationName and variables (a JSON object) from the query string."""
    params: dict[str, Any] = {"query": request.args.get("query"),
                              "operationName": request.args.get("operationName")}
    if "variables" in request.args:
        try:
            params["variables"] = loads(request.args["variables"])
        except ValueError as exc:
            raise _Refused(INVALID_ARGUMENT, f"malformed JSON in 'variables': {exc}") from None
    return params


def _post_params() -> dict[str, Any]:
    body = read_body(request)  # read whole first: the connection stays usable
    if request.mimetype != JSON:
        raise _Refused(INVALID_ARGUMENT, "a GraphQL POST must have Content-Type application/json, "
                       f"not {request.mimetype or 'none'!r}", 415)
    try:
        return loads(body)
    except ValueError as exc:
        raise _Refused(INVALID_ARGUMENT, f"malformed JSON body: {exc}") from None


class _Refused(Exception):
    def __init__(self, code: str, message: str, status: int | None = None, **headers: str):
        super().__init__(message)
        self.code, self.message, self.status, self.headers = code, message, status, headers


def _refuse_mutation_over_get(query: str, operation_name: Any) -> None:
    try:
        document = parse(query)
    except GraphQLError:
        return  # execution reports the syntax error as usual
    operation = get_operation_ast(document, operation_name if type(operation_name) is str else None)
    if operation is not None and operation.operation != OperationType.QUERY:
        raise _Refused(INVALID_ARGUMENT, f"a {operation.operation.value} needs POST", 405, Allow="POST")


@app.route("/graphql", methods=["GET", "POST"])
def graphql() -> Response:
    if _media_type() is None:
        return _fail(INVALID_ARGUMENT, f"Accept must allow {GRAPHQL_RESPONSE} or {JSON}", 406)
    try:
        body = _get_params() if request.method == "GET" else _post_params()
        if type(body) is not dict or type(body.get("query")) is not str:
            raise _Refused(INVALID_ARGUMENT, "the request must have a string 'query'")
        variables = body.get("variables") or {}
        if type(variables) is not dict:
            raise _Refused(INVALID_ARGUMENT, "'variables' must be an object")
        if type(body.get("operationName")) not in (str, type(None)):
            raise _Refused(INVALID_ARGUMENT, "'operationName' must be a string")
        if request.method == "GET":
            _refuse_mutation_over_get(body["query"], body.get("operationName"))
    except ContractError as exc:
        return _fail(exc.code, exc.message)
    except _Refused as exc:
        return _fail(exc.code, exc.message, exc.status, **exc.headers)
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
