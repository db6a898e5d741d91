"""Connect RPC as the lab runs it: one connect-go server speaking Connect, gRPC and gRPC-Web, its
wire protocols and codecs as variants that change only the lab's client (clients/connect/__init__.py,
lab/axes.py), served by one process (lab/registry.py, served_by); Connect's GET for the calls without
side effects; the contract's errors as Connect codes on every wire."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess

import pytest
import requests
from expect import expect

from clients import connect
from clients.connect.client import ConnectClient
from contract import games_pb2 as pb
from contract.errors import CONNECT_CODE, INVALID_ARGUMENT, NOT_FOUND
from lab import axes, dataset, settings
from lab.host import compose
from lab.pytest_plugin.fixtures import implementations
from lab.registry import services_of, variant

BASE = "connect/go_connect"
# The servers whose one handler speaks all three wire protocols (connect-go, connect-node)
ONE_HANDLER = ["connect/go_connect", "connect/node_connect"]
SUBJECTS = implementations(where=lambda impl: impl.protocol == "connect")
GET_GAME = "/protolab.games.v1.Games/GetGame"


def test_the_protocols_own_axes_are_in_the_one_table_and_change_only_the_client() -> None:
    for axis, values in (("wire", ["connect", "grpc", "grpcweb"]), ("codec", ["proto", "json"])):
        table = axes.VARIANT_AXES[axis]
        assert [v.name for v in table.values] == values and table.in_default_run
        assert all(v.client_only and not v.service_env for v in table.values)
    assert axes.VARIANT_AXES["wire"].value("grpc").client == {"wire": "grpc"}
    assert not any(v.client_only for a in ("tls", "compression", "workers") for v in axes.VARIANT_AXES[a].values)


def test_a_client_only_variant_is_served_by_its_base_and_the_others_by_themselves() -> None:
    assert variant(f"{BASE}+grpc").served_by == BASE
    assert variant(f"{BASE}+json").served_by == BASE
    assert variant(BASE).served_by == BASE
    assert variant(f"{BASE}+tls13").served_by == f"{BASE}+tls13"  # TLS changes the server: a process of its own
    assert variant(f"{BASE}+grpcweb+tls13").served_by == f"{BASE}+tls13"
    assert variant("rest/go_nethttp+gzip").served_by == "rest/go_nethttp+gzip"
    chosen = [variant(n) for n in (f"{BASE}+grpc", f"{BASE}+grpcweb", f"{BASE}+tls13", f"{BASE}+grpc+tls13")]
    serving = services_of(chosen)  # the base is not among them: the registry's is started for them
    assert {k: v.name for k, v in serving.items()} == {
        f"{BASE}+grpc": BASE, f"{BASE}+grpcweb": BASE, f"{BASE}+tls13": f"{BASE}+tls13",
        f"{BASE}+grpc+tls13": f"{BASE}+tls13"}
    assert serving[f"{BASE}+tls13"] is chosen[2]  # one given is the one started, not a copy


def test_compose_has_one_container_per_service_process() -> None:
    text = compose.render()
    assert "  connect-go-connect:" in text and "  connect-go-connect-gzip:" in text
    assert "connect-go-connect-grpc:" not in text and "connect-go-connect-json:" not in text
    assert "  connect-node-connect:" in text and "  connect-node-connect-gzip:" in text
    assert "connect-node-connect-grpc:" not in text


@pytest.mark.parametrize("name", SUBJECTS)
def test_every_wire_and_codec_is_served_by_the_one_process(lab, name) -> None:
    impl = lab.implementation(name)
    assert lab.pids[name] == lab.pids[impl.served_by] and lab.endpoints[name] == lab.endpoints[impl.served_by]


@pytest.mark.parametrize("name", SUBJECTS)
def test_errors_carry_the_contracts_connect_codes_on_every_wire(client_of, name, seeded) -> None:
    client = client_of(name)
    expect("connect", NOT_FOUND, client.get, "999999999999")
    expect("connect", INVALID_ARGUMENT, client.get, "not-an-id")
    expect("connect", INVALID_ARGUMENT, client.list, 5000, 0)


@pytest.mark.parametrize("server", ONE_HANDLER)
def test_a_fetch_is_a_get_and_a_write_is_not(lab, seeded, server) -> None:
    """Connect's GET (the message in the query) for GetGame, whose schema says it has no side
    effects; CreateGame refuses it. The errors are Connect's JSON body with the contract's code."""
    endpoint = lab.endpoints[server]
    known = dataset.documents(seeded[:1])[0]["_id"]
    message = base64.urlsafe_b64encode(pb.GameId(id=known).SerializeToString()).decode().rstrip("=")
    reply = requests.get(endpoint + GET_GAME, params={"connect": "v1", "encoding": "proto", "base64": "1",
                                                      "message": message}, timeout=10)
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "application/proto"
    assert pb.Game.FromString(reply.content).id == known
    as_json = requests.get(endpoint + GET_GAME, params={"connect": "v1", "encoding": "json",
                                                        "message": json.dumps({"id": "999999999999"})}, timeout=10)
    assert as_json.status_code == 404 and as_json.json()["code"] == CONNECT_CODE[NOT_FOUND]
    refused = requests.get(endpoint + "/protolab.games.v1.Games/CreateGame",
                           params={"connect": "v1", "encoding": "json", "message": "{}"}, timeout=10)
    assert refused.status_code == 405
    assert requests.post(endpoint + "/protolab.games.v1.Games/GetGame", json={"id": known}, timeout=10).json()["id"] \
        == known


@pytest.mark.parametrize("server", ONE_HANDLER)
def test_grpcio_and_the_lab_grpc_wire_reach_the_same_handler(lab, seeded, server) -> None:
    """The one handler serves gRPC to grpcio, the gRPC ecosystem's own client, on the same port."""
    known = dataset.documents(seeded[:1])[0]["_id"]
    host_port = lab.endpoints[server].split("://", 1)[1]
    grpc_client = connect("grpc", host_port)
    ours = ConnectClient(lab.endpoints[server], wire="grpc")
    try:
        assert grpc_client.get(known) == ours.get(known)
        expect("grpc", NOT_FOUND, grpc_client.get, "999999999999")
    finally:
        grpc_client.close()
        ours.close()


