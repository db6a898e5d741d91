"""The lab's Locust users: what `locust -f load/locustfile.py` loads, in a
master, its workers, or one local process (load/engine.py starts them; a
person may start them by hand, on several hosts: docs/load.md).

One User class, LabUser, drives any implementation with any operation of
the workload table (lab/workload.py) through that protocol's own client as
its descriptor's `load_client` makes it for gevent (clients/<protocol>/load.py):
the same calls, and so the same request bytes, as the latency suite.

Timing: every call is timed here with a monotonic nanosecond clock into HDR
histograms (load/histograms.py), per process; Locust's own statistics (which
round to whole milliseconds) are fed too, for its web UI. Each process keeps
its steady window: it opens `--lab-warmup` s after the process's first answer
(for messaging protocols, not before all its users are connected) and lasts
`--lab-steady` s; only answers that end inside it count. At the test's stop
every worker sends its histograms and counts to the master (a custom message,
"lab_result"); the master merges them and writes one JSON file
(`--lab-result`), the runner's input.

Models:
- closed: each user calls, waits for the answer, calls again.
- open: the process's share of `--lab-rate` requests/s is scheduled at fixed
  intervals; a free user takes the next scheduled send, sleeps until it is
  due, sends, and the latency counts from the *scheduled* start, so a send
  that had to wait for a free connection (the service was slow) carries that
  wait (no coordinated omission, as wrk2 corrects it). A user that slept
  until its send was due and woke late records the lateness: the generator's
  own lag, which the invalid-run rule reads.
- calls (`--lab-calls N`): each user connects, makes N calls and stops; the
  run ends when every user has (connection setup counted in each call).
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import socket
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import gevent
from locust import User, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from clients.protocols import PROTOCOLS
from contract.errors import ContractError
from lab import workload
from load import histograms


class _Counted:
    """Application bytes this process's sockets sent and received (TCP
    payload: HTTP headers and bodies, WebSocket frames; not TCP/IP headers),
    counted in the socket class gevent's patching installed."""
    sent = 0
    received = 0

    @classmethod
    def install(cls) -> None:
        sock = socket.socket
        send, sendall, recv, recv_into = sock.send, sock.sendall, sock.recv, sock.recv_into

        def counted_send(self: Any, data: Any, *a: Any, **kw: Any) -> int:
            n = send(self, data, *a, **kw)
            cls.sent += n
            return n

        def counted_sendall(self: Any, data: Any, *a: Any, **kw: Any) -> None:
            sendall(self, data, *a, **kw)
            cls.sent += len(data)

        def counted_recv(self: Any, *a: Any, **kw: Any) -> bytes:
            data = recv(self, *a, **kw)
            cls.received += len(data)
            return data

        def counted_recv_into(self: Any, buffer: Any, *a: Any, **kw: Any) -> int:
            n = recv_into(self, buffer, *a, **kw)
            cls.received += n
            return n

        sock.send, sock.sendall, sock.recv, sock.recv_into = (counted_send, counted_sendall, counted_recv,
                                                              counted_recv_into)


_Counted.install()

# Every protocol's load client, imported before any connection is made (a library's
# gevent support may need initialising before its first connection).
CONNECT = {name: p.load_connect() for name, p in PROTOCOLS.items() if p.load_client}
RESULT_MESSAGE = "lab_result"
DONE_MESSAGE = "lab_user_done"
WINDOW_MESSAGE = "lab_window_closed"
# How much longer than --lab-duration the stop waits for a process whose window closes late:
# one that answered late (a worker slow to start on a busy machine) still gets its whole window.
LATE_WINDOW_S = 15.0


def _targets_default() -> str:
    return os.environ.get("LAB_LOAD_TARGETS", "{}")


