"""HTTP/2 as a variant (lab/axes.py, axis http: h1, h2, h2c, and h1tls: HTTP/1.1 on h2's client
library) for the protocols on HTTP requests
and streams: the axis, the subjects it makes, and, with one lab of its own for this module,
every h2 and h2c subject for real: HTTP/2 is what is negotiated (ALPN "h2" over TLS, the
answer's version in cleartext), the lab's client never falls back to HTTP/1.1 silently, an
HTTP/1.1-only client gets what each server does for it, curl speaks HTTP/2 to them, the wire
capture decodes the frames (through TLS with the client's key log), and the load instrument's
users share one connection when asked. No timing is asserted."""

from __future__ import annotations

import http.client
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from benchmarks.suite import counterparts
from clients.cooperative import load_transport
from clients.http import HttpxTransport, NotHttp2, WrongHttpVersion, check_http, http2_client, require_http2
from clients.rest.client import RestClient
from clients.sse.client import SseClient
from contract.errors import Unavailable
from lab import axes, dataset, registry, settings, tls
from lab.environment import client_options
from lab.host import compose
from lab.running import Lab
from lab.stack import running_lab

HTTP2 = [i for i in registry.every_variant() if dict(i.values).get("http") in ("h2", "h2c")]
SUBJECTS = [i.name for i in HTTP2]
# HTTP/1.1 over TLS on httpx, to the h2 subject's own process: what h2 is divided by (client-only).
H1TLS = [i.name for i in registry.every_variant() if dict(i.values).get("http") == "h1tls"]
# Beside them: a cleartext HTTP/1.1-only subject and a TLS subject offering http/1.1 alone, for the
# lab's HTTP/2 client to be refused by.
H1_ONLY, TLS_H1_ONLY = "rest/go_nethttp", "rest/go_nethttp+tls13"
CRUD = [s for s in SUBJECTS if registry.variant(s).serves("create", "get", "list")]
PUSH = [s for s in SUBJECTS if not registry.variant(s).serves("create")]
# What each h2c server does for a client that speaks HTTP/1.1 only on its port: Go's
# http.Server (Protocols: HTTP1 and UnencryptedHTTP2), hypercorn and the push service's own
# preface sniffing serve it in HTTP/1.1; node:http2's createServer speaks HTTP/2 alone.
H2C_SERVES_HTTP1 = {s: not s.startswith(("rest/node_fastify", "graphql/node_yoga")) for s in SUBJECTS}
IO_TIMEOUT = 20.0


def _value(subject: str) -> str:
    return subject.rsplit("+", 1)[1]


def _address(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint)
    assert parts.hostname and parts.port, endpoint
    return parts.hostname, parts.port


# --- the axis and its subjects (no lab) ---------------------------------------------------


def test_the_axis_is_asked_for_and_never_in_the_default_run(monkeypatch) -> None:
    axis = axes.VARIANT_AXES["http"]
    assert [v.name for v in axis.values] == ["h1", "h2", "h2c", "h1tls"] and not axis.in_default_run
    h2, h2c = axis.value("h2"), axis.value("h2c")
    assert h2.service_env["LAB_HTTP"] == "h2" and h2.service_env["LAB_TLS"] == "1.3"
    assert h2c.service_env == {"LAB_HTTP": "h2c"} and h2.capture["transport"] == h2c.capture["transport"] == "http2"
    monkeypatch.delenv("LAB_VARIANTS", raising=False)
    assert not any(dict(i.values).get("http", "h1") != "h1" for i in registry.discover())
    monkeypatch.setenv("LAB_VARIANTS", "http")
    asked = [i.name for i in registry.discover() if dict(i.values).get("http", "h1") in ("h2", "h2c")]
    assert asked == SUBJECTS and len(asked) == 18  # REST, GraphQL and SSE: 3 languages each, h2 and h2c
    assert [i.name for i in registry.discover() if dict(i.values).get("http") == "h1tls"] == H1TLS
    assert len(H1TLS) == 9 and all(f"{s.split('+')[0]}+h2" in SUBJECTS for s in H1TLS)
    assert {registry.variant(s).protocol for s in asked} == {"rest", "graphql", "sse"}


def test_every_other_implementation_says_why_it_has_no_http2_variant() -> None:
    for impl in registry.bases():
        if "http" not in dict(impl.supported):
            assert dict(impl.unsupported).get("http"), f"{impl.name}: no [unsupported] http reason"


