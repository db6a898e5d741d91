"""gRPC server streaming as a push way (contract/push.md, "Over gRPC"): Subscribe
on every gRPC implementation (grpcio, grpc-go, grpc-js), through grpcio's own
stub and through grpcurl, the push load client's grpc mode, and bad input
answered with a gRPC status while the server keeps serving. (The feed tests
of tests/test_push.py run on these implementations too, through the lab's
GrpcClient.subscribe: order, pacing, resuming, the changes feed.)"""

from __future__ import annotations

import json
import subprocess

import grpc
import pytest
from test_outside_clients import grpcurl_or_skip
from test_push import _check_push_run, _push_run, subscribers

from clients.grpc.client import GrpcClient, subscribe_request
from contract import games_pb2 as pb
from lab import settings
from services.common.feeds import PUSH

SUBSCRIBE = "/protolab.games.v1.Games/Subscribe"
EVENT = PUSH["synthetic_event"]
STREAMING = subscribers("grpc")


def _subscribe(channel: grpc.Channel):
    return channel.unary_stream(SUBSCRIBE, request_serializer=None, response_deserializer=pb.PushMessage.FromString)


@pytest.mark.parametrize("impl", STREAMING)
def test_subscribe_streams_every_event_in_order_with_headers_and_trailer(impl, lab):
    """grpcio's own call, no lab client between: the headers open the subscription, every
    message arrives in order with its `batch` typed events (the contract's fields, one send
    stamp per message, stamps in order), and the OK status carries the count sent."""
    count, batch = 400, 7
    with grpc.insecure_channel(lab.endpoints[impl]) as channel:
        request = pb.SubscribeRequest(feed="synthetic", batch=batch, rate=0, count=count).SerializeToString()
        call = _subscribe(channel)(request, timeout=60)
        assert dict(call.initial_metadata()).get("subscribed") == "synthetic"
        messages = list(call)
        assert call.code() == grpc.StatusCode.OK
        assert dict(call.trailing_metadata()).get("sent") == str(count)
    assert [m.id for m in messages] == [str(k) for k in range(1, count + 1)]
    stamps = []
    for message in messages:
        assert len(message.events) == batch and not message.HasField("change")
        assert len({e.sent_ns for e in message.events}) == 1
        for event in message.events:
            assert [getattr(event, f"field_{i}") for i in range(1, len(EVENT))] == EVENT[1:]
        stamps.append(message.events[0].sent_ns)
    assert stamps == sorted(stamps) and stamps[0] > 1_700_000_000 * 10**9


@pytest.mark.parametrize("impl", STREAMING)
def test_subscribe_resumes_after_last_event_id(impl, lab):
    client = GrpcClient(lab.endpoints[impl])
    try:
        with client.subscribe("synthetic", last_event_id="95", rate=0, count=100) as stream:
            events = list(stream)
    finally:
        client.close()
    assert [e.id for e in events[:-1]] == ["96", "97", "98", "99", "100"]
    assert (events[-1].event, events[-1].data) == ("end", {"sent": 5})


# Requests that are no valid subscription, on the wire: each is INVALID_ARGUMENT, before any message.
BAD = {
    "not a message": b"\xff\xff\xff",
    "truncated string": pb.SubscribeRequest(feed="synthetic").SerializeToString()[:-2],
    "unknown field number": subscribe_request("synthetic", None, {"size": 5}),
    "mistyped field (count as a string)": subscribe_request("synthetic", None, {"count": "ten"}),
    "operator as a value": subscribe_request("synthetic", None, {"batch": {"$gt": 0}}),
    "unknown feed": pb.SubscribeRequest(feed="nope").SerializeToString(),
    "no feed": b"",
    "batch zero (present, not absent)": pb.SubscribeRequest(feed="synthetic", batch=0).SerializeToString(),
    "batch over the limit": pb.SubscribeRequest(feed="synthetic", batch=1001).SerializeToString(),
    "rate negative": pb.SubscribeRequest(feed="synthetic", rate=-1).SerializeToString(),
    "count past int32": pb.SubscribeRequest(feed="synthetic", count=2**40).SerializeToString(),
    "a synthetic parameter on changes": pb.SubscribeRequest(feed="changes", batch=5).SerializeToString(),
    "last_event_id not a number": pb.SubscribeRequest(feed="synthetic", count=10,
                                                      last_event_id="x7").SerializeToString(),
    "last_event_id past the count": pb.SubscribeRequest(feed="synthetic", count=10,
                                                        last_event_id="11").SerializeToString(),
}