@events.init_command_line_parser.add_listener
def _arguments(parser: Any) -> None:
    targets = json.loads(_targets_default())
    parser.add_argument("--lab-targets", default=_targets_default(), include_in_web_ui=False,
                        help="JSON {implementation: {protocol, endpoint, options?}} (default: $LAB_LOAD_TARGETS)")
    parser.add_argument("--lab-impl", default=next(iter(targets), ""), choices=sorted(targets) or None,
                        help="the implementation to drive")
    parser.add_argument("--lab-operation", default="fetch-one", choices=workload.NAMES,
                        help="the operation each user repeats (lab/workload.py)")
    parser.add_argument("--lab-model", default="closed", choices=("closed", "open"),
                        help="closed: back to back; open: --lab-rate requests/s in all, latency from the schedule")
    parser.add_argument("--lab-rate", type=float, default=0.0, help="open model: requests/s over all users")
    parser.add_argument("--lab-warmup", type=float, default=0.5, help="s from the first answer to the window")
    parser.add_argument("--lab-steady", type=float, default=2.0, help="the steady window, s")
    parser.add_argument("--lab-connect-s", type=float, default=10.0, include_in_web_ui=False,
                        help="messaging: the window waits this long at most for every user's connection")
    parser.add_argument("--lab-duration", type=float, default=0.0, include_in_web_ui=False,
                        help="stop the test after this many s (0: when stopped, e.g. from the web UI)")
    parser.add_argument("--lab-calls", type=int, default=0, include_in_web_ui=False,
                        help="each user makes this many calls, then stops (0: until the test stops)")
    parser.add_argument("--lab-think-ms", type=float, default=0.0, include_in_web_ui=False,
                        help="a user's pause between its calls (default 0: back to back)")
    parser.add_argument("--lab-first-spread-ms", type=float, default=0.0, include_in_web_ui=False,
                        help="a user's first call at a random moment within this many ms of its connection")
    parser.add_argument("--lab-hold-s", type=float, default=0.0, include_in_web_ui=False,
                        help="with --lab-calls: a user done with its calls keeps its connection open until "
                             "this many s after the test began")
    parser.add_argument("--lab-broadcasts", type=int, default=0, include_in_web_ui=False,
                        help="the broadcast test: the first user sends this many broadcasts, "
                             "--lab-interval-ms apart, once every other user is connected; the others receive")
    parser.add_argument("--lab-interval-ms", type=float, default=1000.0, include_in_web_ui=False)
    parser.add_argument("--lab-timeout", type=float, default=10.0, include_in_web_ui=False,
                        help="per call, s")
    parser.add_argument("--lab-share-connection", action="store_true", include_in_web_ui=False,
                        help="every user of this process on one connection, each call a stream of it "
                             "(a subject whose client multiplexes: HTTP/2); default: a connection per user")
    parser.add_argument("--lab-result", default="", include_in_web_ui=False,
                        help="the master (or the local process) writes the merged result here")


def _dial(endpoint: str) -> str:
    """The endpoint with its host replaced by $LAB_LOAD_DIAL, this process's
    own (a worker in a network namespace dials its link's host side)."""
    dial = os.environ.get("LAB_LOAD_DIAL")
    if not dial:
        return endpoint
    if "://" not in endpoint:  # a bare host:port
        return f"{dial}:{endpoint.rsplit(':', 1)[1]}"
    parts = urlsplit(endpoint)
    return urlunsplit(parts._replace(netloc=f"{dial}:{parts.port}"))


