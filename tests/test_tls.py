"""TLS as a variant (lab/axes.py, axis tls): the run's own CA and certificate (lab/tls.py),
the subjects, environments and endpoints the axis makes, and, with one lab of its own for
this module, every protocol over TLS for real: the version each subject names is the one
negotiated (a raw ssl socket with the lab's CA; `openssl s_client` where installed), the
other version is refused, the lab's client works through it, and a client that trusts
another CA is refused. No timing is asserted."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
from cryptography import x509

from clients import connect
from clients.protocols import secure_endpoint
from lab import axes, dataset, registry, settings, tls
from lab.environment import client_options, native_environment, service_environment
from lab.host import compose
from lab.running import Lab
from lab.stack import running_lab

# One lab for the module: each protocol over TLS, each version, each language at least once.
SUBJECTS = (
    "rest/go_nethttp+tls13", "rest/python_flask+tls12",
    "grpc/python_grpcio+tls13", "grpc/node_grpcjs+tls12",
    "graphql/node_yoga+tls13", "graphql/go_gqlgen+tls12",
    "ws/python_simple_websocket+tls13", "ws/go_gorilla+tls12",
    "socketio/node_socketio+tls13",
    "soap/python_spyne+tls12",
    "sse/python_hypercorn+tls13", "sse/go_nethttp+tls12", "sse/node_http+tls13",
    "connect/node_connect+tls13", "connect/node_connect+grpc+tls12",
)
VERSION = {"tls13": "TLSv1.3", "tls12": "TLSv1.2"}
OTHER = {"tls13": ssl.TLSVersion.TLSv1_2, "tls12": ssl.TLSVersion.TLSv1_3}
# grpcio's TLS is its core's (BoringSSL), which takes no version from Python: its tls13
# negotiates 1.3 with any client that offers it, and accepts a client that offers only 1.2
# (its manifest declares no tls12 for that reason).
ACCEPTS_THE_OTHER = {"grpc/python_grpcio+tls13"}
HOLDS_CRUD = [s for s in SUBJECTS if registry.variant(s).serves("create", "get", "list")]
PUSH_ONLY = [s for s in SUBJECTS if not registry.variant(s).serves("create")]


def _value(subject: str) -> str:
    return subject.rsplit("+", 1)[1]


def _address(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint if "://" in endpoint else f"tcp://{endpoint}")
    assert parts.hostname and parts.port, endpoint
    return parts.hostname, parts.port


def _handshake(endpoint: str, ca: Path, *, alpn: list[str],
               maximum: ssl.TLSVersion | None = None) -> tuple[str | None, str | None]:
    """(version, ALPN protocol) of a new TLS connection verified against `ca`."""
    host, port = _address(endpoint)
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(alpn)
    if maximum is not None:
        context.minimum_version = context.maximum_version = maximum
    with socket.create_connection((host, port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as wrapped:
        return wrapped.version(), wrapped.selected_alpn_protocol()


def _alpn(subject: str) -> list[str]:
    return ["h2"] if subject.startswith(("grpc/", "sse/")) else ["http/1.1"]


# --- the CA, the axis, the subjects (no lab) --------------------------------------------


def test_no_private_key_is_committed() -> None:
    """The run makes its keys (lab/tls.py); the repository holds none."""
    needle = "PRIVATE" + " KEY"  # spelled apart, so that this file does not hold it
    found = subprocess.run(["git", "grep", "-I", "-l", needle], cwd=settings.ROOT, capture_output=True,
                           text=True, timeout=60)
    assert found.returncode in (0, 1), found.stderr
    assert found.stdout.split() == [], f"files holding a private key: {found.stdout.split()}"


def test_the_run_makes_one_ca_and_a_certificate_for_the_addresses_it_serves() -> None:
    files = tls.server_files(["198.18.0.2"])
    assert tls.server_files(["198.18.0.2"]) == files  # made once per set of addresses
    assert files.ca == tls.ca_file() and files.cert.parent == files.ca.parent
    assert files.cert.parent.name.startswith("protolab-tls-") and (files.key.stat().st_mode & 0o077) == 0
    leaf = x509.load_pem_x509_certificates(files.cert.read_bytes())[0]
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    addresses = {str(a) for a in names.get_values_for_type(x509.IPAddress)}
    assert addresses == {"127.0.0.1", "::1", "198.18.0.2"}
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    assert leaf.issuer == ca.subject
    assert tls.wrong_authority_file().read_bytes() != files.ca.read_bytes()


def test_the_axis_is_asked_for_and_never_in_the_default_run(monkeypatch) -> None:
    axis = axes.VARIANT_AXES["tls"]
    assert [v.name for v in axis.values] == ["plain", "tls13", "tls12"] and not axis.in_default_run
    assert axis.value("tls13").service_env["LAB_TLS"] == "1.3" and axis.value("tls12").service_env["LAB_TLS"] == "1.2"
    monkeypatch.delenv("LAB_VARIANTS", raising=False)
    assert not any(i.secure for i in registry.discover())
    monkeypatch.setenv("LAB_VARIANTS", "tls")
    asked = [i.name for i in registry.discover() if i.secure]
    every = [f"{b.name}+{v}" for b in registry.bases() for v in ("tls13", "tls12")
             if v in dict(b.supported).get("tls", ())]
    assert asked == every and len(asked) == 41  # 21 implementations, grpcio without tls12
    assert all("tls" in dict(b.supported) for b in registry.bases())


def test_a_tls_subjects_environment_names_its_certificate_and_key_and_its_client_the_ca() -> None:
    impl = registry.variant("rest/go_nethttp+tls12")
    env = service_environment(impl, host="198.18.0.2", port=1, mongodb_uri="mongodb://x")
    files = tls.server_files(["198.18.0.2", settings.dial_host()])
    assert (env["LAB_TLS"], env["LAB_TLS_CERT"], env["LAB_TLS_KEY"]) == ("1.2", str(files.cert), str(files.key))
    assert client_options(impl) == {"ca_file": str(tls.ca_file())}
    plain = registry.variant("rest/go_nethttp")
    assert not {"LAB_TLS", "LAB_TLS_CERT", "LAB_TLS_KEY"} & set(native_environment(plain, host="h", port=1,
                                                                                    mongodb_uri="m"))
    assert client_options(plain) == {} and not plain.secure


@pytest.mark.parametrize("subject", ["rest/node_fastify+tls13", "ws/node_ws+tls12", "grpc/go_grpc+tls13",
                                     "socketio/node_socketio+tls12", "soap/python_spyne+tls13",
                                     "graphql/python_graphene+tls12", "sse/node_http+tls13"])
def test_a_tls_subjects_endpoint_has_the_secure_scheme(subject: str) -> None:
    impl, base = registry.variant(subject), registry.variant(subject.split("+")[0])
    assert impl.endpoint_for("127.0.0.1", 9) == secure_endpoint(base.endpoint_for("127.0.0.1", 9))
    scheme = urlsplit(impl.endpoint_for("127.0.0.1", 9)).scheme
    assert scheme in ("https", "wss") or ("://" not in impl.endpoint and impl.protocol == "grpc")
    assert secure_endpoint("127.0.0.1:9") == "127.0.0.1:9" and secure_endpoint("ws://h:1/ws") == "wss://h:1/ws"


@pytest.mark.parametrize("subject", ["rest/go_nethttp+tls13", "grpc/node_grpcjs+tls12", "graphql/python_graphene+h2"])
def test_docker_mode_mounts_the_runs_files_at_one_path_in_the_container(subject: str) -> None:
    """compose.yaml names the container's paths (no host path, no key), mounted from LAB_TLS_DIR; the stack
    sets that to the run's directory, whose certificate names 127.0.0.1 (the published ports) and the services."""
    impl = registry.variant(subject)
    env = compose.container_environment(impl)
    assert (env["LAB_TLS_CERT"], env["LAB_TLS_KEY"]) == ("/run/protolab-tls/server.pem", "/run/protolab-tls/server.key")
    assert "SSLKEYLOGFILE" not in env
    rendered = compose.render([impl, registry.variant(subject.split("+")[0])])
    assert rendered.count('volumes: ["${LAB_TLS_DIR:-./docker/tls}:/run/protolab-tls:ro"]') == 1  # the TLS one only
    assert str(tls.ca_file().parent) not in compose.render() and compose.stale_reason() is None
    images = compose.Images({"LAB_MONGO_IMAGE": "mongo:8.0"}, "protolab", "test")
    daemon = SimpleNamespace(env={})  # the environment docker-compose gets is all this reads of it
    stack = compose.ComposeStack(daemon, [impl], images)  # type: ignore[arg-type]
    stack.hashes[compose.service_name(impl)] = "x"
    directory = Path(stack.env()["LAB_TLS_DIR"])
    assert directory.parent == tls.ca_file().parent  # the run's own, removed with it
    assert sorted(p.name for p in directory.iterdir()) == ["ca.pem", "server.key", "server.pem"]
    assert (directory / "ca.pem").read_bytes() == tls.ca_file().read_bytes()
    leaf = x509.load_pem_x509_certificates((directory / "server.pem").read_bytes())[0]
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(a) for a in names.get_values_for_type(x509.IPAddress)}
    assert compose.service_name(impl) in names.get_values_for_type(x509.DNSName)
    plain = compose.ComposeStack(daemon, [registry.variant("rest/go_nethttp")], images)  # type: ignore[arg-type]
    plain.hashes["rest-go-nethttp"] = "x"
    assert "LAB_TLS_DIR" not in plain.env()