def test_an_h2_subject_is_tls_and_an_h2c_subject_cleartext_each_on_a_port_of_its_own() -> None:
    for name in SUBJECTS:
        impl = registry.variant(name)
        base = registry.variant(impl.base)
        options = client_options(impl)
        assert options["http"] == _value(name)
        if _value(name) == "h2":
            assert impl.secure and options["ca_file"] == str(tls.ca_file())
            assert impl.endpoint_for("127.0.0.1", 9).startswith("https://")
            assert impl.fixed_port_offset == base.fixed_port_offset + 400
        else:
            assert not impl.secure and impl.endpoint_for("127.0.0.1", 9).startswith("http://")
            assert impl.fixed_port_offset == base.fixed_port_offset + 500


def test_the_python_wsgi_services_run_under_hypercorn_for_http2_with_an_image_of_their_own() -> None:
    for base in ("rest/python_flask", "graphql/python_graphene"):
        for value in ("h2", "h2c"):
            impl = registry.variant(f"{base}+{value}")
            assert impl.command[1:5] == ("-m", "hypercorn", "--config", "python:services.common.hypercorn_conf")
            assert impl.server.startswith("hypercorn")
            assert compose.image_name(impl) != compose.image_name(registry.variant(base))
    go = registry.variant("rest/go_nethttp+h2c")
    assert go.command == registry.variant("rest/go_nethttp").command  # the same binary, LAB_HTTP set
    assert compose.image_name(go) == compose.image_name(registry.variant("rest/go_nethttp"))
    rendered = compose.render()
    assert "rest-python-flask-h2c:" in rendered and "rest-python-flask-h2:" in rendered  # h2 too: its files mounted
    assert "rest-python-flask-h1tls:" not in rendered  # the h2 container serves it
    assert compose.stale_reason() is None


def test_the_client_option_is_checked_against_its_tls() -> None:
    assert check_http(None, None) == "h1" and check_http("h2c", None) == "h2c"
    with pytest.raises(ValueError, match="over TLS"):
        check_http("h2", None)
    with pytest.raises(ValueError, match="cleartext"):
        check_http("h2c", "/ca.pem")
    with pytest.raises(ValueError, match="expected one of"):
        check_http("h3", None)
    with pytest.raises(ValueError, match="HTTP/2 only"):
        load_transport("http://127.0.0.1:1", 1.0, shared=True)
    assert check_http("h1tls", "/ca.pem") == "h1tls"
    with pytest.raises(ValueError, match="over TLS"):
        check_http("h1tls", None)


@pytest.mark.parametrize("subject", H1TLS)
def test_h1tls_is_the_h2_process_spoken_to_in_http1_by_the_client_library_of_h2(subject: str) -> None:
    """Client-only: served by the +h2 subject's process (its port, its TLS), its client httpx in HTTP/1.1
    verifying the lab's CA; no process, port or container of its own; and a run holding both divides h2
    by it (besides each by the base)."""
    impl, h2 = registry.variant(subject), f"{subject.split('+')[0]}+h2"
    assert impl.served_by == h2 and registry.services_of([impl])[subject].name == h2
    assert client_options(impl) == {"http": "h1tls", "ca_file": str(tls.ca_file())} and impl.secure
    assert impl.service_env() == registry.variant(impl.base).service_env() and impl.capture() == {"tls": "1.3"}
    assert impl.framing() == registry.variant(impl.base).framing()  # HTTP/1.1's framing, decrypted
    assert f"  {compose.service_name(impl)}:" not in compose.render()
    base = impl.base
    pairs = counterparts([base, h2, subject])
    assert (h2, subject, "variant") in pairs and (h2, base, "variant") in pairs and (subject, base, "variant") in pairs
    assert (h2 + "@docker", subject + "@docker", "variant") in counterparts([h2 + "@docker", subject + "@docker"])


def test_a_manifest_cannot_declare_h1tls_without_the_h2_that_serves_it(tmp_path: Path) -> None:
    source = (settings.ROOT / "services/rest/go_nethttp/manifest.toml").read_text()
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(source.replace('http = ["h1", "h2", "h2c", "h1tls"]', 'http = ["h1", "h2c", "h1tls"]'))
    with pytest.raises(SystemExit, match="list 'h2' too"):
        registry._manifest(manifest)


