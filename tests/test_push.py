"""The push feeds (contract/push.md) on every implementation that serves them,
SSE and WebSocket alike, through their own clients: order, ids, payloads,
resuming after an id, and malformed subscriptions answered with the
contract's error while the server keeps serving. WebSocket's echo and
broadcast (contract/ws-protocol.md) on those that serve them."""

from __future__ import annotations

import json
import threading
import time

import pytest
import watched

from clients.protocols import PROTOCOLS
from clients.sse.client import SseClient
from contract.errors import INVALID_ARGUMENT, ContractError
from lab import dataset
from lab.pytest_plugin.fixtures import implementations
from lab.registry import discover
from services.common.feeds import PUSH, WebSocketPush

PROTOCOL = {impl.name: impl.protocol for impl in discover()}
EVENT = PUSH["synthetic_event"]


def subscribers(*protocols: str) -> list:
    """The implementations that serve the feeds, of these protocols only: the
    tests of one protocol's own client or wire format are generated for it alone."""
    return implementations("subscribe", where=lambda impl: impl.protocol in protocols)


@pytest.fixture(autouse=True)
def contract_checked():
    """Every message the test's clients receive (opened by _client) is checked
    against the contract afterwards (tests/watched.py)."""
    watched.clear()
    yield
    problems = watched.checked()
    assert problems == [], f"{len(problems)} message(s) outside the contract:\n" + "\n".join(problems[:20])


def _client(lab, name):
    return watched.watch(lab.client(name))


@pytest.fixture
def push_client(request, lab):
    """A fresh client of the implementation (a subscription holds its connection)."""
    client = _client(lab, request.param)
    yield client
    client.close()


def _ids(events):
    return [e.id for e in events]


def _messages(stream, feed):
    """The feed's events up to and including its end (or error) event."""
    events = list(stream)
    assert events, "no events"
    assert events[-1].event == "end", events[-1]
    assert all(e.event == feed for e in events[:-1])
    return events[:-1], events[-1]


@pytest.mark.parametrize("push_client", implementations("subscribe"), indirect=True)
def test_synthetic_feed_pushes_numbered_stamped_batches_in_order(push_client):
    before = time.time_ns()
    with push_client.subscribe("synthetic", batch=3, rate=200, count=20) as stream:
        messages, end = _messages(stream, "synthetic")
    after = time.time_ns()
    assert _ids(messages) == [str(n) for n in range(1, 21)]
    assert end.data["sent"] == 20
    stamps = []
    for message in messages:
        assert len(message.data) == 3
        for event in message.data:
            assert event[1:] == EVENT[1:]
            assert type(event[0]) is int
        assert len({event[0] for event in message.data}) == 1  # one send time per message
        stamps.append(message.data[0][0])
    assert stamps == sorted(stamps)
    assert before <= stamps[0] and stamps[-1] <= after
    # paced at 200 messages/s, none before it is due: message k is due k intervals after the schedule's start,
    # which is after `before` (the server starts it on receiving the request), so it is stamped at or after
    # before + k intervals. (Node.js's timers, which count whole ms from a cached clock, sent messages up to
    # 1.4 ms early until the pacer looked at the clock again.) Not measured from the first message's stamp:
    # on a busy machine the first is itself late (CI, 2026-11-26: 0.71 ms), and the rest, on time, then look early.
    # The price: an early send is caught only beyond the time from `before` to the schedule's start (0.5-5.5 ms
    # here, 2026-11-26), the one bound that holds however busy the machine is.
    assert all(stamp >= before + k * 5_000_000 for k, stamp in enumerate(stamps)), \
        [(stamp - before) / 1e6 - k * 5 for k, stamp in enumerate(stamps)]


@pytest.mark.parametrize("push_client", implementations("subscribe"), indirect=True)
def test_unpaced_feed_arrives_whole_and_in_order_with_its_end_last(push_client):
    """As fast as the server writes: every message, in order, and the end after the last.
    (python-socketio's client handed each message to a new thread, and a feed's end
    could overtake its last message: CI, 2026-11-26.)"""
    with push_client.subscribe("synthetic", rate=0, count=500) as stream:
        messages, end = _messages(stream, "synthetic")
    assert _ids(messages) == [str(n) for n in range(1, 501)]
    assert end.data["sent"] == 500