def test_compose_files_by_hand_hold_no_key_the_repository_would_take(tmp_path: Path) -> None:
    written = tls.write_container_files(tmp_path / "by-hand", ["rest-go-nethttp-tls13"])
    assert sorted(p.name for p in written.iterdir()) == ["ca.pem", "server.key", "server.pem"]
    ignored = subprocess.run(["git", "check-ignore", "-q", "docker/tls/server.key"], cwd=settings.ROOT, timeout=30)
    assert ignored.returncode == 0, "docker/tls/ would let a key be committed"
    assert "docker/tls" in (settings.ROOT / ".dockerignore").read_text().split()  # nor sent into an image


def test_a_key_log_reaches_tls_services_only(monkeypatch, tmp_path: Path) -> None:
    """The wire capture's key log (SSLKEYLOGFILE) is a TLS service's too, so that it logs the secrets its
    clients' TLS library does not (capture/wire.py); a cleartext service gets none."""
    monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / "keys.log"))
    env = service_environment(registry.variant("grpc/go_grpc+tls13"), host="127.0.0.1", port=1, mongodb_uri="m")
    assert env["SSLKEYLOGFILE"] == str(tmp_path / "keys.log")
    assert "SSLKEYLOGFILE" not in service_environment(registry.variant("grpc/go_grpc"), host="127.0.0.1", port=1,
                                                      mongodb_uri="m")
    monkeypatch.delenv("SSLKEYLOGFILE")
    assert "SSLKEYLOGFILE" not in service_environment(registry.variant("grpc/go_grpc+tls13"), host="127.0.0.1",
                                                      port=1, mongodb_uri="m")


