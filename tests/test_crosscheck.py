"""The concurrency-1 cross-check (load/crosscheck.py, clients/<protocol>/crosscheck/):
each protocol's Go or Node.js client answered on every call, and what it sent is
what the lab's Python client sends. No timing decides a test."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict

from clients.grpc.client import SERVICE
from clients.protocols import PROTOCOLS, Protocol
from contract.codec import dumpb
from lab.workload import OPERATIONS as OPERATION
from load import crosscheck
from load.common import prepare

CALLS = 20
CROSSCHECKED = [p for p in PROTOCOLS.values() if p.crosscheck]


class Sent(Exception):
    """Raised by a recorder in place of sending: what the lab's client was about to send."""

    def __init__(self, payload: bytes, request: dict[str, Any]):
        super().__init__("recorded")
        self.payload, self.request = payload, request


def _requests(client: Any) -> None:
    """REST, GraphQL, SOAP: requests hands its Session.send the prepared request."""
    def send(prepared: Any, **_: Any) -> None:
        body = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body
        raise Sent(body or b"", {"method": prepared.method, "url": prepared.url,
                                 "headers": dict(prepared.headers),
                                 "body": body.decode() if body is not None else None})
    client.session.send = send


def _grpc(client: Any) -> None:
    class Stub:
        def __getattr__(self, name: str) -> Any:
            def call(request: Any, **_: Any) -> None:
                raise Sent(request.SerializeToString(),
                           {"method": f"{SERVICE}/{name}",
                            "message": MessageToDict(request, preserving_proto_field_name=True)})
            return call
    client.stub = Stub()


def _ws(client: Any) -> None:
    def send(message: str) -> None:
        raise Sent(message.encode(), {"message": message, "request_id": 1})  # a new client's first id
    client.ws.send = send


def _socketio(client: Any) -> None:
    def call(event: str, data: Any, **_: Any) -> None:
        raise Sent(dumpb(data), {"event": event, "argument": data})
    client.sio.call = call


def _connect(client: Any) -> None:
    """Connect: connect-python's client is handed the message, its method and whether it goes as a GET."""
    def execute_unary(*, request: Any, method: Any, use_get: bool = False, **_: Any) -> None:
        raise Sent(request.SerializeToString(),
                   {"procedure": f"/{method.service_name}/{method.name}", "get": use_get,
                    "message": MessageToDict(request, preserving_proto_field_name=True)})
    client.client.execute_unary = execute_unary


# Where each protocol's client hands its request to its transport library.
RECORDERS = {"rest": _requests, "graphql": _requests, "soap": _requests, "grpc": _grpc, "ws": _ws,
             "socketio": _socketio, "connect": _connect}


def sent_by_lab_client(lab: Any, name: str, protocol: str, operation: str) -> Sent:
    """What the lab's client sends for the latency suite's `operation` (its real
    client, connected, stopped at its transport's send)."""
    client = lab.client(name)
    try:
        RECORDERS[protocol](client)
        with pytest.raises(Sent) as sent:
            OPERATION[operation].call(client)()
        return sent.value
    finally:
        client.close()


def cheapest(lab: Any, protocol: Protocol) -> Any:
    """A Go service of the protocol, else a Node.js one, else its first (SOAP: Python only)."""
    mine = [i for i in lab.implementations if i.protocol == protocol.name]
    if not mine:
        pytest.skip(f"no {protocol.name} implementation running")
    return min(mine, key=lambda i: ("go", "node").index(i.language) if i.language in ("go", "node") else 2)


def needs_toolchain(protocol: Protocol) -> None:
    missing = crosscheck.client_build(protocol).missing()
    if missing:
        pytest.skip(f"{protocol.name}'s cross-check client needs {', '.join(missing)}")


def test_every_cross_checked_protocol_has_a_recorder_here():
    assert {p.name for p in CROSSCHECKED} == set(RECORDERS), "add its recorder to RECORDERS"