def test_the_client_refuses_an_unknown_wire_or_codec() -> None:
    with pytest.raises(ValueError, match="wire 'soap'"):
        ConnectClient("http://127.0.0.1:1", wire="soap")
    with pytest.raises(ValueError, match="codec 'xml'"):
        ConnectClient("http://127.0.0.1:1", codec="xml")


# The frameworks' own tools against the one server ---------------------------------------------

BUF = ("@bufbuild/buf", "1.75.0")  # the buf CLI, as npm serves it (its binary in @bufbuild/buf-linux-x64)


def buf_or_skip() -> str:
    """buf from npm, installed once into the lab's cache."""
    package, version = BUF
    root = settings.cache_dir() / f"buf-{version}"
    binary = root / "node_modules" / ".bin" / "buf"
    if not binary.exists():
        if shutil.which("npm") is None:
            pytest.skip(f"buf curl: the buf CLI comes from npm ({package}@{version}); npm is not installed")
        root.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["npm", "install", "--prefix", str(root), "--no-save", "--no-audit", "--no-fund",
                               f"{package}@{version}"], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    return str(binary)


@pytest.mark.parametrize("server", ONE_HANDLER)
@pytest.mark.parametrize("wire", [[], ["--protocol", "grpc", "--http2-prior-knowledge"], ["--protocol", "grpcweb"]],
                         ids=["connect", "grpc", "grpcweb"])