# --- every protocol over TLS, for real --------------------------------------------------


@pytest.fixture(scope="module")
def tls_lab() -> Iterator[Lab]:
    with running_lab(list(SUBJECTS), change_streams=False) as lab:
        yield lab


@pytest.mark.parametrize("subject", SUBJECTS)
def test_the_negotiated_version_is_the_one_the_subject_names(tls_lab: Lab, subject: str) -> None:
    endpoint = tls_lab.endpoints[subject]
    version, alpn = _handshake(endpoint, tls.ca_file(), alpn=_alpn(subject))
    assert version == VERSION[_value(subject)], (subject, version)
    assert alpn == _alpn(subject)[0], (subject, alpn)  # "h2" for gRPC and SSE; HTTP/1.1 for the others
    other = OTHER[_value(subject)]
    if subject in ACCEPTS_THE_OTHER:
        assert _handshake(endpoint, tls.ca_file(), alpn=_alpn(subject), maximum=other)[0] == "TLSv1.2"
    else:
        with pytest.raises(ssl.SSLError):  # the subject holds its one version
            _handshake(endpoint, tls.ca_file(), alpn=_alpn(subject), maximum=other)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed (apt-get install openssl)")
@pytest.mark.parametrize("subject", SUBJECTS)
def test_openssl_s_client_agrees(tls_lab: Lab, subject: str) -> None:
    host, port = _address(tls_lab.endpoints[subject])
    flag = {"tls13": "-tls1_3", "tls12": "-tls1_2"}[_value(subject)]
    done = subprocess.run(["openssl", "s_client", "-connect", f"{host}:{port}", "-CAfile", str(tls.ca_file()),
                           "-verify_return_error", "-brief", flag, "-alpn", ",".join(_alpn(subject))],
                          input=b"", capture_output=True, timeout=20)
    out = done.stderr.decode(errors="replace") + done.stdout.decode(errors="replace")
    assert done.returncode == 0, out
    assert f"Protocol version: {VERSION[_value(subject)]}" in out and "Verification: OK" in out, out


@pytest.mark.parametrize("subject", HOLDS_CRUD)
def test_the_labs_client_works_through_tls(tls_lab: Lab, subject: str) -> None:
    assert tls_lab.endpoints[subject].startswith(("https://", "wss://")) or "://" not in tls_lab.endpoints[subject]
    client = tls_lab.client(subject)
    try:
        client.health()
        game = dataset.games(1)[0]
        created = client.create(game)
        assert client.get(created["id"])["name"] == game["name"]
        assert created["id"] in [g["id"] for g in client.list(limit=1000)]
    finally:
        client.close()


@pytest.mark.parametrize("subject", PUSH_ONLY)
def test_a_feed_streams_through_tls(tls_lab: Lab, subject: str) -> None:
    for http2 in (False, True):  # HTTP/1.1, and HTTP/2 chosen by ALPN
        client = tls_lab.client(subject, http2=http2)
        try:
            client.health()
            with client.subscribe("synthetic", rate=0, count=5) as stream:
                assert stream.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
                assert [e.event for e in stream][-1] == "end"
        finally:
            client.close()