# --- every h2 and h2c subject, for real --------------------------------------------------


@pytest.fixture(scope="module")
def h2_lab() -> Iterator[Lab]:
    with running_lab([*SUBJECTS, *H1TLS, H1_ONLY, TLS_H1_ONLY], change_streams=False) as lab:
        yield lab


def _alpn(endpoint: str, offered: list[str]) -> str | None:
    host, port = _address(endpoint)
    context = ssl.create_default_context(cafile=str(tls.ca_file()))
    context.set_alpn_protocols(offered)
    with socket.create_connection((host, port), timeout=IO_TIMEOUT) as raw, \
            context.wrap_socket(raw, server_hostname=host) as wrapped:
        return wrapped.selected_alpn_protocol()


@pytest.mark.parametrize("subject", CRUD)
def test_the_labs_client_speaks_http2_to_every_crud_subject(h2_lab: Lab, subject: str) -> None:
    client = h2_lab.client(subject)
    try:
        transport = client.transport
        assert isinstance(transport, HttpxTransport)
        client.health()
        game = dataset.games(1)[0]
        created = client.create(game)
        assert client.get(created["id"])["name"] == game["name"]
        assert created["id"] in [g["id"] for g in client.list(limit=1000)]
        client.delete(created["id"])
        assert transport.last == ("HTTP/2", "h2" if _value(subject) == "h2" else None), transport.last
    finally:
        client.close()


@pytest.mark.parametrize("subject", H1TLS)
def test_h1tls_answers_in_http1_chosen_by_alpn_from_the_h2_process(h2_lab: Lab, subject: str) -> None:
    h2 = f"{subject.split('+')[0]}+h2"
    assert h2_lab.endpoints[subject] == h2_lab.endpoints[h2] and h2_lab.pids[subject] == h2_lab.pids[h2]
    client = h2_lab.client(subject)
    try:
        client.health()
        if registry.variant(subject).serves("create", "get"):
            transport = client.transport
            assert isinstance(transport, HttpxTransport) and transport.http == "h1tls"
            created = client.create(dataset.games(1)[0])
            assert client.get(created["id"]) == created
            client.delete(created["id"])
            assert transport.last == ("HTTP/1.1", "http/1.1"), transport.last
        else:
            with client.subscribe("synthetic", rate=0, count=3) as stream:
                assert stream.http_version == "HTTP/1.1"
                assert [e.event for e in stream][-1] == "end"
    finally:
        client.close()


def test_an_h1tls_client_refuses_an_answer_not_in_http1_chosen_by_alpn(h2_lab: Lab) -> None:
    """The check on real answers: HTTP/2 from an h2 port, and HTTP/1.1 without TLS (no ALPN) from a
    cleartext one, each refused for h1tls; HTTP/1.1 by ALPN from the same h2 port passed."""
    endpoint = h2_lab.endpoints["rest/go_nethttp+h2"]
    with http2_client("h2", IO_TIMEOUT, str(tls.ca_file())) as h2, \
            http2_client("h1tls", IO_TIMEOUT, str(tls.ca_file())) as h1tls:
        with pytest.raises(WrongHttpVersion, match="answered in HTTP/2"):
            require_http2(h2.get(f"{endpoint}/health"), "h1tls")
        require_http2(h1tls.get(f"{endpoint}/health"), "h1tls")
    with httpx.Client(trust_env=False, timeout=IO_TIMEOUT) as plain:
        with pytest.raises(WrongHttpVersion, match="ALPN chose None"):
            require_http2(plain.get(f"{h2_lab.endpoints[H1_ONLY]}/health"), "h1tls")


@pytest.mark.parametrize("subject", PUSH)
def test_a_feed_streams_over_http2(h2_lab: Lab, subject: str) -> None:
    client = h2_lab.client(subject)
    try:
        client.health()
        with client.subscribe("synthetic", rate=0, count=5) as stream:
            assert stream.http_version == "HTTP/2"
            assert [e.event for e in stream][-1] == "end"
    finally:
        client.close()