def test_buf_curl_calls_the_one_server_in_each_wire_protocol(lab, seeded, wire, server) -> None:
    buf = buf_or_skip()
    known = dataset.documents(seeded[:1])[0]["_id"]
    endpoint = lab.endpoints[server]
    got = subprocess.run([buf, "curl", "--schema", str(settings.ROOT / "contract" / "games.proto"), *wire,
                          "--data", json.dumps({"id": known}), endpoint + GET_GAME],
                         capture_output=True, text=True, timeout=120, cwd=settings.ROOT)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["id"] == known
    missing = subprocess.run([buf, "curl", "--schema", str(settings.ROOT / "contract" / "games.proto"), *wire,
                              "--data", '{"id": "999999999999"}', endpoint + GET_GAME],
                             capture_output=True, text=True, timeout=120, cwd=settings.ROOT)
    assert missing.returncode != 0 and '"not_found"' in missing.stdout + missing.stderr, missing.stderr


@pytest.mark.parametrize("server", ONE_HANDLER)
def test_grpcurl_calls_the_one_server_over_grpc_with_the_proto(lab, seeded, server) -> None:
    from test_outside_clients import grpcurl_or_skip

    grpcurl = grpcurl_or_skip()
    known = dataset.documents(seeded[:1])[0]["_id"]
    got = subprocess.run([grpcurl, "-plaintext", "-import-path", str(settings.ROOT / "contract"), "-proto",
                          "games.proto", "-d", json.dumps({"id": known}), lab.endpoints[server].split("://", 1)[1],
                          "protolab.games.v1.Games/GetGame"], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["id"] == known


def test_node_closes_a_connection_whose_request_it_answered_before_reading_it_all(lab, seeded) -> None:
    """connect/node_connect refuses a gRPC-Web request over the limit from its first bytes, on HTTP/1.1;
    the reply says Connection: close (services/common/node/env.js, CloseUnreadResponse: Node.js would
    otherwise keep the connection and wait for the rest of the body), and the server keeps serving."""
    host, port = lab.endpoints["connect/node_connect"].split("://", 1)[1].rsplit(":", 1)
    size = 70_000
    body = b"\x00" + size.to_bytes(4, "big") + b"\x0a" + b"\x01" * 100  # an envelope announcing 70,000 bytes
    head = (f"POST {GET_GAME} HTTP/1.1\r\nHost: lab\r\nContent-Type: application/grpc-web+proto\r\n"
            f"Content-Length: {5 + size}\r\n\r\n").encode()
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head + body)  # the rest of the body is never sent
        reply = b""
        while b"grpc-status" not in reply:
            chunk = conn.recv(4096)
            assert chunk, reply
            reply += chunk
    headers = reply.split(b"\r\n\r\n", 1)[0].lower()
    assert b"connection: close" in headers and b"grpc-status: 8" in reply  # resource_exhausted
    known = dataset.documents(seeded[:1])[0]["_id"]
    client = ConnectClient(lab.endpoints["connect/node_connect"], wire="grpcweb")
    try:
        assert client.get(known)["id"] == known
    finally:
        client.close()


def test_make_capture_leaves_the_connect_servers_out_saying_why_and_captures_one_named(monkeypatch, capsys) -> None:
    """`python -m capture` with no names: every implementation but the Connect servers (the protocol's
    descriptor, no_capture: one port for all its wire and codec subjects), each named with the reason;
    `--only connect/node_connect` captures it. (The capture itself is stopped before it starts.)"""
    import capture.__main__ as capture_main
    from capture.tshark import CaptureError
    from clients.protocols import PROTOCOLS
    from lab import registry

    asked = []

    def measure(**kwargs):
        asked.append(kwargs["names"])
        raise CaptureError("stopped by the test before it captures")

    monkeypatch.setattr(capture_main, "measure", measure)
    assert capture_main.main([]) == 2
    printed = capsys.readouterr().out
    every = [i.name for i in registry.select(None)]
    servers = [n for n in every if n.startswith("connect/")]
    assert "connect/node_connect" in servers and "connect/go_connect" in servers
    why = PROTOCOLS["connect"].no_capture
    assert why and all(f"capture: {name} left out: {why}" in printed for name in servers)
    assert asked[0] == [n for n in every if n not in servers]
    assert capture_main.main(["--only", "connect/node_connect"]) == 2
    assert asked[1] == ["connect/node_connect"]