@pytest.mark.parametrize("impl", subscribers("socketio"))
def test_socketio_client_takes_messages_on_its_loop_in_arrival_order(impl, lab):
    """The rule behind the test above, for socket.io, where a race is rare: each received
    Engine.IO message is handled by the client's reading loop, before the next is read
    (python-engineio's asyncio client starts a task per message, which starts in order but
    lets the next message overtake one whose handling awaits). Packets are handed to the
    connected client's Engine.IO layer, on the client's loop, as its reading loop does."""
    from engineio import packet

    client = lab.client(impl)
    try:
        seen = []
        client.sio.on("probe", lambda n: seen.append((n, threading.get_ident())))

        async def read() -> tuple[int, list[int]]:
            handled = []
            for n in range(50):
                await client.sio.eio._receive_packet(packet.Packet(packet.MESSAGE, f'2["probe",{n}]'))
                handled.append(len(seen))
            return threading.get_ident(), handled

        loop_thread, handled = client._run(read, client.timeout)
        assert handled == list(range(1, 51))  # each handled before the next is read, not in a task of its own
        assert seen == [(n, loop_thread) for n in range(50)]
        assert client.echo("still serving") == "still serving"
    finally:
        client.close()


@pytest.mark.parametrize("impl", subscribers("socketio"))
def test_socketio_locust_client_takes_messages_on_the_reading_thread_in_arrival_order(impl, lab):
    """The same for the Locust user's threaded client (clients/socketio/load.py), whose
    Engine.IO layer starts a thread per message."""
    from engineio import packet

    from clients.socketio.client import ThreadedSocketIOClient

    client = ThreadedSocketIOClient(lab.endpoints[impl])
    try:
        seen = []
        client.sio.on("probe", lambda n: seen.append((n, threading.get_ident())))
        for n in range(50):
            client.sio.eio._receive_packet(packet.Packet(packet.MESSAGE, f'2["probe",{n}]'))
        assert seen == [(n, threading.get_ident()) for n in range(50)]
        assert client.echo("still serving") == "still serving"
    finally:
        client.close()


def test_socketio_client_without_the_pure_python_check_still_rejects_invalid_utf8():
    """The Locust user's socket.io client skips websocket-client's byte-by-byte UTF-8 check
    (clients/socketio/client.py ThreadedSocketIOClient); a text frame that is not UTF-8 must still
    fail in recv(), which decodes it."""
    import socket

    import websocket

    from clients.socketio.client import ThreadedSocketIOClient

    options = ThreadedSocketIOClient.WEBSOCKET_OPTIONS
    assert options["skip_utf8_validation"] is True
    near, far = socket.socketpair()
    try:
        ws = websocket.WebSocket(**options)
        ws.sock, ws.connected = near, True
        far.sendall(b"\x81\x04ok\xc3\xa9")  # FIN, text, 4 bytes: "oké"
        assert ws.recv() == "oké"
        far.sendall(b"\x81\x02\xff\xfe")  # text frame, not UTF-8
        with pytest.raises(UnicodeDecodeError):
            ws.recv()
    finally:
        near.close()
        far.close()


@pytest.mark.parametrize("push_client", implementations("subscribe"), indirect=True)
def test_synthetic_feed_resumes_after_the_last_event_id(push_client):
    with push_client.subscribe("synthetic", rate=0, count=10) as stream:
        first = []
        for event in stream:
            first.append(event)
            if len(first) == 3:
                break
    assert _ids(first) == ["1", "2", "3"]
    with push_client.subscribe("synthetic", last_event_id=first[-1].id, rate=0, count=10) as stream:
        rest, end = _messages(stream, "synthetic")
    assert _ids(rest) == [str(n) for n in range(4, 11)]
    assert end.data["sent"] == 7


# The subscriptions that share one connection (WebSocket, socket.io): an SSE stream is a request of its own.
ONE_CONNECTION = implementations("subscribe", where=lambda impl: PROTOCOLS[impl.protocol].messaging)
RACES = 1000


