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
from contract.validate import OPENAPI_PATH

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection, positive_data_acceptance]


def fuzzer(endpoint: str, seeded_ids: Sequence[str]):
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

    def execute(case: Any, tally: Tally, model: Model) -> None:
        response = case.call(base_url=endpoint, session=session, timeout=CALL_TIMEOUT)
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

    return strategy, execute, session.close