@pytest.mark.parametrize("impl", STREAMING)
def test_bad_subscriptions_get_invalid_argument_and_the_server_keeps_serving(impl, lab):
    with grpc.insecure_channel(lab.endpoints[impl]) as channel:
        subscribe = _subscribe(channel)
        answers = {}
        for case, request in BAD.items():
            call = subscribe(request, timeout=settings.CALL_TIMEOUT)
            with pytest.raises(grpc.RpcError) as raised:
                next(call)
            answers[case] = (raised.value.code(), raised.value.details())
        assert {case: code for case, (code, _) in answers.items()} == \
            {case: grpc.StatusCode.INVALID_ARGUMENT for case in BAD}, answers
        assert all(details for _, details in answers.values()), answers  # a message saying what was wrong
        # still serving: a subscription and a unary call on the same channel
        call = subscribe(pb.SubscribeRequest(feed="synthetic", rate=0, count=3).SerializeToString(), timeout=30)
        assert [m.id for m in call] == ["1", "2", "3"]
        channel.unary_unary("/protolab.games.v1.Games/Health")(pb.Empty().SerializeToString(),
                                                               timeout=settings.CALL_TIMEOUT)


@pytest.mark.parametrize("impl", STREAMING)
def test_cancelling_a_stream_frees_it_and_the_server_serves_on(impl, lab):
    """A client that leaves an endless feed: the server stops it (the Python service gets
    its pool thread back), and new subscriptions, more than the Python pool's unary
    threads, open and deliver at once."""
    with grpc.insecure_channel(lab.endpoints[impl]) as channel:
        subscribe = _subscribe(channel)
        for _ in range(3):
            calls = [subscribe(pb.SubscribeRequest(feed="synthetic", rate=100).SerializeToString(), timeout=60)
                     for _ in range(12)]
            assert [next(c).id for c in calls] == ["1"] * 12
            for c in calls:
                c.cancel()


@pytest.mark.parametrize("impl", STREAMING)
def test_push_load_client_over_grpc(impl, lab, tmp_path):
    r, row, samples = _push_run(lab, impl, "grpc", tmp_path)
    _check_push_run(r, row, samples)
    assert samples.connect.get_total_count() == r.clients  # each stream's headers


@pytest.mark.parametrize("impl", STREAMING)
def test_push_load_client_counts_a_refused_stream_as_an_error(impl, lab, tmp_path):
    _, row, samples = _push_run(lab, impl, "grpc", tmp_path, clients=2, batch=0, seconds=1.0)  # batch 1..1000
    assert row["messages"] == 0
    assert row["errors"] == 2, row
    assert set(row["errors_by_kind"]) == {"status_InvalidArgument"}


@pytest.mark.parametrize("impl", STREAMING)
def test_grpcurl_streams_the_feed_by_reflection(impl, lab):
    """The engineer's own tool: grpcurl finds Subscribe by reflection, prints each streamed
    message as protojson, and reports a refused subscription's status."""
    grpcurl = grpcurl_or_skip()
    address = lab.endpoints[impl]
    described = subprocess.run([grpcurl, "-plaintext", address, "describe", "protolab.games.v1.Games"],
                               capture_output=True, text=True, timeout=60)
    assert "rpc Subscribe ( .protolab.games.v1.SubscribeRequest ) returns ( stream .protolab.games.v1.PushMessage )" \
        in described.stdout, described.stdout
    got = subprocess.run([grpcurl, "-plaintext", "-v", "-d", '{"feed": "synthetic", "batch": 2, "rate": 0, "count": 3}',
                          address, "protolab.games.v1.Games/Subscribe"], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    print(got.stdout)
    assert "subscribed: synthetic" in got.stdout and "sent: 3" in got.stdout  # headers, trailers (-v)
    decoder, text, messages = json.JSONDecoder(), got.stdout, []
    at = text.find("{")
    while at >= 0:
        message, end = decoder.raw_decode(text, at)
        messages.append(message)
        at = text.find("{", end)
    assert [m["id"] for m in messages] == ["1", "2", "3"]
    # protojson's names: the JSON names where the reflected descriptor carries them (grpc-go's), else the
    # .proto's (grpcio's and grpc-js's reflection send descriptors without json_name)
    events = [{key.replace("_", "").lower(): value for key, value in e.items()} for m in messages for e in m["events"]]
    assert len(events) == 6 and all(int(e["sentns"]) > 0 for e in events)  # int64: a decimal string
    assert [e["field6"] for e in events] == [EVENT[6]] * 6 and events[0]["field3"] == EVENT[3]
    refused = subprocess.run([grpcurl, "-plaintext", "-d", '{"feed": "synthetic", "batch": 0}', address,
                              "protolab.games.v1.Games/Subscribe"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "Code: InvalidArgument" in refused.stderr, refused.stderr
