"""GraphQL: queries and mutations generated from contract/schema.graphql by
hypothesis-graphql, valid ones and invalid ones, sent over POST and (queries)
GET with either media type. Every error must carry a contract code; a valid
document must execute (HTTP 200)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import hypothesis_graphql
import requests
from graphql import FieldNode, NameNode, OperationDefinitionNode, SelectionSetNode, parse, print_ast
from hypothesis import strategies as st

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally
from clients.http import check_http, http2_client, require_http2, trust_only
from contract.errors import ERRORS, INTERNAL
from contract.validate import GRAPHQL_SDL_PATH

WRITES = {"create_game": "create", "update_game": "update", "delete_game": "delete"}
ACCEPTS = [None, "application/json", "application/graphql-response+json"]


def _with_ids(document: str) -> str:
    """The document with `id` selected under create_game/update_game, so the
    run learns which game an acknowledged write touched."""
    try:
        ast = parse(document)
    except Exception:
        return document
    for definition in ast.definitions:
        if isinstance(definition, OperationDefinitionNode):
            for node in definition.selection_set.selections:
                if isinstance(node, FieldNode) and node.name.value in ("create_game", "update_game"):
                    selections = tuple(node.selection_set.selections) if node.selection_set else ()
                    node.selection_set = SelectionSetNode(selections=(FieldNode(name=NameNode(value="id")),
                                                                      *selections))
    return print_ast(ast)


def _writes(document: str) -> list[tuple[str, str, str | None]]:
    """(response key, operation, id literal) of each write in the document."""
    try:
        ast = parse(document)
    except Exception:
        return []
    found = []
    for definition in ast.definitions:
        if isinstance(definition, OperationDefinitionNode) and definition.operation.value == "mutation":
            for node in definition.selection_set.selections:
                if isinstance(node, FieldNode) and node.name.value in WRITES:
                    key = node.alias.value if node.alias else node.name.value
                    literal = next((getattr(a.value, "value", None) for a in node.arguments
                                    if a.name.value == "id"), None)
                    found.append((key, WRITES[node.name.value], literal))
    return found


def fuzzer(endpoint: str, seeded_ids: Sequence[str], http: str | None = None, ca_file: str | None = None,
           compression: str | None = None):
    """`http`, `ca_file` (lab/axes.py): the subject's HTTP version and CA; an HTTP/2 subject's
    documents go over httpx with h2, each answer checked to be HTTP/2 (clients/http.py)."""
    sdl = GRAPHQL_SDL_PATH.read_text()
    Mode = hypothesis_graphql.Mode
    documents = st.one_of(
        st.tuples(st.just(True), hypothesis_graphql.queries(sdl)),
        # One write per document: with non-null root fields, a later field's
        # error nulls all of `data`, so an earlier write's result (its id) is
        # lost to the client though it was stored (contract/README.md).
        st.tuples(st.just(True), st.one_of([
            hypothesis_graphql.mutations(sdl, fields=[name]).map(_with_ids) for name in WRITES]).filter(
                lambda document: len(_writes(document)) == 1)),
        st.tuples(st.just(False), hypothesis_graphql.queries(sdl, mode=Mode.NEGATIVE)),
        st.tuples(st.just(False), hypothesis_graphql.mutations(sdl, mode=Mode.NEGATIVE)),
        st.tuples(st.just(False), st.text(max_size=80)),
    )
    strategy = st.tuples(documents, st.sampled_from(ACCEPTS), st.booleans())
    session = requests.Session()
    if ca_file:
        trust_only(session, ca_file)
    http = check_http(http, ca_file)
    h2 = http2_client(http, CALL_TIMEOUT, ca_file) if http != "h1" else None

    def close() -> None:
        session.close()
        if h2 is not None:
            h2.close()

    def execute(case: Any, tally: Tally, model: Model) -> None:
        (valid, document), accept, over_get = case
        headers = {"Accept": accept} if accept else {}
        is_query = not document.lstrip().startswith("mutation")
        response: Any
        if h2 is not None:
            response = (h2.get(endpoint, params={"query": document}, headers=headers) if over_get and is_query
                        else h2.post(endpoint, content=json.dumps({"query": document}).encode(),
                                     headers={**headers, "Content-Type": "application/json"}))
            require_http2(response, http)
        elif over_get and is_query:
            response = session.get(endpoint, params={"query": document}, headers=headers, timeout=CALL_TIMEOUT)
        else:
            response = session.post(endpoint, data=json.dumps({"query": document}),
                                    headers={**headers, "Content-Type": "application/json"},
                                    timeout=CALL_TIMEOUT)
        status = response.status_code
        tally.saw(f"{'GET' if over_get and is_query else 'POST'} {'valid' if valid else 'invalid'} {status}")
        if status >= 500:
            tally.server_errors += 1
            tally.fail(case, f"HTTP {status}")
        wanted = accept or "application/json"
        if response.headers.get("Content-Type", "").split(";")[0] != wanted:
            tally.fail(case, f"Content-Type {response.headers.get('Content-Type')!r} for Accept {accept!r}")
        try:
            payload = response.json()
        except ValueError:
            tally.fail(case, f"HTTP {status} with a body that is not JSON")
            return
        for error in payload.get("errors") or ():
            code = (error.get("extensions") or {}).get("code")
            if code not in ERRORS or code == INTERNAL:
                if code == INTERNAL:
                    tally.server_errors += 1
                tally.fail(case, f"error without a contract code: {error}")
        if valid and (status != 200 or "data" not in payload):
            tally.fail(case, f"a valid document was not executed: HTTP {status} {str(payload)[:200]}")
        data = payload.get("data") or {}
        touched = []
        for key, op, literal in _writes(document):
            result = data.get(key)
            if op == "delete" and result is True:
                model.acknowledged(case, "delete", str(literal))
            elif op != "delete" and isinstance(result, dict) and "id" in result:
                model.acknowledged(case, op, result["id"])
            if literal is not None:
                touched.append(str(literal))
        model.check(case, tuple(touched))

    return strategy, execute, close
