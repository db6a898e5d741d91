"""The ConformanceService of Connect's conformance suite served by connect-python as the lab's Connect
service is (services/connect/python_connectrpc/app.py): a ConnectWSGIApplication under gunicorn, the same
strict protobuf codec and JSON codec. Unary methods only (Unary, IdempotentUnary, also over GET);
Unimplemented is left unregistered, as the suite expects. What each method answers follows the suite's
own reference server (Apache-2.0), here in connect-python's API."""

from __future__ import annotations

import contextvars
import os
import time
from typing import Any
from urllib.parse import parse_qs

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.server import ConnectWSGIApplication, EndpointSync
from google.protobuf import any_pb2
from protobuf.wkt import Any as WireAny

from services.connect.python_connectrpc.codec import StrictProto
from services.connect.python_connectrpc.conformance.gen import service_pb2 as pb

SERVICE = "connectrpc.conformance.v1.ConformanceService"
QUERY: contextvars.ContextVar[dict[str, list[str]] | None] = contextvars.ContextVar("query", default=None)


class ConformanceApplication(ConnectWSGIApplication):
    @property
    def path(self) -> str:
        return f"/{SERVICE}"


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def _headers(headers: Any) -> list[pb.Header]:
    grouped: dict[str, list[str]] = {}
    for name, value in headers.allitems():
        grouped.setdefault(name, []).append(value)
    return [pb.Header(name=name, value=values) for name, values in grouped.items()]


def _respond(request: Any, ctx: Any) -> pb.ConformancePayload:
    info = pb.ConformancePayload.RequestInfo(request_headers=_headers(ctx.request_headers),
                                              requests=[_pack(request)])
    if ctx.timeout_ms is not None:
        info.timeout_ms = int(ctx.timeout_ms)
    query = QUERY.get()
    if query:
        info.connect_get_info.query_params.extend(pb.Header(name=k, value=v) for k, v in query.items())
    if not request.HasField("response_definition"):
        return pb.ConformancePayload(request_info=info)
    definition = request.response_definition
    for header in definition.response_headers:
        for value in header.value:
            ctx.response_headers.add(header.name, value)
    for trailer in definition.response_trailers:
        for value in trailer.value:
            ctx.response_trailers.add(trailer.name, value)
    try:
        if definition.WhichOneof("response") == "error":
            error = definition.error
            details = [WireAny(type_url=d.type_url, value=d.value) for d in error.details]
            packed = _pack(info)
            details.append(WireAny(type_url=packed.type_url, value=packed.value))
            raise ConnectError(Code(_CODES[error.code]), error.message, details=details)
        return pb.ConformancePayload(request_info=info, data=definition.response_data)
    finally:
        time.sleep(definition.response_delay_ms / 1000)


# The suite's Code enum (its numbers are gRPC's) as connect-python's codes.
_CODES = {number: code.value for number, code in enumerate(
    [None, Code.CANCELED, Code.UNKNOWN, Code.INVALID_ARGUMENT, Code.DEADLINE_EXCEEDED, Code.NOT_FOUND,
     Code.ALREADY_EXISTS, Code.PERMISSION_DENIED, Code.RESOURCE_EXHAUSTED, Code.FAILED_PRECONDITION,
     Code.ABORTED, Code.OUT_OF_RANGE, Code.UNIMPLEMENTED, Code.INTERNAL, Code.UNAVAILABLE, Code.DATA_LOSS,
     Code.UNAUTHENTICATED]) if code is not None}


def _method(name: str, request: type, response: type, idempotency: IdempotencyLevel) -> MethodInfo:
    return MethodInfo(name=name, service_name=SERVICE, input=request, output=response,
                      stream_type=StreamType.UNARY, idempotency_level=idempotency)


def application() -> Any:
    limit = int(os.environ.get("CONFORMANCE_RECEIVE_LIMIT", "0")) or None
    connect = ConformanceApplication(
        endpoints={
            f"/{SERVICE}/Unary": EndpointSync.unary(
                method=_method("Unary", pb.UnaryRequest, pb.UnaryResponse, IdempotencyLevel.UNKNOWN),
                function=lambda r, ctx: pb.UnaryResponse(payload=_respond(r, ctx))),
            f"/{SERVICE}/IdempotentUnary": EndpointSync.unary(
                method=_method("IdempotentUnary", pb.IdempotentUnaryRequest, pb.IdempotentUnaryResponse,
                               IdempotencyLevel.NO_SIDE_EFFECTS),
                function=lambda r, ctx: pb.IdempotentUnaryResponse(payload=_respond(r, ctx))),
        },
        read_max_bytes=limit,
        codecs=[StrictProto(), google_protobuf_json_codec(ignore_unknown_fields=False)])

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        query = parse_qs(environ.get("QUERY_STRING", "")) if environ.get("REQUEST_METHOD") == "GET" else {}
        token = QUERY.set(query)
        try:
            return connect(environ, start_response)
        finally:
            QUERY.reset(token)
    return app


app = application()