@pytest.mark.parametrize("subject", [s for s in SUBJECTS if _value(s) == "h2"])
def test_an_h2_subject_chooses_h2_by_alpn_and_serves_a_client_that_offers_http1_only(
        h2_lab: Lab, subject: str) -> None:
    endpoint = h2_lab.endpoints[subject]
    assert _alpn(endpoint, ["h2", "http/1.1"]) == "h2"
    assert _alpn(endpoint, ["http/1.1"]) == "http/1.1"
    host, port = _address(endpoint)
    context = ssl.create_default_context(cafile=str(tls.ca_file()))
    context.set_alpn_protocols(["http/1.1"])
    connection = http.client.HTTPSConnection(host, port, timeout=IO_TIMEOUT, context=context)
    try:
        connection.request("GET", "/health")
        reply = connection.getresponse()
        assert (reply.version, reply.status) == (11, 200)  # HTTP/1.1, answered
    finally:
        connection.close()


def _http1_request(endpoint: str) -> bytes:
    """What an HTTP/1.1-only client reads back from a cleartext port for GET /health."""
    host, port = _address(endpoint)
    with socket.create_connection((host, port), timeout=IO_TIMEOUT) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        return received


@pytest.mark.parametrize("subject", [s for s in SUBJECTS if _value(s) == "h2c"])
def test_an_http1_only_client_gets_what_the_h2c_server_does_for_it(h2_lab: Lab, subject: str) -> None:
    received = _http1_request(h2_lab.endpoints[subject])
    if H2C_SERVES_HTTP1[subject]:
        assert received.startswith(b"HTTP/1.1 200"), received[:200]
    else:
        # node:http2 reads the request as a bad connection preface: no HTTP/1.1 answer, only HTTP/2
        # frames (its SETTINGS, then a GOAWAY), and the connection is closed.
        assert not received.startswith(b"HTTP/"), received[:200]
        assert set(_h2_frame_types(received)) <= {4, 7}, received[:200]


def _h2_frame_types(data: bytes) -> list[int]:
    """The types of the HTTP/2 frames `data` holds (RFC 9113 4.1: 3-byte length, type, flags, stream)."""
    types = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        types.append(data[3])
        data = data[9 + length:]
    assert data == b"", "not whole HTTP/2 frames"
    return types


def test_an_h2c_client_is_refused_by_an_http1_only_server_never_answered_in_http1(h2_lab: Lab) -> None:
    endpoint = h2_lab.endpoints[H1_ONLY]
    client = RestClient(endpoint, timeout=5, http="h2c")
    try:
        with pytest.raises((NotHttp2, httpx.HTTPError)):
            client.health()
    finally:
        client.close()
    client = SseClient(endpoint, timeout=5, http="h2c")
    try:
        with pytest.raises((NotHttp2, Unavailable, httpx.HTTPError)):
            client.health()
    finally:
        client.close()


def test_an_h2_client_is_refused_when_alpn_chooses_http1(h2_lab: Lab) -> None:
    """rest/go_nethttp+tls13 offers http/1.1 alone: the h2 client offered h2 and http/1.1, got
    HTTP/1.1, and says so rather than measure it."""
    client = RestClient(h2_lab.endpoints[TLS_H1_ONLY], timeout=5, http="h2", ca_file=str(tls.ca_file()))
    try:
        with pytest.raises(NotHttp2, match="ALPN chose 'http/1.1'"):
            client.health()
    finally:
        client.close()


CURL_SUBJECTS = ["rest/go_nethttp+h2", "rest/go_nethttp+h2c", "rest/node_fastify+h2", "rest/node_fastify+h2c"]


def _curl_http2() -> bool:
    if shutil.which("curl") is None:
        return False
    version = subprocess.run(["curl", "--version"], capture_output=True, text=True, timeout=10).stdout
    return "HTTP2" in version or "nghttp2" in version