@pytest.mark.parametrize("name", ONE_CONNECTION)
def test_no_message_of_a_feed_follows_the_unsubscribe_reply_when_the_feed_ends_meanwhile(lab, name):
    """ws-protocol.md: no message of the feed follows the unsubscribe reply, also
    when the feed ended on its own while the unsubscribe was on its way (the reply
    is then the error "not subscribed"). An end message sent after that reply is
    taken for the next subscription's end: it looks empty, and the one after is
    refused "already subscribed". The Go services did so about once in 500-2,000
    times (make test, 2026-11-28, a run on four workers: the resume test above got
    no events); the race is timing, so this repeats it RACES times: the end is due
    one event (0-0.2 ms) after the one read, about when the unsubscribe arrives."""
    client = lab.client(name)  # unwatched: the repetition is the test, not the messages' schema
    try:
        for attempt in range(RACES):
            with client.subscribe("synthetic", rate=(5000, 10000, 20000, 0)[attempt % 4], count=2) as stream:
                next(iter(stream))
            with client.subscribe("synthetic", rate=0, count=2) as stream:
                events = list(stream)
            assert [(e.event, e.id) for e in events] == [("synthetic", "1"), ("synthetic", "2"), ("end", None)], \
                f"attempt {attempt}: {[(e.event, e.id, e.data) for e in events]}"
    finally:
        client.close()


def test_a_python_feeds_end_goes_out_once_its_subscription_is_gone():
    """services/common/feeds.py: a client that subscribes again on reading a
    feed's end must open a new subscription, never meet the old one ("already
    subscribed"). The connection's send records, at the moment the end is sent,
    whether the subscription is still there (where a subscribe arriving then
    would find it); no server, no timing."""
    push = WebSocketPush(collection=lambda: None)
    seen: list[bool] = []
    ended = threading.Event()

    def send(text: str) -> None:
        if json.loads(text).get("event") == "end":
            seen.append("synthetic" in conn.subscriptions)
            ended.set()
    conn = push.connect(send)
    push.subscribe(conn, {"feed": "synthetic", "rate": 0, "count": 2})
    conn.reply("{}")  # starts the feed, as a server does after the reply
    assert ended.wait(10), "no end message"
    assert seen == [False]
    push.subscribe(conn, {"feed": "synthetic", "rate": 0, "count": 2})  # again: accepted


@pytest.mark.parametrize("push_client", implementations("subscribe"), indirect=True)
def test_changes_feed_carries_every_writers_changes_and_resumes(push_client, lab, seeded):
    """Changes made through another implementation's CRUD (another process) arrive
    in order as created/updated/deleted; resuming after the first id replays the rest."""
    writer_name = next(i.name for i in lab.implementations if i.serves("create", "update", "delete"))
    writer = _client(lab, writer_name)
    try:
        with push_client.subscribe("changes") as stream:
            created = writer.create(seeded[0])
            writer.update(created["id"], seeded[1])
            writer.delete(created["id"])
            events = []
            for event in stream:
                events.append(event)
                if len(events) == 3:
                    break
    finally:
        writer.close()
    assert [e.event for e in events] == ["changes"] * 3
    assert [e.data["type"] for e in events] == ["created", "updated", "deleted"]
    assert [e.data["id"] for e in events] == [created["id"]] * 3
    assert events[0].data["game"] == created
    assert events[1].data["game"] == {"id": created["id"], **seeded[1]}
    assert events[2].data["game"] is None
    assert len({e.id for e in events}) == 3
    with push_client.subscribe("changes", last_event_id=events[0].id) as stream:
        replayed = []
        for event in stream:
            replayed.append(event)
            if len(replayed) == 2:
                break
    assert [e.id for e in replayed] == [e.id for e in events[1:]]
    assert [e.data for e in replayed] == [e.data for e in events[1:]]


MALFORMED = {
    "unknown feed": dict(feed="nope"),
    "unknown parameter": dict(feed="synthetic", size=5),
    "parameter of another feed": dict(feed="changes", batch=5),
    "batch zero": dict(feed="synthetic", batch=0),
    "batch over the limit": dict(feed="synthetic", batch=1001),
    "negative rate": dict(feed="synthetic", rate=-1),
    "not a number": dict(feed="synthetic", count="ten"),
    "operator as value": dict(feed="synthetic", batch={"$gt": 0}),
    "Last-Event-ID not a number": dict(feed="synthetic", last_event_id="x7", count=10),
    "Last-Event-ID past the count": dict(feed="synthetic", last_event_id="11", count=10),
    "Last-Event-ID not a resume token": dict(feed="changes", last_event_id="{'$ne': null}"),
    "Last-Event-ID no change stream made": dict(feed="changes", last_event_id="00ABCDEF"),
}


