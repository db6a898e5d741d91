"""REST: schemathesis cases from contract/openapi.yaml, positive (valid by the
schema: must be accepted) and negative (invalid: must be refused with a 4xx),
checked by schemathesis's own response checks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import requests
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally
from clients.http import check_http, http2_client, require_http2, trust_only
from contract.validate import OPENAPI_PATH

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection, positive_data_acceptance]


# What requests.Request takes of schemathesis's transport arguments (an HTTP/2 case is prepared by
# requests, as the HTTP/1.1 one is sent, then carried by httpx).
_REQUEST_KEYS = ("method", "url", "headers", "files", "data", "params", "auth", "cookies", "json")


def fuzzer(endpoint: str, seeded_ids: Sequence[str], http: str | None = None, ca_file: str | None = None,
           compression: str | None = None):
    """`http`, `ca_file` (lab/axes.py): the subject's HTTP version and CA; an HTTP/2 subject's
    cases go over httpx with h2, each answer checked to be HTTP/2 (clients/http.py)."""
    schema = schemathesis.openapi.from_path(str(OPENAPI_PATH))
    schema.config.base_url = endpoint
    # Invalid data is refused with any 4xx the contract declares: schemathesis's
    # own list plus the size refusals (413 body, 414 request target, 431 headers),
    # which an invalid request that is also too long meets first.
    rejection = schema.config.checks.negative_data_rejection
    schema.config.checks.negative_data_rejection = type(rejection)(
        expected_statuses=[*rejection.expected_statuses, "413", "414", "431"])
    strategy = st.one_of(schema.as_strategy(generation_mode=GenerationMode.POSITIVE),
                         schema.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    session = requests.Session()
    if ca_file:
        trust_only(session, ca_file)
    http = check_http(http, ca_file)
    h2 = http2_client(http, CALL_TIMEOUT, ca_file) if http != "h1" else None

    def send(case: Any) -> Any:
        if h2 is None:
            return case.call(base_url=endpoint, session=session, timeout=CALL_TIMEOUT)
        given = case.as_transport_kwargs(base_url=endpoint)
        prepared = requests.Request(**{k: v for k, v in given.items() if k in _REQUEST_KEYS}).prepare()
        response = h2.request(prepared.method or "GET", prepared.url or endpoint, headers=dict(prepared.headers),
                              content=prepared.body)
        require_http2(response, http)
        return response

    def close() -> None:
        session.close()
        if h2 is not None:
            h2.close()

    def execute(case: Any, tally: Tally, model: Model) -> None:
        response = send(case)
        status = response.status_code
        tally.saw(f"{case.method} {case.path} {status}")
        if status >= 500:
            tally.server_errors += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception as exc:  # schemathesis's FailureGroup: one line per failed check
            tally.fail(case.as_curl_command(), f"{case.method} {case.path} -> {status}: "
                       + " ".join(str(exc).split())[:400])
        game_id = (case.path_parameters or {}).get("id")
        sent = case.body if isinstance(case.body, dict) else None
        if case.method == "POST" and status == 201:
            model.acknowledged(case, "create", json.loads(response.content)["id"], sent)
        elif case.method == "PUT" and status == 200:
            model.acknowledged(case, "update", game_id, sent)
        elif case.method == "DELETE" and status == 204:
            model.acknowledged(case, "delete", game_id)
        model.check(case.as_curl_command(), (game_id,) if game_id else ())

    return strategy, execute, close