class Recorder:
    """This process's figures: histograms and counts of its steady window."""

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, options: Any) -> None:
        self.options = options
        self.messaging = (PROTOCOLS[_protocol(options)].messaging
                          if options is not None and getattr(options, "lab_impl", "") else False)
        self.latency = histograms.new_histogram()     # answers ending in the window
        self.service = histograms.new_histogram()     # open model: from the actual send
        self.connect = histograms.new_histogram()     # connection set-up, every user
        self.wake_lag = histograms.new_histogram()    # open model: how late a due send woke
        self.live = histograms.new_histogram()        # every answer since the last report (web UI)
        self.ops = 0              # answered correctly in the window
        self.ops_total = 0        # ... in the whole run
        self.errors: Counter[str] = Counter()         # in the window
        self.errors_total: Counter[str] = Counter()
        self.first_answer_ns: int | None = None
        self.window_ns: tuple[int, int] | None = None
        self.connected = 0
        self.users_started = 0
        self.users_done = 0
        self.call_span_ns: list[int] = []             # calls model: [first start, last end]
        self.schedule_t0: float | None = None
        self.began = time.monotonic()
        self.bytes_at_start = (_Counted.sent, _Counted.received)
        self.tickets = itertools.count()
        self.scheduled_in_window = 0
        self.receipts: dict[int, Any] = {}            # broadcast test: n -> histogram of receive - send
        self.delivered: dict[int, int] = {}           # ... the server's count for broadcast n (the sender's)

    # The window ---------------------------------------------------------------

    def expected_users(self, environment: Any) -> int:
        runner = environment.runner
        counts = getattr(runner, "target_user_classes_count", None) or {}
        return sum(counts.values()) or (environment.parsed_options.num_users or 0)

    def _open_window(self, now_ns: int, environment: Any) -> None:
        o = self.options
        if self.first_answer_ns is None:
            self.first_answer_ns = now_ns
        if self.window_ns is not None or o.lab_calls:
            return
        if now_ns < self.first_answer_ns + int(o.lab_warmup * 1e9):
            return
        # Messaging: not before every user holds its connection, but no later than
        # --lab-connect-s after the first answer (a user still connecting then is
        # counted out, and the run says how many held one: the invalid-run rule).
        connecting = self.messaging and self.connected < self.expected_users(environment)
        if connecting and now_ns < self.first_answer_ns + int((o.lab_warmup + o.lab_connect_s) * 1e9):
            return
        self.window_ns = (now_ns, now_ns + int(o.lab_steady * 1e9))
        if o.lab_duration:  # the master's schedule (_control) stops once every window has closed
            gevent.spawn_later(o.lab_steady, environment.runner.send_message, WINDOW_MESSAGE, {})

    def inside(self, end_ns: int) -> bool:
        if self.options.lab_calls:
            return True  # the calls model counts every call
        return self.window_ns is not None and self.window_ns[0] <= end_ns < self.window_ns[1]

    # What happened ------------------------------------------------------------

    def answered(self, environment: Any, end_ns: int, latency_ns: int, service_ns: int | None) -> None:
        self._open_window(end_ns, environment)
        self.ops_total += 1
        histograms.record_ns(self.live, latency_ns)
        if self.inside(end_ns):
            self.ops += 1
            histograms.record_ns(self.latency, latency_ns)
            if service_ns is not None:
                histograms.record_ns(self.service, service_ns)

    def failed(self, environment: Any, end_ns: int, kind: str) -> None:
        self._open_window(end_ns, environment)
        self.errors_total[kind] += 1
        if self.inside(end_ns):
            self.errors[kind] += 1

    def result(self, environment: Any) -> dict[str, Any]:
        runner = environment.runner
        return {
            "worker_index": getattr(runner, "worker_index", 0), "users": self.users_started,
            "users_connected": self.connected, "users_done": self.users_done, "pid": os.getpid(),
            "window_ns": list(self.window_ns) if self.window_ns else None,
            "stopped_ns": time.time_ns(),  # the window's clock (the host's, across processes), at the stop
            "first_answer_ns": self.first_answer_ns, "ops": self.ops, "ops_total": self.ops_total,
            "errors": dict(self.errors), "errors_total": dict(self.errors_total),
            "call_span_ns": self.call_span_ns or None,
            "latency": histograms.encode(self.latency), "service": histograms.encode(self.service),
            "connect": histograms.encode(self.connect), "wake_lag": histograms.encode(self.wake_lag),
            "rate": self.rate(environment) if self.options.lab_model == "open" else None,
            "bytes_sent": _Counted.sent - self.bytes_at_start[0],
            "bytes_received": _Counted.received - self.bytes_at_start[1],
            "receipts": {str(n): histograms.encode(h) for n, h in self.receipts.items()},
            "delivered": {str(n): c for n, c in self.delivered.items()},
        }

    def rate(self, environment: Any) -> float:
        """This process's share of the open model's rate: by its share of the users."""
        total = environment.parsed_options.num_users or 1
        return self.options.lab_rate * self.expected_users(environment) / total


RECORDER = Recorder()
RESULTS: dict[str, dict[str, Any]] = {}   # the master's (or local process's): by worker
LIVE = histograms.new_histogram()          # the master's: every answer reported so far (web UI)


def _protocol(options: Any) -> str:
    return _target(options)["protocol"]


def _target(options: Any) -> dict[str, str]:
    targets = json.loads(options.lab_targets or "{}")
    try:
        return targets[options.lab_impl]
    except KeyError:
        raise SystemExit(f"--lab-impl {options.lab_impl!r} is not among --lab-targets ({', '.join(targets)})") \
            from None