@pytest.mark.parametrize("case", MALFORMED)
@pytest.mark.parametrize("push_client", implementations("subscribe"), indirect=True)
def test_malformed_subscription_gets_invalid_argument_and_server_keeps_serving(push_client, case):
    params = dict(MALFORMED[case])
    feed = params.pop("feed")
    if isinstance(push_client, SseClient) and isinstance(params.get("batch"), dict):
        params["batch"] = '{"$gt": 0}'  # a query parameter is a string
    with pytest.raises(ContractError) as raised:
        push_client.subscribe(feed, **params).close()
    assert raised.value.code == INVALID_ARGUMENT, raised.value
    push_client.health()
    with push_client.subscribe("synthetic", rate=0, count=2) as stream:
        assert _ids(_messages(stream, "synthetic")[0]) == ["1", "2"]


@pytest.mark.parametrize("impl", subscribers("sse"))
def test_sse_raw_requests_get_the_contracts_errors(impl, lab):
    client = _client(lab, impl)
    try:
        for query in ("feed=synthetic&feed=changes", "feed=synthetic&batch=%ff", "feed", "feed=synthetic&count=1e3"):
            with pytest.raises(ContractError) as raised:
                client.open_stream(query).close()
            assert raised.value.code == INVALID_ARGUMENT, query
            assert raised.value.native == 400
        assert client.http.post(f"{client.endpoint}/events?feed=synthetic").status_code == 405
        assert client.http.get(f"{client.endpoint}/nowhere").status_code == 404
        client.health()
    finally:
        client.close()


@pytest.mark.parametrize("impl", subscribers("sse"))
def test_sse_over_http2_cleartext(impl, lab):
    client = watched.watch(SseClient(lab.endpoints[impl], http2=True))
    try:
        with client.subscribe("synthetic", batch=2, rate=0, count=5) as stream:
            assert stream.http_version == "HTTP/2"
            messages, end = _messages(stream, "synthetic")
        assert _ids(messages) == ["1", "2", "3", "4", "5"]
        with pytest.raises(ContractError) as raised:
            client.subscribe("nope")
        assert raised.value.code == INVALID_ARGUMENT
    finally:
        client.close()


@pytest.mark.parametrize("impl", subscribers("ws"))
def test_websocket_unsubscribe_stops_the_feed(impl, lab):
    client = _client(lab, impl)
    try:
        stream = client.subscribe("synthetic", rate=100)
        first = next(iter(stream))
        assert first.id == "1"
        stream.close()  # unsubscribes: no message of the feed follows the reply
        time.sleep(0.1)  # ten messages' time at the feed's rate
        assert client.echo("after") == "after"
        assert [m for m, _ in client.pushed if m.get("event") == "synthetic"] == []
        client.subscribe("synthetic", rate=1)
        with pytest.raises(ContractError) as raised:
            client.subscribe("synthetic")
        assert raised.value.code == INVALID_ARGUMENT  # one subscription per feed
        assert client.echo({"still": "serving"}) == {"still": "serving"}
    finally:
        client.close()


@pytest.mark.parametrize("impl", subscribers("ws"))
def test_unsubscribing_while_the_feed_pushes_keeps_the_connection(impl, lab):
    """An unsubscribe that arrives while the server is writing a push: the reply
    comes and the connection serves on (coder/websocket closes a connection
    whose write's context is cancelled mid-write; the Go service cancelled the
    feed's writes on unsubscribe and the client saw 1005). An unpaced feed of
    large messages keeps a write under way nearly all the time; 40 rounds. Not
    watched: the feed's contents are checked by the tests above, and checking
    these thousands of 200-event messages took a minute per implementation."""
    client = lab.client(impl)
    try:
        for round_ in range(40):
            stream = client.subscribe("synthetic", rate=0, batch=200)
            next(iter(stream))
            stream.close()  # unsubscribes while messages are being written
            assert client.echo(round_) == round_
    finally:
        client.close()


