"""SOAP 1.1 over HTTP/1.1: spyne (document/literal wrapped, contract/games.wsdl),
served by gunicorn like the other HTTP services (see manifest.toml).

Types follow contract/contract.json; the store validates as for every other
protocol. Errors are SOAP Faults: faultcode Client (the request's fault) or
Server, faultstring the message, and the contract's code in
<detail><code>...</code></detail> (contract/README.md).
"""

from __future__ import annotations

from typing import Any

from spyne import Application, Array, Boolean, ComplexModel, Fault, Integer, Iterable, ServiceBase, Unicode, rpc
from spyne.protocol.soap import Soap11
from spyne.server.wsgi import WsgiApplication

from contract.errors import CONTRACT, ERRORS, INTERNAL, ContractError, InvalidArgument, ResourceExhausted
from contract.game import DEFAULT_LIST_LIMIT, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, check_size, check_uri_size
from services.common import gunicorn_errors
from services.common.http_body import request_target_bytes
from services.common.http_compression import gzip_replies
from services.common.store import Store

NAMESPACE = "urn:protolab:games"
store = Store()


def _required(kind: Any) -> Any:
    return kind.customize(min_occurs=1, max_occurs=1, nillable=False)


class LanguageDetail(ComplexModel):
    __namespace__ = NAMESPACE
    _type_info = [(name, _required(Unicode if kind == "string" else Boolean))
                  for name, kind in CONTRACT["language_detail_fields"].items()]


_KIND = {
    "string": _required(Unicode),
    "bool": _required(Boolean),
    "bool or null": Boolean.customize(min_occurs=1, max_occurs=1, nillable=True),
    "list of string": _required(Array(Unicode.customize(nillable=False))),
    "list of language detail": _required(Array(LanguageDetail.customize(nillable=False))),
}
FIELD_TYPES = [(name, _KIND[kind]) for name, kind in CONTRACT["fields"].items()]


class GameFields(ComplexModel):
    __namespace__ = NAMESPACE
    __type_name__ = "GameFields"
    _type_info = FIELD_TYPES


class Game(ComplexModel):
    __namespace__ = NAMESPACE
    __type_name__ = "Game"
    _type_info = [("id", _required(Unicode)), *FIELD_TYPES]


def _plain(value: Any) -> Any:
    """A spyne value as the JSON-like value the store validates."""
    if isinstance(value, ComplexModel):
        return {name: _plain(getattr(value, name, None)) for name in type(value)._type_info}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _game_in(game: Any) -> dict[str, Any]:
    if game is None:
        raise InvalidArgument("missing game")
    fields = _plain(game)
    for name, kind in CONTRACT["fields"].items():  # an empty array arrives as None
        if kind.startswith("list") and fields.get(name) is None:
            fields[name] = []
        elif kind == "string" and fields.get(name) is None:
            fields[name] = ""
    return fields


def _game_out(game: dict[str, Any]) -> Game:
    out = dict(game)
    out["language_details"] = [LanguageDetail(**d) for d in game["language_details"]]
    return Game(**out)


class ContractFault(Fault):
    def __init__(self, exc: ContractError):
        faultcode = ERRORS.get(exc.code, ERRORS[INTERNAL])["soap"]["faultcode"]
        super().__init__(faultcode=faultcode, faultstring=exc.message, detail={"code": exc.code})


def _contract(call: Any) -> Any:
    try:
        return call()
    except ContractError as exc:
        raise ContractFault(exc) from None


class Games(ServiceBase):
    @rpc(GameFields.customize(min_occurs=1), _returns=Game, _body_style="wrapped")
    def create(ctx, game):  # noqa: N805 (spyne's signature)
        return _contract(lambda: _game_out(store.create(_game_in(game))))

    @rpc(_required(Unicode), _returns=Game)
    def get(ctx, id):  # noqa: N805, A002
        return _contract(lambda: _game_out(store.get(id)))

    @rpc(Integer(default=DEFAULT_LIST_LIMIT), Integer(default=0), _returns=Iterable(Game))
    def list(ctx, limit, offset):  # noqa: N805
        limit = DEFAULT_LIST_LIMIT if limit is None else limit
        offset = 0 if offset is None else offset
        return _contract(lambda: [_game_out(g) for g in store.list(limit, offset)])

    @rpc(_required(Unicode), GameFields.customize(min_occurs=1), _returns=Game)
    def update(ctx, id, game):  # noqa: N805, A002
        return _contract(lambda: _game_out(store.update(id, _game_in(game))))

    @rpc(_required(Unicode))
    def delete(ctx, id):  # noqa: N805, A002
        _contract(lambda: store.delete(id))

    @rpc()
    def health(ctx):  # noqa: N805
        _contract(store.health)


