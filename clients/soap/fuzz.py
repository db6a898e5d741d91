"""SOAP: envelopes generated from contract/games.wsdl (zeep reads its types;
values drawn by Hypothesis from them, zeep writes the envelope), sent valid
and mutated: a value of the wrong type, an element missing or unknown, a huge
value, malformed XML, a SOAPAction that does not name the operation.

SOAP 1.1 answers every Fault with HTTP 500: a Client fault carrying the
contract's code is the proper error; a Server fault, or a 5xx without a
Fault, is an internal error. Every answer must be a Fault or conform to the
WSDL's XML Schema (contract.validate.soap_message_errors); a request valid by
the WSDL and the contract is answered, or refused NOT_FOUND only."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import requests
import zeep
from hypothesis import strategies as st
from lxml import etree
from zeep.xsd import types as xsd

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally, hostile_text
from contract.game import ID_PATTERN, LIMITS, MAX_REQUEST_BYTES
from contract.validate import SOAP_ENV, WSDL_PATH, soap_message_errors

NAMESPACE = "urn:protolab:games"
MUTATIONS = ("wrong type", "missing element", "unknown element", "huge value", "malformed XML", "wrong SOAPAction")
KINDS = ("valid", MUTATIONS[0], "valid", *MUTATIONS[1:3], "valid", *MUTATIONS[3:5], "valid", MUTATIONS[5])


def _xml_char(c: str) -> bool:
    """A character XML 1.0 can carry (zeep refuses to write any other)."""
    n = ord(c)
    return n in (0x9, 0xA, 0xD) or 0x20 <= n <= 0xD7FF or 0xE000 <= n <= 0xFFFD or 0x10000 <= n <= 0x10FFFF


def xml_text(max_size: int = 40) -> st.SearchStrategy[str]:
    # "\r" is read back as "\n" (XML end-of-line handling): a value that would not round-trip
    return hostile_text(max_size).map(lambda s: "".join(c for c in s if _xml_char(c) and c != "\r"))


@dataclass
class Case:
    kind: str  # "valid" or a mutation
    op: str
    envelope: bytes
    action: str | None  # the SOAPAction header (None: not sent)
    game_id: str | None
    sent: dict[str, Any] | None  # the game, when the envelope says exactly it

    def __str__(self) -> str:
        return f"{self.kind} {self.op} SOAPAction={self.action!r} {self.envelope[:240]!r}"


def _value(kind: Any, name: str, seeded: Sequence[str]) -> st.SearchStrategy[Any]:
    """Values of one xsd type as zeep reads games.wsdl, within the contract."""
    if isinstance(kind, xsd.ComplexType):
        members = {n: _element(e, seeded) for n, e in kind.elements}
        return st.fixed_dictionaries(members)
    if type(kind).__name__ == "Boolean":
        return st.booleans()
    if type(kind).__name__ == "Integer":
        top = LIMITS["max_list_limit"] if name == "limit" else LIMITS["max_offset"]
        return st.integers(1 if name == "limit" else 0, top)
    if name == "id":
        return st.one_of(st.sampled_from(seeded), st.from_regex(ID_PATTERN, fullmatch=True))
    return xml_text()


def _element(element: Any, seeded: Sequence[str]) -> st.SearchStrategy[Any]:
    one = _value(element.type, element.name, seeded)
    if element.max_occurs == "unbounded":
        return st.lists(one, max_size=3)
    if element.nillable and element.type.__class__.__name__ == "Boolean":
        return st.one_of(st.none(), one)
    return one


class Envelopes:
    """Valid calls of every operation, drawn from the WSDL, as zeep writes them."""

    def __init__(self, seeded: Sequence[str]) -> None:
        self.client = zeep.Client(str(WSDL_PATH))
        self.service = self.client.create_service(f"{{{NAMESPACE}}}Games", "http://lab/soap")
        binding = self.client.service._binding
        self.actions = {name: op.soapaction for name, op in binding._operations.items()}
        self.arguments = {name: st.fixed_dictionaries({n: _element(e, seeded) for n, e in op.input.body.type.elements})
                          for name, op in binding._operations.items()}

    def write(self, op: str, arguments: dict[str, Any]) -> bytes:
        message = self.client.create_message(self.service, op, **arguments)
        return etree.tostring(message, xml_declaration=True, encoding="UTF-8")

    def valid(self) -> st.SearchStrategy[Case]:
        return st.one_of([self.arguments[op].map(lambda a, op=op: self._case("valid", op, a)) for op in self.arguments])

    def _case(self, kind: str, op: str, arguments: dict[str, Any]) -> Case:
        game = arguments.get("game")
        return Case(kind, op, self.write(op, arguments), f'"{self.actions[op]}"', arguments.get("id"),
                    _plain_game(game) if game is not None else None)

    def cases(self) -> st.SearchStrategy[tuple[Case, Any, str]]:
        """A valid call, and what a mutation of it draws on (a seed for its Random, some text)."""
        return st.tuples(self.valid(), st.integers(0, 2**32), hostile_text(30))

    def case(self, drawn: tuple[Case, Any, str], number: int) -> Case:
        """Case `number` of a run: valid four times in ten, else each mutation in
        turn (chosen by number: a drawn choice would mostly be the first option)."""
        kind = KINDS[number % len(KINDS)]
        valid, rng_seed, text = drawn
        return valid if kind == "valid" else self._mutate(valid, kind, random.Random(rng_seed), text)

    def _mutate(self, case: Case, mutation: str, rng: Any, text: str) -> Case:
        root = etree.fromstring(case.envelope)
        call = root.find(f"{{{SOAP_ENV}}}Body")[0]
        inside = list(call.iter())[1:] or [call]
        target = rng.choice(inside)
        action = case.action
        envelope = None
        if mutation == "wrong type":
            target.text = rng.choice(["yes", "1.5", "-1", "9" * 40, "", "true false", "<![CDATA[x]]>"])
            for child in list(target):
                target.remove(child)
        elif mutation == "missing element":
            target.getparent().remove(target)
        elif mutation == "unknown element":
            etree.SubElement(target, f"{{{NAMESPACE}}}{rng.choice(['extra', 'id', 'game', 'ne', 'where'])}").text = \
                "".join(c for c in text if _xml_char(c))
        elif mutation == "huge value":
            size = rng.choice([10_000, MAX_REQUEST_BYTES - 2_000, MAX_REQUEST_BYTES + 1, 4 * MAX_REQUEST_BYTES])
            target.text = rng.choice(["x", "9", "😀"]) * size
        elif mutation == "malformed XML":
            raw = etree.tostring(root)
            cut = rng.randrange(len(raw))
            envelope = rng.choice([
                raw[:cut],
                raw[:cut] + text.encode("utf-8", "surrogatepass") + raw[cut:],
                raw[:cut] + b"\x00\xff\xfe" + raw[cut:],
                raw.replace(b"Envelope", b"Envelop", 1),
                b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + raw.replace(
                    b"</soap-env:Body>", b"&x;</soap-env:Body>"),
            ])
        elif mutation == "wrong SOAPAction":  # any HTTP field value (no control characters: that is not HTTP)
            text = "".join(c for c in text if c == "\t" or (c.isprintable() and _xml_char(c))).strip()
            action = rng.choice([*(f'"{a}"' for a in self.actions.values() if a != case.op), "", None, text, '"*"'])
        if envelope is None:
            envelope = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
        return Case(mutation, case.op, envelope, action, case.game_id, None)


def _plain_game(game: dict[str, Any]) -> dict[str, Any]:
    """The game as the contract (and the store) has it: arrays as plain lists."""
    plain = {}
    for name, value in game.items():
        if isinstance(value, dict) and len(value) == 1:
            (items,) = value.values()
            plain[name] = [dict(i) if isinstance(i, dict) else i for i in items]
        else:
            plain[name] = value
    return plain


def _fault(root: Any) -> tuple[str, str | None] | None:
    fault = root.find(f"{{{SOAP_ENV}}}Body/{{{SOAP_ENV}}}Fault") if root is not None else None
    if fault is None:
        return None
    return (fault.findtext("faultcode") or "").split(":")[-1].split(".")[0], fault.findtext("detail/code")


def fuzzer(endpoint: str, seeded_ids: Sequence[str]):
    envelopes = Envelopes(seeded_ids)
    session = requests.Session()
    strategy = envelopes.cases()

    def execute(drawn: tuple[Case, Any, str], tally: Tally, model: Model) -> None:
        case = envelopes.case(drawn, tally.cases)
        headers = {"Content-Type": "text/xml; charset=utf-8"}
        if case.action is not None:
            headers["SOAPAction"] = case.action.encode("utf-8")  # type: ignore[assignment]
        response = session.post(endpoint, data=case.envelope, headers=headers, timeout=CALL_TIMEOUT)
        try:
            root = etree.fromstring(response.content)
        except etree.XMLSyntaxError:
            root = None
        fault = _fault(root)
        faultcode, code = fault if fault else (None, None)
        tally.saw(f"{case.kind} {case.op} {faultcode or response.status_code} {code or ''}".strip())
        if faultcode == "Server" or (response.status_code >= 500 and fault is None):
            tally.server_errors += 1
            tally.fail(case, f"internal error: HTTP {response.status_code} {response.content[:300]!r}")
        if b"root:" in response.content:  # the external entity of a mutation was read
            tally.fail(case, "the answer carries a local file's content")
        problems = soap_message_errors(response.content)
        if problems:
            tally.fail(case, f"answer outside the WSDL: {problems[:3]}")
        if (response.status_code == 500) != (fault is not None):
            tally.fail(case, f"HTTP {response.status_code} with {'a' if fault else 'no'} Fault")
        if case.kind == "valid" and fault is not None and code != "NOT_FOUND":
            tally.fail(case, f"a valid request was refused: {faultcode} {code}")
        if fault is None and response.status_code == 200 and case.op in ("create", "update", "delete"):
            wrong = soap_message_errors(case.envelope) or (case.action or "").strip('"') != case.op
            if wrong:  # only a valid call may change stored data
                tally.fail(case, f"an invalid request was acknowledged: {wrong}")
            target = root.findtext(f".//{{{NAMESPACE}}}id") if case.op == "create" else case.game_id
            model.acknowledged(case, case.op, target, case.sent if case.kind == "valid" else None)
        model.check(case, (case.game_id,) if case.game_id else ())

    return strategy, execute, session.close
