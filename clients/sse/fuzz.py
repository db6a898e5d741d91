"""SSE: subscriptions drawn from contract/push.md and push.schema.json (feed
names, the synthetic feed's parameters in and out of their ranges, parameters
unknown or repeated, Last-Event-ID values, methods and paths), sent as raw
HTTP requests. Each must get the contract's error (a 4xx with the REST error
body: 400 INVALID_ARGUMENT for a malformed subscription, 404 an unknown path,
405 another method) or a stream that confirms the subscription and whose
first events validate against push.schema.json; never a 5xx. A push service
stores nothing: the model checks that no case changed the collection."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx
from hypothesis import strategies as st

from clients.base import CALL_TIMEOUT
from clients.fuzzing import Model, Tally, hostile_text
from clients.http import check_http, http2_client, require_http2
from clients.sse.client import EventStream
from contract.codec import loads
from contract.errors import INVALID_ARGUMENT
from contract.validate import push_schema, sse_event_errors
from services.common.feeds import PUSH

EVENTS_READ = 3  # at most this many events of a stream are read, then it is closed


@dataclass
class Case:
    kind: str  # "valid", "invalid" (must be 400 INVALID_ARGUMENT), "either" (a stream or that 400), "route"
    query: list[tuple[str, str]] = field(default_factory=list)
    last_event_id: str | None = None
    method: str = "GET"
    path: str = PUSH["sse_path"]
    feed: str | None = None
    params: dict[str, int] = field(default_factory=dict)

    def target(self) -> str:
        return self.path + "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in self.query)

    def __str__(self) -> str:
        return f"{self.kind} {self.method} {self.target()[:200]} Last-Event-ID={self.last_event_id!r}"


LIMITS = PUSH["synthetic_params"]  # name -> {min, max, default}


def header_value(text: str) -> str:
    """`text` as the fuzzer sends it in a header: printable characters only, no surrounding space."""
    return "".join(c for c in text if c.isprintable()).strip() or "x"


def _in_range(name: str) -> st.SearchStrategy[int]:
    return st.integers(LIMITS[name]["min"], LIMITS[name]["max"])


def _valid() -> st.SearchStrategy[Case]:
    def synthetic(params: dict[str, int], resume: int | None) -> Case:
        last = None
        if resume is not None and params.get("count", 0) > 0:
            last = str(resume % (params["count"] + 1))
        return Case("valid", [("feed", "synthetic"), *((k, str(v)) for k, v in params.items())], last,
                    feed="synthetic", params=params)
    params = st.fixed_dictionaries({}, optional={name: _in_range(name) for name in LIMITS})
    return st.one_of(
        st.builds(synthetic, params, st.none() | st.integers(0, 10**9)),
        st.just(Case("valid", [("feed", "changes")], feed="changes")))


def _invalid() -> st.SearchStrategy[Case]:
    feeds = push_schema()["$defs"]["Feed"]["enum"]
    not_a_feed = hostile_text(20).filter(lambda s: s not in feeds)
    out_of_range = st.sampled_from(sorted(LIMITS)).flatmap(lambda name: st.tuples(st.just(name), st.one_of(
        st.integers(max_value=LIMITS[name]["min"] - 1), st.integers(min_value=LIMITS[name]["max"] + 1)).map(str)))
    not_a_number = st.tuples(st.sampled_from(sorted(LIMITS)), hostile_text(12).filter(
        lambda s: not (s.isascii() and s.isdigit())))
    unknown = st.tuples(hostile_text(12).filter(lambda s: s.strip() and s not in ("feed", *LIMITS)), hostile_text(12))
    return st.one_of(
        not_a_feed.map(lambda f: Case("invalid", [("feed", f)])),
        st.just(Case("invalid", [])),  # no feed
        out_of_range.map(lambda kv: Case("invalid", [("feed", "synthetic"), kv])),
        not_a_number.map(lambda kv: Case("invalid", [("feed", "synthetic"), kv])),
        unknown.map(lambda kv: Case("invalid", [("feed", "synthetic"), kv])),
        st.sampled_from(sorted(LIMITS)).map(lambda n: Case("invalid", [("feed", "changes"), (n, "1")])),
        st.sampled_from(["feed", *LIMITS]).map(lambda n: Case("invalid", [("feed", "synthetic"), (n, "1"), (n, "2")]
                                                              if n != "feed" else [("feed", "synthetic")] * 2)),
        st.tuples(st.integers(1, 1000), st.integers(1, 10**6)).map(  # past the count
            lambda t: Case("invalid", [("feed", "synthetic"), ("count", str(t[0]))], str(t[0] + t[1]))),
        # judged as sent (header_value): " 0" or "5\x00" is sent as 0 or 5, which resume within count 5
        hostile_text(30).map(header_value).filter(lambda s: not (s.isascii() and s.isdigit() and len(s) <= 10)).map(
            lambda last: Case("invalid", [("feed", "synthetic"), ("count", "5")], last)),
        hostile_text(40).filter(lambda s: s.isascii() and s.isprintable() and not s.isalnum()).map(
            lambda last: Case("invalid", [("feed", "changes")], last)),  # no resume token's spelling
        st.from_regex(r"[0-9A-Za-z]{1,60}", fullmatch=True).map(
            lambda last: Case("invalid", [("feed", "changes")], last)),  # a spelling no change stream made
    )


def _either() -> st.SearchStrategy[Case]:
    """Spellings push.md leaves to the implementation (leading zeros, signs,
    spaces, Last-Event-ID with a count of 0): a stream or the 400, nothing else."""
    odd = st.sampled_from(["05", "+5", " 5", "5 ", "0x5", "5.0", "1e2", "٥", "00000000001"])
    return st.one_of(
        st.tuples(st.sampled_from(sorted(LIMITS)), odd).map(lambda kv: Case("either", [("feed", "synthetic"), kv])),
        st.integers(0, 10**10).map(lambda n: Case("either", [("feed", "synthetic")], str(n))))


def _routes() -> st.SearchStrategy[Case]:
    return st.one_of(
        st.sampled_from(["POST", "PUT", "DELETE", "PATCH"]).map(
            lambda m: Case("route", [("feed", "synthetic")], method=m)),
        hostile_text(20).map(lambda p: Case("route", [("feed", "synthetic")], path="/" + quote(p, safe="") + "x")))


def fuzzer(endpoint: str, seeded_ids: Sequence[str], http: str | None = None, ca_file: str | None = None,
           compression: str | None = None):
    """`http`, `ca_file` (lab/axes.py): the subject's HTTP version and CA; over HTTP/2 each stream
    is checked to be HTTP/2 (clients/http.py)."""
    version = check_http(http, ca_file)
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
    client = httpx.Client(timeout=httpx.Timeout(CALL_TIMEOUT), verify=verify)

    def connection() -> httpx.Client:
        # Over HTTP/2 a connection per case: httpcore 1.0 closes a stream read in part (a case that
        # stops reading a feed) without RST_STREAM and without returning its unread DATA to the
        # connection's flow-control window, so a long feed left behind stalls every later stream
        # of the connection (ReadTimeout), which is the client's fault, not the service's.
        return client if version == "h1" else http2_client(version, httpx.Timeout(CALL_TIMEOUT), ca_file)

    base = endpoint.rstrip("/")
    strategy = st.one_of(_valid(), _invalid(), _either(), _routes())

    def execute(case: Case, tally: Tally, model: Model) -> None:
        headers = {"accept": "text/event-stream"}
        if case.last_event_id is not None:  # a header value: printable, no surrounding space, as UTF-8
            case.last_event_id = header_value(case.last_event_id)
            headers["last-event-id"] = case.last_event_id.encode("utf-8", "replace")  # type: ignore[assignment]
        http_client = connection()
        try:
            _execute(http_client, case, headers, tally)
        finally:
            if http_client is not client:
                http_client.close()
        model.check(case)

    def _execute(http_client: httpx.Client, case: Case, headers: dict[str, str], tally: Tally) -> None:
        with http_client.stream(case.method, base + case.target(), headers=headers) as response:
            if version != "h1":
                require_http2(response, version)
            status = response.status_code
            tally.saw(f"{case.kind} {status}")
            if status >= 500:
                tally.server_errors += 1
                tally.fail(case, f"HTTP {status}: {response.read()[:300]!r}")
            elif status == 200:
                _stream(case, response, tally)
            else:
                _refused(case, response, tally)

    return strategy, execute, client.close


def _refused(case: Case, response: httpx.Response, tally: Tally) -> None:
    status = response.status_code
    body = response.read()
    expected = {"route": (404, 405), "invalid": (400,), "either": (400,), "valid": ()}[case.kind]
    if status not in expected:
        tally.fail(case, f"HTTP {status} (expected {'a stream' if case.kind == 'valid' else expected}): {body[:200]!r}")
        return
    try:
        error = loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        tally.fail(case, f"HTTP {status} without the contract's error body: {body[:200]!r}")
        return
    code = error.get("code") if isinstance(error, dict) else None
    if response.headers.get("content-type", "").split(";")[0] != "application/json" or (
            status == 400 and code != INVALID_ARGUMENT) or not isinstance(error.get("message"), str):
        tally.fail(case, f"HTTP {status} {response.headers.get('content-type')}: not the contract's error: {error}")


def _stream(case: Case, response: httpx.Response, tally: Tally) -> None:
    if case.kind in ("invalid", "route"):
        tally.fail(case, "a stream for a request the contract refuses")
    if response.headers.get("content-type", "").split(";")[0] != "text/event-stream":
        tally.fail(case, f"a 200 of {response.headers.get('content-type')!r}, not text/event-stream")
        return
    stream = EventStream(response, None)
    stream.wait_subscribed()
    if case.feed == "changes" or case.kind == "either":
        return  # no change happens meanwhile; an odd spelling's parameters are unknown here
    batch, count, rate = (case.params.get(name, LIMITS[name]["default"]) for name in ("batch", "count", "rate"))
    # Read what arrives within ~20 ms at the feed's pace, then close (or to the end, when that is sooner).
    reading = EVENTS_READ if rate == 0 else min(EVENTS_READ, 1 + int(0.02 * rate))
    first = int(case.last_event_id) + 1 if case.last_event_id is not None else 1
    expected_ids = [str(n) for n in range(first, first + reading) if not count or n <= count]
    to_the_end = bool(count) and first + reading - 1 >= count
    seen = 0
    for event in stream:
        problems = sse_event_errors(event.event, event.data, event.id)
        if problems:
            tally.fail(case, f"event outside push.schema.json: {problems[:3]}")
        if event.event == "end":
            if seen != len(expected_ids) or event.data.get("sent") != seen:
                tally.fail(case, f"ended after {seen} messages, sent={event.data.get('sent')}: expected ids "
                           f"{expected_ids}")
            return
        if event.event != "synthetic" or event.id != expected_ids[seen] or len(event.data) != batch:
            tally.fail(case, f"event {event.event} id {event.id} of {len(event.data)} events: expected "
                       f"synthetic id {expected_ids[seen] if seen < len(expected_ids) else None} of {batch}")
            return
        seen += 1
        if seen == len(expected_ids) and not to_the_end:
            return  # enough read: the stream is closed here
    tally.fail(case, f"the stream ended after {seen} messages without its end event")
