"""SOAP 1.1: zeep over one kept-alive requests.Session, from the contract's
WSDL (contract/games.wsdl) with the service address set to the endpoint.
A SOAP Fault becomes the contract's error named in its <detail><code>."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import requests
import zeep
from lxml import etree
from zeep.exceptions import Fault, TransportError
from zeep.helpers import serialize_object
from zeep.transports import Transport

import contract
from clients.base import CALL_TIMEOUT, Game
from clients.http import accept_encoding, trust_only
from contract.errors import CODE_OF_HTTP_STATUS, INTERNAL, ContractError, Unavailable, error_for

# The contract's WSDL, printed from the SOAP service (services/soap/python_spyne/wsdl.py).
WSDL = Path(contract.__file__).resolve().parent / "games.wsdl"
SOAP_ENV = "http://schemas.xmlsoap.org/soap/envelope/"
LIST_FIELDS = ("developer", "publisher", "platforms", "languages", "tags")


class _NoDelay(requests.adapters.HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["socket_options"] = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        super().init_poolmanager(*args, **kwargs)


LIST_TIMEOUT_PER = 250  # games per call timeout in a list: 1,000 games wait 4 timeouts


class SoapClient:
    protocol = "soap"

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT, ca_file: str | None = None,
                 compression: str | None = None):
        """`ca_file`: over TLS, the lab's CA (lab/tls.py) in place of the system's; `compression`
        (lab/axes.py): the Accept-Encoding zeep's requests session asks with (it decodes gzip and
        deflate either way)."""
        self.endpoint = endpoint
        self.session = requests.Session()
        self.session.mount("http://", _NoDelay())
        self.session.mount("https://", _NoDelay())
        if ca_file:
            trust_only(self.session, ca_file)
        asked = accept_encoding(compression)
        if asked is not None:
            self.session.headers["Accept-Encoding"] = asked
        transport = Transport(session=self.session, timeout=timeout, operation_timeout=timeout)
        self.zeep = zeep.Client(str(WSDL), transport=transport)
        self.service = self.zeep.create_service("{urn:protolab:games}Games", endpoint)
        self.timeout = timeout

    def _call(self, op: str, *args: Any) -> Any:
        try:
            return getattr(self.service, op)(*args)
        except Fault as fault:
            raise _contract_error(fault.message, fault.code, fault.detail) from None
        except TransportError as exc:
            code = CODE_OF_HTTP_STATUS.get(exc.status_code, INTERNAL)
            raise error_for(code, str(exc), native=exc.status_code) from None
        except requests.RequestException as exc:
            raise Unavailable(f"no answer: {exc}", native=type(exc).__name__) from None

    def create(self, game: Game) -> Game:
        return _game_from(self._call("create", _game_to(game)))

    def get(self, game_id: str) -> Game:
        return _game_from(self._call("get", game_id))

    def list(self, limit: int = 100, offset: int = 0) -> list[Game]:
        # spyne writes a page of 1,000 games (1.4 MB of XML) in 3.6 s of one idle
        # core here (its serializer, measured with cProfile): on a shared machine
        # that passed the 10 s call timeout. A page's timeout grows with its size.
        with self.zeep.transport.settings(timeout=self.timeout * max(1.0, limit / LIST_TIMEOUT_PER)):
            result = self._call("list", limit, offset)
        return [_game_from(g) for g in (result or [])]

    def update(self, game_id: str, game: Game) -> Game:
        return _game_from(self._call("update", game_id, _game_to(game)))

    def delete(self, game_id: str) -> None:
        self._call("delete", game_id)

    def health(self) -> None:
        self._call("health")

    def send_raw(self, op: str, body: bytes, game_id: str = "") -> Any:
        """POST `body` as the whole SOAP envelope (any bytes); a Fault is raised as usual."""
        try:
            response = self.session.post(self.endpoint, data=body, timeout=self.timeout,
                                         headers={"Content-Type": "text/xml; charset=utf-8",
                                                  "SOAPAction": f'"{op}"'})
        except requests.RequestException as exc:
            raise Unavailable(f"no answer: {exc}", native=type(exc).__name__) from None
        try:
            fault = etree.fromstring(response.content).find(f".//{{{SOAP_ENV}}}Fault")
        except etree.XMLSyntaxError:
            fault = None
        if fault is not None:
            raise _contract_error(fault.findtext("faultstring") or "", fault.findtext("faultcode") or "",
                                  fault.find("detail"))
        if response.status_code != 200:
            code = CODE_OF_HTTP_STATUS.get(response.status_code, INTERNAL)
            raise error_for(code, response.text[:200], native=response.status_code)
        return response.content

    def close(self) -> None:
        self.session.close()


def _contract_error(message: str, faultcode: str, detail: Any) -> ContractError:
    code = detail.findtext(".//code") if detail is not None else None
    if not code:  # a Fault of spyne's own (schema validation): the request's fault
        code = "INVALID_ARGUMENT" if faultcode.split(":")[-1].startswith("Client") else INTERNAL
    # "Client.SchemaValidationError" is a Client fault (SOAP 1.1 dotted subcodes)
    return error_for(code, message, native=(faultcode.split(":")[-1].split(".")[0], code))


def _game_to(game: Game) -> dict[str, Any]:
    out = dict(game)
    for name in LIST_FIELDS:
        if name in out and isinstance(out[name], list):
            out[name] = {"string": out[name]}
    if isinstance(out.get("language_details"), list):
        out["language_details"] = {"LanguageDetail": out["language_details"]}
    return out


def _game_from(value: Any) -> Game:
    game = dict(serialize_object(value, dict))
    for name in LIST_FIELDS:
        game[name] = list((game.get(name) or {}).get("string") or [])
    details = (game.get("language_details") or {}).get("LanguageDetail") or []
    game["language_details"] = [dict(d) for d in details]
    for name, value in game.items():  # an empty element reads as None in zeep
        if value is None and name != "is_kernel_ac":
            game[name] = ""
    return game


def wire_plan(endpoint: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The request SoapClient sends for `op`: the envelope and HTTP headers zeep's binding
    makes from the WSDL, serialized as zeep's transport serializes it (post_xml), on the
    client's own session (its User-Agent); builds the message only, never dials."""
    from zeep.wsdl.utils import etree_to_string

    from clients.rest.client import http_plan

    client = SoapClient(endpoint)
    try:
        args = [_game_to(v) if k == "game" else v for k, v in params.items()]  # the methods' argument order
        envelope, headers = client.service._binding._create(op, args, {}, client=client.zeep,
                                                            options={"address": endpoint})
        return http_plan(client.session, "POST", endpoint, etree_to_string(envelope), headers=headers)
    finally:
        client.close()