def _kind(exc: BaseException) -> str:
    if isinstance(exc, ContractError):
        return exc.code
    return type(exc).__name__


class LabUser(User):
    """One client of the implementation chosen (--lab-impl): one connection,
    held for the whole run, one operation after another (with --lab-share-connection,
    one stream of the process's one connection)."""

    def wait_time(self) -> float:
        return self.environment.parsed_options.lab_think_ms / 1000

    def on_start(self) -> None:
        o = self.environment.parsed_options
        RECORDER.users_started += 1
        self.index = RECORDER.users_started  # 1: this process's first user
        if RECORDER.schedule_t0 is None:
            RECORDER.schedule_t0 = time.monotonic()
        target = _target(o)
        self.protocol = target["protocol"]
        self.endpoint = _dial(target["endpoint"])
        self.client_options = target.get("options", {})  # its variant's (lab/axes.py), e.g. compression
        self.operation = workload.get(o.lab_operation)
        self.calls_left = o.lab_calls or None
        self.client: Any = None
        self._connect()

    def _connect(self) -> None:
        o = self.environment.parsed_options
        t0 = time.perf_counter_ns()
        start_ns = time.time_ns()
        try:
            shared = {"shared": True} if o.lab_share_connection else {}
            self.client = CONNECT[self.protocol](self.endpoint, o.lab_timeout, **self.client_options, **shared)
        except Exception as exc:  # counted, and tried again on the next call
            RECORDER.failed(self.environment, time.time_ns(), f"connect:{_kind(exc)}")
            self.client = None
            gevent.sleep(0.5)
            return
        histograms.record_ns(RECORDER.connect, time.perf_counter_ns() - t0)
        RECORDER.connected += 1
        if o.lab_broadcasts:
            return
        if o.lab_calls and not RECORDER.call_span_ns:
            RECORDER.call_span_ns = [start_ns, start_ns]
        elif o.lab_calls:
            RECORDER.call_span_ns[0] = min(RECORDER.call_span_ns[0], start_ns)
        self.call = self.operation.call(self.client)
        if o.lab_first_spread_ms:
            gevent.sleep(random.uniform(0, o.lab_first_spread_ms / 1000))

    def on_stop(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except Exception:  # the connection may be gone with the test
                pass

    @task
    def one(self) -> None:
        o = self.environment.parsed_options
        if o.lab_broadcasts:
            self._broadcast_test()
            return
        if self.client is None:
            self._connect()
            return
        if o.lab_model == "open":
            due = self._next_due()
        else:
            due = None
        t0 = time.perf_counter_ns()
        scheduled_ns = t0 if due is None else due
        exc: BaseException | None = None
        try:
            self.call()
        except Exception as e:  # the protocol's error, or the connection's
            exc = e
        end = time.perf_counter_ns()
        end_wall = time.time_ns()
        latency_ns = end - scheduled_ns
        if exc is None:
            RECORDER.answered(self.environment, end_wall, latency_ns, end - t0 if due is not None else None)
        else:
            RECORDER.failed(self.environment, end_wall, _kind(exc))
        self.environment.events.request.fire(
            request_type=self.protocol, name=o.lab_operation, response_time=latency_ns / 1e6,
            response_length=0, exception=exc, context={})
        if exc is not None and not isinstance(exc, ContractError):
            self._reconnect()
        if self.calls_left is not None:
            self.calls_left -= 1
            if o.lab_calls:
                RECORDER.call_span_ns[1] = max(RECORDER.call_span_ns[1], end_wall)
            if self.calls_left <= 0:
                if o.lab_hold_s:  # the connection stays open until then
                    gevent.sleep(max(0.0, RECORDER.began + o.lab_hold_s - time.monotonic()))
                RECORDER.users_done += 1
                self.environment.runner.send_message(DONE_MESSAGE, {})
                raise StopUser()

    def _broadcast_test(self) -> None:
        """The first user of the run (worker 0's first) sends, every other receives."""
        o = self.environment.parsed_options
        sender = getattr(self.environment.runner, "worker_index", 0) == 0 and self.index == 1
        deadline = time.monotonic() + o.lab_duration
        try:
            if self.client is None:
                raise ConnectionError("not connected")
            if sender:
                self._send_broadcasts(o, deadline)
            else:
                self._receive_broadcasts(o, deadline)
        except Exception as exc:  # counted; the test goes on without this user
            RECORDER.failed(self.environment, time.time_ns(), _kind(exc))
        RECORDER.users_done += 1
        self.environment.runner.send_message(DONE_MESSAGE, {})
        raise StopUser()

    def _send_broadcasts(self, o: Any, deadline: float) -> None:
        receivers = (o.num_users or 1) - 1
        pad = "x" * 80  # {"n", "sent_ns", "pad"}: ~120 bytes of JSON, as the echo test's payload
        while self.client.broadcast({"probe": True})["delivered"] < receivers:  # not everyone is here yet
            if time.monotonic() > deadline:
                raise TimeoutError("receivers not connected in time")
            gevent.sleep(0.25)
        for n in range(1, o.lab_broadcasts + 1):
            gevent.sleep(o.lab_interval_ms / 1000)
            reply = self.client.broadcast({"n": n, "sent_ns": time.time_ns(), "pad": pad})
            RECORDER.delivered[n] = reply["delivered"]
        gevent.sleep(o.lab_interval_ms / 1000)

    def _receive_broadcasts(self, o: Any, deadline: float) -> None:
        got = 0
        while got < o.lab_broadcasts and time.monotonic() < deadline:
            event = self.client.next_push(timeout=max(0.01, deadline - time.monotonic()))
            data = event.data if event.event == "broadcast" else None
            if not isinstance(data, dict) or "n" not in data:
                continue  # a probe, or another push
            n = int(data["n"])
            histograms.record_ns(RECORDER.receipts.setdefault(n, histograms.new_histogram()),
                                 time.time_ns() - int(data["sent_ns"]))
            got += 1
        if got < o.lab_broadcasts:
            raise TimeoutError(f"{got} of {o.lab_broadcasts} broadcasts received")

    def _next_due(self) -> int:
        """The next scheduled send of this process (perf_counter ns), slept until."""
        rate = RECORDER.rate(self.environment)
        k = next(RECORDER.tickets)
        t0 = RECORDER.schedule_t0 or time.monotonic()
        due_s = t0 + k / rate
        wait = due_s - time.monotonic()
        due_ns = time.perf_counter_ns() + int(wait * 1e9)
        if wait > 0:
            gevent.sleep(wait)
            histograms.record_ns(RECORDER.wake_lag, max(0, time.perf_counter_ns() - due_ns))
        return due_ns

    def _reconnect(self) -> None:
        try:
            self.client.close()
        except Exception:  # already broken
            pass
        RECORDER.connected -= 1
        self.client = None


# Events: the window's figures travel to the master at the test's stop --------

@events.test_start.add_listener
def _test_start(environment: Any, **_: Any) -> None:
    # What the process holds by now (Locust, the clients, the dataset) is frozen out of
    # the collector's walks: a full collection of it held the event loop for tens of
    # ms, and every send due meanwhile woke that late (the generator's own lag).
    gc.collect()
    gc.freeze()
    RECORDER.reset(environment.parsed_options)
    if isinstance(environment.runner, WorkerRunner):
        return
    RESULTS.clear()
    LIVE.reset()
    getattr(environment, "lab_done", Counter()).clear()  # the counts of the test before
    o = environment.parsed_options
    if o.lab_duration or o.lab_calls or o.lab_broadcasts:
        gevent.spawn(_control, environment)


@events.test_stop.add_listener
def _test_stop(environment: Any, **_: Any) -> None:
    if isinstance(environment.runner, MasterRunner):
        return
    environment.runner.send_message(RESULT_MESSAGE, RECORDER.result(environment))


@events.init.add_listener
def _init(environment: Any, **_: Any) -> None:
    if environment.parsed_options is not None:
        RECORDER.reset(environment.parsed_options)
    runner = environment.runner
    if runner is None or isinstance(runner, WorkerRunner):
        return
    done = Counter()

    def on_result(environment: Any, msg: Any, **_: Any) -> None:
        RESULTS[str(msg.node_id)] = msg.data

    def on_done(environment: Any, msg: Any, **_: Any) -> None:
        done["users"] += 1

    def on_window(environment: Any, msg: Any, **_: Any) -> None:
        done["windows"] += 1

    runner.register_message(RESULT_MESSAGE, on_result)
    runner.register_message(DONE_MESSAGE, on_done)
    runner.register_message(WINDOW_MESSAGE, on_window)
    environment.lab_done = done  # type: ignore[attr-defined]
    if environment.web_ui is not None:
        _web_routes(environment)


@events.report_to_master.add_listener
def _report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    data["lab_live"] = histograms.encode(RECORDER.live)
    RECORDER.live.reset()


@events.worker_report.add_listener
def _worker_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    if data.get("lab_live"):
        LIVE.add(histograms.decode(data["lab_live"]))


def _control(environment: Any) -> None:
    """The master's (or local process's) schedule: run for --lab-duration s and
    until every process's steady window has closed (LATE_WINDOW_S longer at most),
    or until every user made its --lab-calls calls; stop, collect every worker's
    result, write the merged file, quit."""
    o = environment.parsed_options
    runner = environment.runner
    expected = runner.worker_count if isinstance(runner, MasterRunner) else 1
    began = time.monotonic()
    deadline = began + (o.lab_duration or 3600)
    if o.lab_calls or o.lab_broadcasts:
        while environment.lab_done["users"] < o.num_users and time.monotonic() < deadline:
            gevent.sleep(0.05)
    else:
        gevent.sleep(max(0.0, deadline - time.monotonic()))
        late = deadline + LATE_WINDOW_S
        while environment.lab_done["windows"] < expected and time.monotonic() < late:
            gevent.sleep(0.05)
    runner.stop()
    wait_until = time.monotonic() + 30
    while len(RESULTS) < expected and time.monotonic() < wait_until:
        gevent.sleep(0.05)
    if o.lab_result:
        write_result(environment, o.lab_result, expected)
    runner.quit()


def write_result(environment: Any, path: str, expected: int) -> None:
    stats = environment.runner.stats.total
    workers = [RESULTS[k] for k in sorted(RESULTS, key=lambda k: RESULTS[k]["worker_index"])]
    out = {"workers_expected": expected, "workers": workers,
           "locust_requests": stats.num_requests, "locust_failures": stats.num_failures,
           "locust_median_ms": stats.median_response_time if stats.num_requests else None}
    with open(path, "w") as f:
        json.dump(out, f)


def _web_routes(environment: Any) -> None:
    """The lab's µs percentiles beside Locust's charts: /lab (a page) and
    /lab/percentiles (JSON), from every answer reported so far."""
    app = environment.web_ui.app

    @app.route("/lab/percentiles")
    def lab_percentiles() -> Any:
        live = LIVE if isinstance(environment.runner, MasterRunner) else RECORDER.live
        summary = histograms.latency_summary(live)
        return {"implementation": environment.parsed_options.lab_impl,
                "operation": environment.parsed_options.lab_operation, **summary}

    @app.route("/lab")
    def lab_page() -> Any:
        return LAB_PAGE


LAB_PAGE = """<!doctype html><meta charset="utf-8"><title>protolab: µs percentiles</title>
<style>body{font:14px system-ui;margin:2em}td,th{padding:.2em .8em;text-align:right}</style>
<h1>protolab: the lab's own latency percentiles (µs)</h1>
<p>Every answer timed by the lab's users (monotonic ns clock, HDR histogram), merged over the
workers; Locust's charts (<a href="/">/</a>) round to whole milliseconds.</p>
<table id="t"><tr><th>implementation</th><th>operation</th><th>count</th><th>p50</th><th>p90</th>
<th>p99</th><th>p99.9</th><th>max</th></tr></table>
<script>
async function tick(){const r=await (await fetch('lab/percentiles')).json();
const f=v=>v==null?'–':v.toLocaleString();const t=document.getElementById('t');
while(t.rows.length>1)t.deleteRow(1);const row=t.insertRow();
for(const v of [r.implementation,r.operation,f(r.count),f(r.p50),f(r.p90),f(r.p99),f(r.p99_9),f(r.max)])
row.insertCell().textContent=v;}
tick();setInterval(tick,2000);
</script>"""