def _health(protocol: str, endpoint: str, ca_file: Path) -> None:
    client = connect(protocol, endpoint, ca_file=str(ca_file), timeout=3)
    try:
        client.health()
    finally:
        client.close()


@pytest.mark.parametrize("subject", SUBJECTS)
def test_a_client_trusting_another_ca_is_refused(tls_lab: Lab, subject: str) -> None:
    """The same client, the same call: refused with another CA, answered with the lab's."""
    impl, endpoint = tls_lab.implementation(subject), tls_lab.endpoints[subject]
    with pytest.raises(Exception) as refused:
        _health(impl.protocol, endpoint, tls.wrong_authority_file())
    _health(impl.protocol, endpoint, tls.ca_file())
    text = repr(refused.value)
    # gRPC's channel and socket.io's connect say only that they could not connect; the others name the cause
    # (Connect's client, connect-python over pyqwest, verifies with rustls: "invalid peer certificate")
    assert impl.protocol in ("grpc", "socketio") or "CERTIFICATE_VERIFY_FAILED" in text \
        or "certificate verify failed" in text or "invalid peer certificate: UnknownIssuer" in text, text


def test_the_handshake_instrument_measures_each_kind_apart(tls_lab: Lab, tmp_path: Path) -> None:
    """benchmarks/handshake.py on two of this lab's subjects, a few connections each: every kind
    measured, on the version the subject names, resumption resumed, bytes counted by the kernel,
    the result in the results format. No timing is asserted."""
    from benchmarks import handshake
    from lab import results
    from lab.context import host_context
    from lab.results_check import check
    names = ["rest/go_nethttp+tls13", "rest/python_flask+tls12"]
    found = handshake.measure(tls_lab, names, connections=3)
    kinds = {(r["subject"], r["kind"]): r for r in found["rows"]}
    assert set(kinds) == {(names[0], "tcp"), (names[0], "tls13-full"), (names[0], "tls13-resumed"),
                          (names[1], "tls12-full"), (names[1], "tls12-resumed")}
    for (subject, kind), row in kinds.items():
        assert row["connections"] == 3 and row["median_ci95_us"][0] <= row["median_us"] <= row["median_ci95_us"][1]
        if kind == "tcp":
            assert (row["bytes_sent"], row["bytes_received"]) == (0, 0) and row["versions"] == []
            continue
        assert row["versions"] == [VERSION[_value(subject)]]
        assert row["bytes_sent"] > 200 and row["bytes_received"] > 100  # a ClientHello; a ServerHello and more
        assert row["reused"] == (3 if kind.endswith("resumed") else 0), row
    full, resumed = kinds[(names[1], "tls12-full")], kinds[(names[1], "tls12-resumed")]
    assert resumed["bytes_received"] < full["bytes_received"]  # no certificate in a resumed handshake
    path = results.write("handshake", "handshake", host_context(), {"subjects": names, **found}, tmp_path)
    assert check([path]) == []


def test_the_keylog_lets_the_wire_capture_read_inside_tls(tls_lab: Lab, tmp_path: Path, monkeypatch) -> None:
    """SSLKEYLOGFILE set, the lab's Python client (requests, as every ssl.create_default_context)
    writes its TLS secrets there; the capture's dissector, given that file, finds the HTTP
    requests and replies inside TLS 1.3, and without it finds none."""
    from capture.dissect import dissect
    from capture.tshark import Capture, CaptureError, ensure_tshark
    try:
        ensure_tshark()
    except CaptureError as exc:
        pytest.skip(f"tshark unavailable: {exc}")
    if subprocess.run(["dumpcap", "-L", "-i", "lo"], capture_output=True, timeout=30).returncode:
        pytest.skip("cannot capture on lo: run as root, or setcap cap_net_raw,cap_net_admin+eip dumpcap")
    subject = "rest/go_nethttp+tls13"
    keylog, pcap = tmp_path / "keys.log", tmp_path / "tls.pcapng"
    monkeypatch.setenv("SSLKEYLOGFILE", str(keylog))
    _, port = _address(tls_lab.endpoints[subject])
    with Capture([port], path=pcap):
        client = tls_lab.client(subject)
        try:
            client.health()
            client.list(limit=2)
        finally:
            client.close()
    assert "CLIENT_TRAFFIC_SECRET_0" in keylog.read_text()  # TLS 1.3's secrets, by the client
    opened = dissect(pcap, {port: "tls"}, keylog=keylog).values()
    assert sum(1 for layers in opened if layers.http_request) == 2
    assert sum(1 for layers in opened if layers.http_response) == 2 and any(la.http_body for la in opened)
    assert not any(layers.http_request for layers in dissect(pcap, {port: "tls"}).values())