@pytest.mark.parametrize("impl", implementations("echo"))
def test_echo_returns_the_payload_to_its_sender(impl, client_of):
    client = client_of(impl)
    # Integers within ±2^53: JSON numbers beyond a double's precision do not survive
    # a JavaScript server (RFC 8259, section 6), so no ns timestamps here.
    for payload in ({"sent_us": time.time_ns() // 1000, "pad": "x" * 100}, [1, "two", None], "text", 0, None, "😀"):
        assert client.echo(payload) == payload


@pytest.mark.parametrize("impl", implementations("broadcast"))
def test_broadcast_reaches_every_other_connection(impl, lab):
    sender, first, second = (_client(lab, impl) for _ in range(3))
    try:
        payload = {"sent_us": time.time_ns() // 1000, "text": "to all"}  # within 2^53 (see echo)
        result = sender.broadcast(payload)
        assert result["delivered"] >= 2  # the session's other clients may be connected too
        for receiver in (first, second):
            event = receiver.next_push()
            assert (event.event, event.data) == ("broadcast", payload)
        assert sender.pushed == type(sender.pushed)()  # not to its sender
        assert sender.echo(1) == 1
    finally:
        for client in (sender, first, second):
            client.close()


def test_subscribing_does_not_change_stored_data(lab, seeded, fingerprint):
    before = fingerprint()
    for impl in (i for i in lab.implementations if i.serves("subscribe")):
        client = _client(lab, impl.name)
        try:
            with pytest.raises(ContractError):
                client.subscribe("changes", last_event_id="00ABCDEF").close()
            with client.subscribe("changes"):
                pass
        finally:
            client.close()
    assert fingerprint() == before
    assert len(dataset.documents(seeded)) == len(seeded)


# --- the push load client (load/push-client), briefly, against real services ---

def _push_run(lab, impl, transport, tmp_path, **params):
    from lab.host import pinning
    from load import push
    from load.rawsamples import read_samples
    r = push.Run("test", transport, params.get("clients", 3), params.get("batch", 5), params.get("rate", 200),
                 params.get("seconds", 1.5))
    raw = tmp_path / f"{transport}.csv"
    row = push.run(push.push_client(), lab.endpoints[impl], lab.pids[impl], r, raw, pinning.plan(False))
    return r, row, read_samples(raw, (row["window_start_us"], row["window_end_us"]))


def _check_push_run(r, row, samples):
    assert row["errors"] == 0, row["errors_by_kind"]
    assert row["receiving_clients"] == r.clients
    # paced: at most rate × seconds messages per subscription in the window (+1: the first is due at once; the
    # server's clock starts after the window opens, and a message read after it closes is not counted)
    assert row["window_end_us"] - row["window_start_us"] == round(r.seconds * 1e6)
    assert 0 < row["messages"] <= r.clients * (r.rate * r.seconds + 1)
    assert row["events"] == r.batch * row["messages"]
    assert row["latency_ms"]["p50"] > 0  # received after the server stamped it, on the same clock
    # the raw samples over the same window, as the load instrument reads them: one latency and one ops sample
    # per message
    assert samples.histogram.get_total_count() == row["messages"]
    assert samples.ops == row["events"] <= samples.ops_total
    assert not samples.errors


@pytest.mark.parametrize("impl", subscribers("ws"))
def test_push_load_client_over_websocket(impl, lab, tmp_path):
    r, row, samples = _push_run(lab, impl, "ws", tmp_path)
    _check_push_run(r, row, samples)
    assert samples.connect.get_total_count() == r.clients  # each subscription's reply


@pytest.mark.parametrize("transport", ["sse-h1", "sse-h2c", "poll"])
@pytest.mark.parametrize("impl", subscribers("sse"))
def test_push_load_client_over_sse_and_polling(impl, transport, lab, tmp_path):
    r, row, samples = _push_run(lab, impl, transport, tmp_path, batch=1 if transport == "poll" else 5,
                                seconds=1.0)
    if transport == "poll":  # unpaced: one message per request, as many as answered
        assert row["errors"] == 0 and row["receiving_clients"] == r.clients and row["events"] == row["messages"] > 0
        assert samples.histogram.get_total_count() == row["messages"]
    else:
        _check_push_run(r, row, samples)
        assert samples.connect.get_total_count() == r.clients  # ": subscribed"


@pytest.mark.parametrize("impl", subscribers("ws", "sse"))  # the push client speaks these two
def test_push_load_client_counts_a_refused_subscription_as_an_error(impl, lab, tmp_path):
    transport = "ws" if PROTOCOL[impl] == "ws" else "sse-h1"
    _, row, samples = _push_run(lab, impl, transport, tmp_path, clients=2, batch=0, seconds=1.0)  # batch 1..1000
    assert row["messages"] == 0
    assert row["errors"] == 2, row
    assert set(row["errors_by_kind"]) == {"subscribe" if transport == "ws" else "status_400"}
    assert sum(samples.errors.values()) == 2


def test_push_plan_is_bounded_and_pathan_has_every_protocol():
    import studies
    from load import push
    scenarios = {name: studies.get(name).scenario() for name in ("timeplus", "pathan")}
    pathan_s, timeplus_s = (studies.get(n).published()["scenario"] for n in ("pathan", "timeplus"))
    default, quick = push.plan(scenarios, "all", False, None), push.plan(scenarios, "all", True, None)
    # warm-ups and windows; the rest is start-up (gRPC streaming beside Timeplus's pair, issue 52: 555 s and 126 s;
    # SSE over HTTP/2 over TLS, issue 53: 653 s and 153 s)
    assert default.seconds() <= 700 and quick.seconds() <= 160
    pathan = [(name, r) for name, r in default.ordered() if r.scenario == "pathan"]
    assert {r.transport for _, r in pathan} == {"ws", "sse-h1", "poll"}
    # SSE over HTTP/2 over TLS is measured on the http=h2 subject, and only there
    assert {name.endswith("+h2") for name, r in default.ordered() if r.transport == "sse-h2"} == {True}
    assert all(not name.endswith("+h2") for name, r in default.ordered() if r.transport != "sse-h2")
    assert sorted({r.clients for _, r in pathan}) == pathan_s["clients"]
    tests = {(r.scenario, r.transport, r.clients, r.batch) for _, r in default.ordered()}
    for transport in ("sse-h1", "sse-h2", "sse-h2c", "ws", "grpc"):
        assert {b for s, t, c, b in tests if s == "timeplus-batch" and t == transport} == \
            set(timeplus_s["batch"]["batches"])
        assert {c for s, t, c, b in tests if s == "timeplus-concurrency" and t == transport} == \
            set(timeplus_s["concurrency"]["clients"])
    # interleaved: each study's points in the order the studies were added
    order = [r.scenario for _, r in default.ordered()]
    assert order.index("pathan") > max(i for i, s in enumerate(order) if s.startswith("timeplus"))


# --- SSE over HTTP/2 over TLS (Timeplus's browser tab): the sse-h2 way on the http=h2 subjects ---

H2_SUBJECTS = [f"{p.values[0]}+h2" for p in subscribers("sse") if p.values[0] and "+" not in p.values[0]]


@pytest.fixture(scope="module")
def h2_push_lab():
    from lab.stack import running_lab
    with running_lab(H2_SUBJECTS, change_streams=False) as lab:
        yield lab


@pytest.mark.parametrize("subject", H2_SUBJECTS)
def test_push_load_client_over_sse_over_http2_over_tls(subject, h2_push_lab, tmp_path):
    from lab.environment import client_options
    from lab.host import pinning
    from lab.registry import variant
    from load import push
    from load.rawsamples import read_samples
    lab = h2_push_lab
    assert push.subject(subject.removesuffix("+h2"), "sse-h2") == subject
    assert "sse-h2" in push.transports(subject.removesuffix("+h2"))
    assert lab.endpoints[subject].startswith("https://")
    r = push.Run("test", "sse-h2", 3, 5, 200, 1.0)
    ca = client_options(variant(subject))["ca_file"]
    row = push.run(push.push_client(), lab.endpoints[subject], lab.pids[subject], r, tmp_path / "h2.csv",
                   pinning.plan(False), ca)
    _check_push_run(r, row, read_samples(tmp_path / "h2.csv", (row["window_start_us"], row["window_end_us"])))
    # the lab's CA is what makes it trusted: without it every subscription fails to connect
    refused = push.run(push.push_client(), lab.endpoints[subject], lab.pids[subject], r, tmp_path / "no-ca.csv",
                       pinning.plan(False))
    assert refused["messages"] == 0 and refused["errors_by_kind"] == {"connect": 3}, refused
    assert any("certificate" in line for line in refused["error_causes"]), refused["error_causes"]
