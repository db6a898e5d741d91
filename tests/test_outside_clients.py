"""What an engineer's own tools meet: `protolab serve` and the README's
examples run as printed (curl, grpcurl, GraphQL over HTTP, a WebSocket
client), gRPC reflection and health, GraphQL over HTTP as its spec says, and
REST's 405 with Allow and 415 for a body that is not JSON."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time

import grpc
import pytest
import requests
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from lab import settings
from lab.processes import free_port
from lab.pytest_plugin.fixtures import implementations
from lab.registry import select


def of(protocol: str) -> list:
    """Every implementation of `protocol` here (Python, Go, Node.js): each is held to the same rules."""
    return implementations(where=lambda impl: impl.protocol == protocol)

README = settings.ROOT / "README.md"
GAME_730 = "Counter-Strike 2"


# gRPC: reflection and health ---------------------------------------------------

@pytest.mark.parametrize("impl", of("grpc"))
def test_grpc_lists_its_services_by_reflection_and_answers_health(impl, lab):
    with grpc.insecure_channel(lab.endpoints[impl]) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=settings.CALL_TIMEOUT)
        names = {s.name for reply in replies for s in reply.list_services_response.service}
        assert {"protolab.games.v1.Games", "grpc.health.v1.Health"} <= names
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "protolab.games.v1.Games"):
            answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=settings.CALL_TIMEOUT)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as unknown:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=settings.CALL_TIMEOUT)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


GRPCURL = ("github.com/fullstorydev/grpcurl/cmd/grpcurl", "v1.9.3", "grpcurl")  # the README's


def grpcurl_or_skip() -> str:
    if shutil.which("go") is None and not any(settings.cache_dir().glob("grpcurl-*/bin/grpcurl")):
        pytest.skip("grpcurl is built with Go (go install ...grpcurl@v1.9.3): no Go on this machine")
    from lab.host.tools import go_install
    return str(go_install(*GRPCURL))


@pytest.mark.parametrize("impl", of("grpc"))
def test_grpcurl_lists_and_calls_the_service_by_reflection(impl, lab, seeded):
    grpcurl = grpcurl_or_skip()
    address = lab.endpoints[impl]
    listed = subprocess.run([grpcurl, "-plaintext", address, "list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    print(listed.stdout)
    assert {"protolab.games.v1.Games", "grpc.health.v1.Health"} <= set(listed.stdout.split())
    described = subprocess.run([grpcurl, "-plaintext", address, "describe", "protolab.games.v1.Games"],
                               capture_output=True, text=True, timeout=60)
    assert "rpc GetGame ( .protolab.games.v1.GameId ) returns ( .protolab.games.v1.Game )" in described.stdout
    got = subprocess.run([grpcurl, "-plaintext", "-d", '{"id": "730"}', address,
                          "protolab.games.v1.Games/GetGame"], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["name"] == GAME_730
    missing = subprocess.run([grpcurl, "-plaintext", "-d", '{"id": "999999"}', address,
                              "protolab.games.v1.Games/GetGame"], capture_output=True, text=True, timeout=60)
    assert "Code: NotFound" in missing.stderr


# GraphQL over HTTP ---------------------------------------------------------------

GQL_GET = '{ game(id: "730") { id name } }'


@pytest.mark.parametrize("impl", of("graphql"))
def test_graphql_query_over_get_and_media_type_by_accept(impl, lab, seeded):
    url = lab.endpoints[impl]
    for accept, media in ((None, "application/json"), ("application/json", "application/json"),
                          ("*/*", "application/json"),
                          ("application/graphql-response+json", "application/graphql-response+json"),
                          ("application/graphql-response+json, application/json;q=0.9",
                           "application/graphql-response+json")):
        headers = {"Accept": accept} if accept else {}
        reply = requests.get(url, params={"query": GQL_GET}, headers=headers, timeout=settings.CALL_TIMEOUT)
        assert reply.status_code == 200, reply.text
        assert reply.headers["Content-Type"].split(";")[0] == media, accept
        assert reply.json() == {"data": {"game": {"id": "730", "name": GAME_730}}}
    with_variables = requests.get(url, params={"query": "query($id: ID!) { game(id: $id) { name } }",
                                               "variables": json.dumps({"id": "730"})}, timeout=settings.CALL_TIMEOUT)
    assert with_variables.json() == {"data": {"game": {"name": GAME_730}}}


@pytest.mark.parametrize("impl", of("graphql"))
def test_graphql_mutation_over_get_is_405_with_allow(impl, lab, seeded, fingerprint):
    before = fingerprint()
    reply = requests.get(lab.endpoints[impl], params={"query": 'mutation { delete_game(id: "730") }'},
                         timeout=settings.CALL_TIMEOUT)
    assert reply.status_code == 405
    assert reply.headers["Allow"] == "POST"
    assert reply.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
    assert fingerprint() == before


@pytest.mark.parametrize("impl", of("graphql"))
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_graphql_post_needs_a_json_content_type(impl, lab, seeded, fingerprint, content_type):
    before = fingerprint()
    body = json.dumps({"query": 'mutation { delete_game(id: "730") }'}).encode()
    session = requests.Session()
    request = requests.Request("POST", lab.endpoints[impl], data=body).prepare()
    request.headers.pop("Content-Type", None)
    if content_type:
        request.headers["Content-Type"] = content_type
    reply = session.send(request, timeout=settings.CALL_TIMEOUT)
    assert reply.status_code == 415, reply.text
    assert reply.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
    assert fingerprint() == before


@pytest.mark.parametrize("impl", of("graphql"))
def test_graphql_status_codes_for_the_graphql_response_media_type(impl, lab, seeded):
    url = lab.endpoints[impl]
    accept = {"Accept": "application/graphql-response+json"}

    def post(query: str) -> requests.Response:
        return requests.post(url, json={"query": query}, headers=accept, timeout=settings.CALL_TIMEOUT)
    parse_error = post("{ game(")
    assert parse_error.status_code == 400 and "data" not in parse_error.json()
    invalid = post("{ nosuchfield }")
    assert invalid.status_code == 400 and "data" not in invalid.json()
    not_found = post('{ game(id: "999999") { id } }')  # executed: a field error, 200 with data
    assert not_found.status_code == 200 and not_found.json()["data"] is None
    assert not_found.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    refused = requests.post(url, json={"query": "{ health }"}, headers={"Accept": "text/html"},
                            timeout=settings.CALL_TIMEOUT)
    assert refused.status_code == 406


# REST: Allow and content types ----------------------------------------------------

@pytest.mark.parametrize("impl", of("rest"))
def test_rest_405_carries_allow(impl, lab, seeded):
    base = lab.endpoints[impl]
    for method, path, allowed in (("PATCH", "/games/730", {"GET", "PUT", "DELETE"}),
                                  ("DELETE", "/games", {"GET", "POST"})):
        reply = requests.request(method, base + path, timeout=settings.CALL_TIMEOUT)
        assert reply.status_code == 405
        assert allowed <= {m.strip() for m in reply.headers["Allow"].split(",")}
        assert reply.json()["error"]["code"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize("impl", of("rest"))
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_rest_body_that_is_not_json_is_415(impl, lab, seeded, fingerprint, content_type):
    before = fingerprint()
    body = json.dumps(seeded[0]).encode()
    request = requests.Request("PUT", lab.endpoints[impl] + "/games/730", data=body).prepare()
    request.headers.pop("Content-Type", None)
    if content_type:
        request.headers["Content-Type"] = content_type
    reply = requests.Session().send(request, timeout=settings.CALL_TIMEOUT)
    assert reply.status_code == 415, reply.text
    assert reply.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert fingerprint() == before


# protolab serve and the README's examples -----------------------------------------

def readme_examples() -> list[str]:
    text = README.read_text()
    block = re.search(r"<!-- serve-examples[^>]*-->\n```\n(.*?)```", text, re.S)
    assert block, "README.md lost its serve-examples block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _ports_free(base: int, count: int = 50) -> bool:  # the offsets go up to 47
    for port in range(base, base + count):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def curl_or_skip() -> str:
    if shutil.which("curl") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "curl"],
                       capture_output=True, timeout=600)
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed and could not be installed from Debian's packages")
    return "curl"


def test_readme_serve_examples_work_as_printed(tmp_path):
    curl_or_skip()
    grpcurl = grpcurl_or_skip()
    lines = readme_examples()
    serve_line, examples = lines[0], lines[1:]
    assert serve_line.startswith(".venv/bin/protolab serve --port-base 18000") and serve_line.endswith("&")
    base = 18000
    if not _ports_free(base):  # another run holds them: the same commands on other ports
        base = next(b for b in range(free_port() // 100 * 100, 65000, 100) if _ports_free(b))

    def rewrite(line: str) -> str:
        return re.sub(r"\b180(\d\d)\b", lambda m: str(base + int(m.group(1))), line)
    endpoints = tmp_path / "endpoints.json"
    argv = shlex.split(rewrite(serve_line.rstrip("& ")).replace("endpoints.json", str(endpoints)))
    serve = subprocess.Popen(argv, cwd=settings.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 4 * settings.STARTUP_TIMEOUT
        while not endpoints.exists() and serve.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert endpoints.exists(), serve.stdout.read() if serve.poll() is not None else "serve did not start"
        document = json.loads(endpoints.read_text())
        assert document["implementations"]["rest/python_flask"]["endpoint"] == f"http://127.0.0.1:{base + 1}"
        # Every implementation at base + its manifest's own offset: stable whatever else the lab holds.
        for impl in select():
            assert f":{base + impl.port_offset(-1000)}" in document["implementations"][impl.name]["endpoint"], impl.name
        outputs = []
        for line in examples:
            command = rewrite(line).replace("grpcurl ", f"{grpcurl} ", 1)
            done = subprocess.run(["bash", "-c", command], cwd=settings.ROOT, capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, (line, done.stderr)
            outputs.append((line, done.stdout))
        for line, out in outputs:
            print(f"$ {line}\n{out[:300]}")
            if " list" in line:
                assert "protolab.games.v1.Games" in out and "grpc.health.v1.Health" in out
            elif "Health/Check" in line:
                assert '"status": "SERVING"' in out
            elif "/events?" in line:  # SSE: two events of the synthetic feed, then its end
                assert out.count("event: synthetic") == 2 and "event: end" in out, out
            else:
                assert GAME_730 in out, line
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            out, _ = serve.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            out, _ = serve.communicate()
    assert "seeded    3424 games" in out
    assert serve.returncode == 0, out


def test_bind_and_dial_addresses_are_separate_settings(monkeypatch):
    monkeypatch.delenv("LAB_DIAL_HOST", raising=False)
    monkeypatch.setenv("LAB_HOST", "0.0.0.0")
    assert (settings.host(), settings.dial_host()) == ("0.0.0.0", "127.0.0.1")
    monkeypatch.setenv("LAB_DIAL_HOST", "192.0.2.7")
    assert (settings.host(), settings.dial_host()) == ("0.0.0.0", "192.0.2.7")
    monkeypatch.setenv("LAB_HOST", "127.0.0.2")
    monkeypatch.delenv("LAB_DIAL_HOST")
    assert settings.dial_host() == "127.0.0.2"


@pytest.mark.parametrize("impl", of("rest"))
@pytest.mark.parametrize("value", ["²", "５", "1" * 3000, "-1", "1e3", " 1", "0x10", ""])
def test_rest_page_parameters_take_ascii_digits_only(impl, lab, value):
    """Found by fuzzing: "²" passed str.isdigit() and int() then failed, a 500."""
    reply = requests.get(lab.endpoints[impl] + "/games", params={"limit": value}, timeout=settings.CALL_TIMEOUT)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["code"] == "INVALID_ARGUMENT"