@pytest.mark.parametrize("operation", crosscheck.OPERATED)
@pytest.mark.parametrize("protocol", CROSSCHECKED, ids=lambda p: p.name)
def test_outside_client_answers_with_the_lab_clients_request(lab, protocol, operation):
    """The plan's request is exactly the lab client's (compared with what its transport
    was handed); the outside client answered every call without an error, and the
    payload it sent has the lab client's bytes (sha256)."""
    needs_toolchain(protocol)
    impl = cheapest(lab, protocol)
    plan = crosscheck.plan(protocol, lab.endpoints[impl.name], operation)
    sent = sent_by_lab_client(lab, impl.name, protocol.name, operation)
    assert {k: plan["request"][k] for k in sent.request} == sent.request

    cell = crosscheck.measure(lab, impl, operation, calls=CALLS, warmup=3, service_warmup_s=0)
    assert cell["errors"] == {}, cell["first_error"]
    assert cell["answered"] == CALLS and cell["latency_us"]["count"] == CALLS
    lat = cell["latency_us"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["max"]
    assert lat["p99"] is None and "p99" in lat["withheld"]  # 20 calls: too few for a tail
    assert cell["python_client_latency_us"]["count"] == CALLS  # the lab's client, in the same cell
    assert cell["request_sha256"] == hashlib.sha256(sent.payload).hexdigest()
    assert cell["request_bytes"] == len(sent.payload)
    # the service's CPU is read in clock ticks (10 ms): 20 calls of a fast service may read 0
    assert cell["cpu_us_per_call"]["service"] >= 0 and cell["cpu_us_per_call"]["client"] > 0
    assert cell["version"] not in ("", "unknown")


def test_a_failing_call_is_counted_not_timed(lab):
    """A request the service refuses (a game that does not exist): every call an error
    in the protocol's terms, no sample; the client stops after its error limit."""
    protocol = CROSSCHECKED[0]
    needs_toolchain(protocol)
    impl = cheapest(lab, protocol)
    prepare(lab, "fetch-one")
    client = crosscheck.client_build(protocol)
    client.build()
    endpoint = lab.endpoints[impl.name]
    the_plan = {"endpoint": endpoint, "warmup": 1, "calls": 50, "timeout_s": 10,
                "request": protocol.crosscheck_plan_function()(endpoint, "get", {"id": "no-such-game"})}
    out = crosscheck.run_client(client, the_plan, {"service": lab.pids[impl.name]})
    assert out["samples_ns"] == []
    assert sum(out["errors"].values()) == 10, out["errors"]  # MaxErrors in clients/internal/crosscheck


def test_implementations_without_a_cross_check_client_are_left_out_with_the_reason(capsys):
    names = crosscheck.chosen(None, crosscheck.why_not, "no implementation to cross-check")
    printed = capsys.readouterr().out
    for protocol in PROTOCOLS.values():
        if not protocol.crosscheck:
            assert not any(n.startswith(f"{protocol.name}/") for n in names)
            assert protocol.no_crosscheck in printed


def test_the_latency_suites_call_as_a_contract_call():
    op, params = crosscheck.contract_call("fetch-100")
    assert op == "list" and params == {"limit": 100, "offset": 0}
    op, params = crosscheck.contract_call("insert")
    assert op == "create" and set(params) == {"game"} and params["game"]["name"]


def test_histogram_summary_from_ns_samples():
    """ns folded as µs (a sub-µs sample as 1 µs), at the histogram's 3 significant digits."""
    summary = crosscheck.latency_summary([1_000_000, 2_000_000, 3_000_000, 400])
    assert summary["count"] == 4 and summary["p50"] == 1000 and abs(summary["max"] - 3000) <= 3
    assert summary["mean"] == pytest.approx((1000 + 2000 + 3000 + 1) / 4, rel=1e-3)
    assert crosscheck.latency_summary([])["count"] == 0


def test_warms_a_service_by_its_manifests_count_through_the_python_client(lab, seeding):
    """warm(): an implementation whose manifest asks for warm-up calls gets them
    through the service (insert: each made one stored game, which prepare()
    clears before the outside client runs), stopped by the time limit if it comes
    first; one that does not ask gets none."""
    asking = [i for i in lab.implementations if i.warmup_calls]
    plain = [i for i in lab.implementations if not i.warmup_calls]
    if not asking or not plain:
        pytest.skip("needs an implementation with [bench] warmup_calls and one without")
    impl = asking[0]
    assert crosscheck.warm(lab, plain[0], "fetch-one") is None
    made = crosscheck.warm(lab, impl, "insert", max_s=0.5)
    assert 1 <= made <= impl.warmup_calls
    games = seeding.store.games
    assert games.count_documents({}) == made
    prepare(lab, "insert")
    assert games.count_documents({}) == 0


def test_every_cross_check_client_has_its_manifest_and_plan():
    for protocol in CROSSCHECKED:
        client = crosscheck.client_build(protocol)
        assert client.build_command and "{plan}" in client.command, protocol.name
        assert callable(protocol.crosscheck_plan_function())


def test_the_driver_names_no_protocol():
    source = Path(crosscheck.__file__).read_text()
    named = [p for p in PROTOCOLS if f'"{p}"' in source or f"'{p}'" in source]
    assert not named, f"load/crosscheck.py names {named}: read the descriptors instead"