soap = Application([Games], tns=NAMESPACE, name="Games",
                   in_protocol=Soap11(validator="lxml"), out_protocol=Soap11())


def _check_soap_action(ctx: Any) -> None:
    """The SOAPAction header must name the operation the Body calls: its
    soapAction in games.wsdl, quoted (WS-I Basic Profile R2744; unquoted is
    taken too). Another, or none, is the client's fault: an action that says
    "delete" over a Body that says "get" is not guessed at."""
    action = (ctx.transport.req_env.get("HTTP_SOAPACTION") or "").strip()
    operation = (ctx.method_request_string or "").rsplit("}", 1)[-1]
    if action.strip('"') != operation:
        raise ContractFault(InvalidArgument(
            f"SOAPAction {action or 'missing'!r} does not name the operation called, {operation!r} "
            f'(expected SOAPAction: "{operation}")'))


soap.event_manager.add_listener("method_call", _check_soap_action)
wsgi = WsgiApplication(soap, max_content_length=MAX_REQUEST_BYTES)


def _app(environ: dict[str, Any], start_response: Any) -> Any:
    """The spyne WSGI app behind the contract's request limit (a Client fault
    with RESOURCE_EXHAUSTED, after reading the body so the connection stays usable;
    likewise a request target over max_uri_bytes)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length > MAX_REQUEST_BYTES:
        stream = environ["wsgi.input"]
        left = min(length, 16 * MAX_REQUEST_BYTES)
        while left > 0 and (chunk := stream.read(min(65536, left))):
            left -= len(chunk)
    try:
        check_uri_size(request_target_bytes(environ))
        check_size(length)
    except ContractError as exc:
        return _fault(start_response, "Client", exc.message, exc.code)
    try:
        return _within_response_limit(environ, start_response)
    except Exception as exc:
        # spyne 2.14 fails on some envelopes (no Body child, undecodable bytes)
        # before it answers: the request's fault, said as the contract's.
        return _fault(start_response, "Client", f"malformed SOAP request: {exc!r}", "INVALID_ARGUMENT")


app = gzip_replies(_app)  # LAB_COMPRESSION (lab/axes.py, axis `compression`)


def _within_response_limit(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """spyne's answer, or a Client fault with RESOURCE_EXHAUSTED when it would
    exceed max_response_bytes (a page of large games): counted as spyne yields
    it, given up at the first byte over."""
    answer: list[Any] = []

    def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer[:] = [status, headers]
        return lambda data: None  # spyne never calls write()

    chunks, size = [], 0
    result = wsgi(environ, capture)
    try:
        for chunk in result:
            size += len(chunk)
            chunks.append(chunk)
            if size > MAX_RESPONSE_BYTES:
                exc = ResourceExhausted(f"the answer exceeds the limit of {MAX_RESPONSE_BYTES} bytes: "
                                        "ask for fewer games")
                return _fault(start_response, "Client", exc.message, exc.code)
    finally:
        getattr(result, "close", lambda: None)()
    start_response(*answer)
    return chunks


def _fault(start_response: Any, faultcode: str, message: str, code: str) -> list[bytes]:
    body = _fault_xml(faultcode, message, code)
    start_response("500 Internal Server Error", [("Content-Type", "text/xml; charset=utf-8"),
                                                 ("Content-Length", str(len(body)))])
    return [body]


def _fault_xml(faultcode: str, message: str, code: str) -> bytes:
    from xml.sax.saxutils import escape
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            '<soap11env:Envelope xmlns:soap11env="http://schemas.xmlsoap.org/soap/envelope/">'
            f'<soap11env:Body><soap11env:Fault><faultcode>soap11env:{faultcode}</faultcode>'
            f'<faultstring>{escape(message)}</faultstring><detail><code>{code}</code></detail>'
            '</soap11env:Fault></soap11env:Body></soap11env:Envelope>').encode()


# gunicorn's own refusals (a request line past its limit, ...) as a Client
# Fault, with SOAP 1.1's status for every Fault.
gunicorn_errors.install(lambda code, message: (
    "text/xml; charset=utf-8", _fault_xml(ERRORS[code]["soap"]["faultcode"], message, code)),
    status=(500, "Internal Server Error"))