@pytest.mark.skipif(not _curl_http2(), reason="curl with HTTP/2 (nghttp2) is not installed (apt-get install curl)")
@pytest.mark.parametrize("subject", CURL_SUBJECTS)
def test_curl_speaks_http2_to_it(h2_lab: Lab, subject: str) -> None:
    """`curl --http2 --cacert` (ALPN) to an h2 subject, `curl --http2-prior-knowledge` to an h2c one."""
    endpoint = h2_lab.endpoints[subject]
    flags = (["--http2", "--cacert", str(tls.ca_file())] if _value(subject) == "h2"
             else ["--http2-prior-knowledge"])
    done = subprocess.run(["curl", "-sS", "--max-time", "20", *flags, "-o", "/dev/null",
                           "-w", "%{http_version} %{response_code}", f"{endpoint}/health"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "2 200", done.stdout


# --- the instruments --------------------------------------------------------------------------


def _ports_connected(port: int) -> int:
    """Established client connections to `port` on this host."""
    done = subprocess.run(["ss", "-Htn", "state", "established", f"dport = :{port}"], capture_output=True,
                          text=True, timeout=10)
    return len(done.stdout.splitlines())


@pytest.mark.parametrize("subject,shared", [("rest/go_nethttp+h2c", True), ("rest/go_nethttp+h2c", False),
                                            ("graphql/node_yoga+h2", True)])
def test_a_short_load_run_shares_one_connection_between_its_users_when_asked(
        h2_lab: Lab, subject: str, shared: bool) -> None:
    """The load instrument's --share-connection: its 8 users (one Locust process) hold one TCP
    connection to the service between them, a stream each; without it, one connection each.
    Counted from the host's sockets (ss) while the run goes on."""
    from lab.host import pinning
    from load import runner
    from load.common import prepare

    impl = h2_lab.implementation(subject)
    port = _address(h2_lab.endpoints[subject])[1]
    prepare(h2_lab, "fetch-one")
    settings = runner.Settings(warmup_s=0.5, steady_s=1.0, pinning=pinning.plan(True), share_connection=shared)
    seen: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            seen.append(_ports_connected(port))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        row = runner.run(h2_lab, impl, settings, model="closed", clients=8)
    finally:
        done.set()
        sampler.join()
    assert row["errors_total"] == {}, row["errors_total"]
    assert row["ops_window"] > 0
    assert row["connections"].startswith("one per Locust process" if shared else "one per user")
    assert max(seen) == (1 if shared else 8), seen


def test_the_wire_capture_decodes_http2_inside_tls_with_the_key_log(h2_lab: Lab, tmp_path: Path,
                                                                   monkeypatch) -> None:
    """capture.wire's own choice for an h2 subject (decode as TLS, with the client's key log) finds
    its HTTP/2 frames and counts the bodies from DATA frames; an h2c subject's are read directly."""
    from capture.dissect import H2_DATA, H2_HEADERS, dissect
    from capture.tshark import Capture, CaptureError, ensure_tshark
    from capture.wire import app_payload, subject_framing
    try:
        ensure_tshark()
    except CaptureError as exc:
        pytest.skip(f"tshark unavailable: {exc}")
    if subprocess.run(["dumpcap", "-L", "-i", "lo"], capture_output=True, timeout=30).returncode:
        pytest.skip("cannot capture on lo: run as root, or setcap cap_net_raw,cap_net_admin+eip dumpcap")
    keylog = tmp_path / "keys.log"
    monkeypatch.setenv("SSLKEYLOGFILE", str(keylog))
    for subject in ("rest/go_nethttp+h2", "graphql/python_graphene+h2c"):
        impl = h2_lab.implementation(subject)
        dissector, framing = subject_framing(impl)
        transport = framing.transport
        assert (dissector, transport, framing.payload) == (("tls" if _value(subject) == "h2" else "http2"), "http2",
                                                           "http2_data")
        port = _address(h2_lab.endpoints[subject])[1]
        pcap = tmp_path / f"{_value(subject)}.pcapng"
        with Capture([port], path=pcap) as capture:
            client = h2_lab.client(subject)
            try:
                client.health()
                client.list(limit=2)
            finally:
                client.close()
        layers = dissect(pcap, {port: dissector}, keylog=keylog if dissector == "tls" else None)
        frames = [f for la in layers.values() for f in la.h2]
        assert sum(f.type == H2_HEADERS for f in frames) >= 4, frames  # two requests, two replies
        assert any(la.h2_magic for la in layers.values())  # the connection preface
        packets = [p for p in capture.packets if port in (p.src_port, p.dst_port)]
        up, down = app_payload(packets, layers, port, framing)
        assert up + down == sum(f.length for la in layers.values() for f in la.h2 if f.type == H2_DATA)
        assert down > 0
        if dissector == "tls":
            assert not any(la.h2 for la in dissect(pcap, {port: "tls"}).values())  # nothing without the log
