"""Docker mode: compose.yaml covers every implementation, and the stack works.

The static tests need no Docker. The smoke test (marked `docker`) brings the
stack up through the lab (lab.host.compose), runs one round of every operation for
every implementation through the lab's clients, brings it down and checks
that the host is as before (ip_forward, the FORWARD policy, no daemon left).
It is skipped only where Docker cannot run, with the reason printed.

    pytest tests/test_docker_mode.py                       # own stack, host check
    pytest --lab-mode docker tests/test_docker_mode.py     # the session's stack
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest

from lab import dataset, settings
from lab.axes import Site
from lab.database import secantus_flags, secantus_path
from lab.host import compose, dockerd
from lab.registry import CRUD_CALLS, discover, every_variant
from lab.stack import Lab, running_lab, running_sites

IMPLEMENTATIONS = discover()
# compose.yaml holds every variant a manifest declares, measured by default or not (LAB_VARIANTS), that is
# a process of its own (one varied only on the client's side is served by another's: registry served_by)
DECLARED = [i for i in every_variant() if not i.not_in_docker and i.served_by == i.name]


def test_compose_file_is_generated_from_the_manifests() -> None:
    assert compose.stale_reason() is None, "run: python -m lab.host.compose write"


def _service_block(text: str, name: str) -> str:
    lines = text.splitlines()
    try:
        start = lines.index(f"  {name}:")
    except ValueError:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:3].strip() and lines[i][2] != " "),
               len(lines))
    return "\n".join(lines[start:end]) + "\n"


@pytest.mark.parametrize("impl", DECLARED, ids=lambda i: i.name)
def test_every_implementation_is_a_compose_service(impl) -> None:
    name = compose.service_name(impl)
    block = _service_block(compose.COMPOSE_FILE.read_text(), name)
    assert block, f"{impl.name} is not in compose.yaml"
    assert f"SERVICE: {impl.base}\n" in block  # a variant runs its base's image, with its own environment
    for name, value in compose.container_environment(impl).items():
        assert f"      {name}: {compose._q(value)}\n" in block
    assert f'"127.0.0.1:${{{compose.port_variable(impl)}:-}}:{compose.container_port(impl)}"' in block
    assert "condition: service_healthy" in block
    assert "healthcheck:" not in block  # readiness: the lab, through the protocol's own client
    # a TLS subject mounts the run's certificate directory (LAB_TLS_DIR) read-only; no other does
    mount = f'    volumes: ["${{LAB_TLS_DIR:-./docker/tls}}:{compose.CONTAINER_TLS}:ro"]\n'
    assert (mount in block) == compose.uses_tls_files(impl) == bool(impl.service_env().get("LAB_TLS"))
    assert (settings.ROOT / compose.dockerfile_of(impl)).is_file(), impl.dockerfile
    assert "\nHEALTHCHECK " not in (settings.ROOT / compose.dockerfile_of(impl)).read_text()
    assert f"SERVICE_COMMAND: {compose._q(compose.container_command(impl))}\n" in block
    assert "{" not in compose.container_command(impl), "a placeholder left unmapped"
    for _, variable, default in compose.language_of(impl).images:
        assert f"${{{variable}:-{default}}}" in block


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda i: i.name)
def test_an_image_is_built_from_its_own_inputs_only(impl) -> None:
    inputs = {p.relative_to(settings.ROOT).as_posix() for p in compose.image_inputs(impl)}
    assert compose.dockerfile_of(impl) in inputs
    assert any(p.startswith(f"services/{impl.base}/") for p in inputs)
    others = [i for i in IMPLEMENTATIONS if i.language != impl.language or i.protocol != impl.protocol]
    for other in others:  # (a Python folder may share another Python folder's modules of its protocol)
        assert not any(p.startswith(f"services/{other.base}/") for p in inputs), other.name
    foreign = {"python": "pyproject.toml", "go": "services/go.mod", "node": "services/package-lock.json"}
    for language, marker in foreign.items():
        if language != impl.language:
            assert marker not in inputs, f"{impl.name} would be rebuilt when {marker} changes"


def test_source_hash_follows_the_base_image() -> None:
    impl = IMPLEMENTATIONS[0]
    images = {variable: default for _, variable, default in compose.language_of(impl).images}
    other = {variable: f"{image}-other" for variable, image in images.items()}
    assert compose.source_hash(impl, images) == compose.source_hash(impl, dict(images))
    assert compose.source_hash(impl, images) != compose.source_hash(impl, other)


def test_the_database_image_is_built_from_the_binary_in_the_labs_cache(tmp_path, monkeypatch) -> None:
    """PROTOLAB_CACHE moves it, as it moves the native build (lab/database.py); PROTOLAB_SECANTUSD_BINARY names
    another."""
    monkeypatch.delenv("PROTOLAB_SECANTUSD_BINARY", raising=False)
    monkeypatch.setenv("PROTOLAB_CACHE", str(tmp_path))
    assert dockerd.secantusd_binary() == secantus_path()
    assert dockerd.secantusd_binary().is_relative_to(tmp_path)
    monkeypatch.setenv("PROTOLAB_SECANTUSD_BINARY", str(tmp_path / "elsewhere"))
    assert dockerd.secantusd_binary() == tmp_path / "elsewhere"


def test_every_published_port_is_on_loopback_only() -> None:
    ports = [line for line in compose.COMPOSE_FILE.read_text().splitlines() if "ports:" in line]
    in_docker = [i for i in every_variant() if not i.not_in_docker and i.served_by == i.name]  # compose.yaml
    assert len(ports) == len(in_docker) + 1
    assert all('["127.0.0.1:' in line for line in ports)


@pytest.mark.skipif(not shutil.which("docker-compose"),
                    reason="docker-compose is not installed (apt-get install docker-compose)")
def test_docker_compose_accepts_the_file() -> None:
    proc = subprocess.run(["docker-compose", "-f", str(compose.COMPOSE_FILE), "config", "-q"],
                          capture_output=True, text=True, timeout=60, cwd=settings.ROOT)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("change_streams", [True, False])
def test_the_database_container_runs_as_the_native_database(change_streams: bool) -> None:
    """The lab's secantusd image gets native mode's flags (a single-node replica
    set for tests: the push feed `changes`; standalone for measurements); another
    image (the official mongo) keeps its own command."""
    assert "    command: ${LAB_MONGO_ARGS:-}\n" in _service_block(compose.COMPOSE_FILE.read_text(), "mongo")
    images = compose.Images({"LAB_MONGO_IMAGE": dockerd.SECANTUSD_IMAGE}, "protolab", "test")
    stack = compose.ComposeStack(None, [], images, change_streams=change_streams,  # type: ignore[arg-type]
                                 sync_on_commit=True)
    args = shlex.split(stack.mongo_args())
    assert args == secantus_flags("0.0.0.0", compose.MONGO_PORT, "/data/db", change_streams=change_streams,
                                  sync_on_commit=True)
    assert ("--standalone" in args) is not change_streams
    assert ("replica-set" in compose.mode_text(change_streams)) is change_streams
    # LAB_DB_IN_MEMORY=1 (the tests): its files on the container's tmpfs mount, not its volume.
    assert f'    tmpfs: ["{compose.MONGO_MEMORY}"]\n' in _service_block(compose.COMPOSE_FILE.read_text(), "mongo")
    in_memory = compose.ComposeStack(None, [], images, change_streams=change_streams,  # type: ignore[arg-type]
                                     sync_on_commit=True, in_memory=True)
    assert shlex.split(in_memory.mongo_args()) == secantus_flags(
        "0.0.0.0", compose.MONGO_PORT, compose.MONGO_MEMORY, change_streams=change_streams, sync_on_commit=True)
    official = compose.ComposeStack(None, [], compose.Images({"LAB_MONGO_IMAGE": "mongo:8.0"}, "protolab", "test"),  # type: ignore[arg-type]
                                    change_streams=change_streams)
    assert official.mongo_args() == ""


REFUSED = "error while removing network: network protolab-x_default id 55be has active endpoints"


@pytest.mark.parametrize(("replies", "left", "outcome"), [
    ([0], True, "down"),
    ([1, 0], True, "down"),
    ([1, 1], False, "fails"),  # any failure but the network's: tried once more, then it counts
    ([REFUSED, 0], True, "down"),
    ([REFUSED, REFUSED], False, "network left"),  # only an empty network is left: the next stack removes it
    ([REFUSED, REFUSED], True, "fails"),  # a container still there: the stack's failure
])
def test_compose_down_is_tried_once_more_and_may_leave_only_an_empty_network(
        replies: list, left: bool, outcome: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule, with docker-compose's replies given (its refusal of the network was
    seen once in 37 up/down cycles here, not on demand; that the next
    stack removes what is left: test_docker_stack_serves_every_operation...)."""
    daemon = dockerd.Dockerd()
    daemon.owned = True
    stack = compose.ComposeStack(daemon, [], compose.Images({}, "protolab", "test"))
    calls: list[tuple[str, ...]] = []
    results = iter(replies)

    def fake(*args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        reply = next(results)
        code, err = (1, reply) if isinstance(reply, str) else (reply, "removal in progress")
        assert not check
        return subprocess.CompletedProcess(["docker-compose", *args], code, "", err)

    monkeypatch.setattr(stack, "compose", fake)
    monkeypatch.setattr(stack, "containers", lambda: {"ws-go-coder": {}} if left else {})
    if outcome == "fails":
        with pytest.raises(compose.StackFailed, match="down failed twice"):
            stack.down()
    else:
        stack.down()
        assert stack.timings["down_tries"] == len(calls)
        assert stack.timings.get("network_left", False) == (outcome == "network left")
    assert len(calls) == len(replies) and all(c[0] == "down" and "-v" in c for c in calls)


def _one_round(lab: Lab, name: str, game: dict, other: dict) -> None:
    client = lab.client(name)
    try:
        client.health()
        if not lab.implementation(name).serves(*CRUD_CALLS):
            return  # a push service (SSE): its health call reached the database; tests/test_push.py has the rest
        created = client.create(game)
        game_id = created["id"]
        assert {k: v for k, v in created.items() if k != "id"} == game
        assert client.get(game_id) == created
        assert game_id in [g["id"] for g in client.list(1000, 0)]
        assert client.update(game_id, other) == {"id": game_id, **other}
        client.delete(game_id)
        assert game_id not in [g["id"] for g in client.list(1000, 0)]
    finally:
        client.close()


@pytest.mark.docker
def test_docker_stack_serves_every_operation_and_leaves_the_host_as_it_was(
        request: pytest.FixtureRequest) -> None:
    reason = dockerd.docker_unavailable_reason()
    if reason:
        print(f"SKIP: Docker cannot run here: {reason}")
        pytest.skip(f"Docker cannot run here: {reason}")
    session_is_docker = request.config.getoption("--lab-mode") == "docker"
    ip_forward = dockerd.IP_FORWARD.read_text().strip()
    forward = dockerd.forward_policy() or "ACCEPT"
    games = dataset.games()
    left = ""
    if not session_is_docker and not dockerd.dockerd_pids():
        # As an earlier stack's `down` can leave it (ComposeStack.down): an empty network.
        left = f"protolab-{uuid.uuid4().hex[:10]}_default"
        with dockerd.Dockerd() as d:
            d.docker("network", "create", "--label", f"com.docker.compose.project={left[:-8]}", left, timeout=60)
    t0 = time.monotonic()
    with ExitStack() as stack:
        # With --lab-mode docker the session's stack is used: one daemon per host.
        lab = request.getfixturevalue("lab") if session_is_docker else stack.enter_context(
            running_lab(mode="docker"))
        up = time.monotonic() - t0
        assert lab.mode == "docker"
        assert lab.database.server and lab.database.version
        description = compose.active_description()
        assert description and description["daemon"]["version"]
        if left:
            assert left in description["networks_removed_at_up"]
        store = lab.store()
        dataset.reset(store.games, [], indexes=False)  # the session's stack may hold others' games
        store.close()
        for impl in lab.implementations:
            assert lab.endpoints[impl.name].split("//")[-1].startswith("127.0.0.1:")
            _one_round(lab, impl.name, games[11], games[12])
        pids = dict(lab.pids)
        started_daemon = description["daemon"]["started_by_lab"]
        daemon_pid = description["daemon_pid"]
        t1 = time.monotonic()
    print(f"stack up (incl. daemon, images) {up:.1f} s; down (incl. daemon) {time.monotonic() - t1:.1f} s; "
          f"daemon started here: {started_daemon}")
    if session_is_docker:
        return  # the session's stack is brought down (and the host restored) at the session's end
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids.values()), "a container outlived the stack"
    if started_daemon:
        assert dockerd.IP_FORWARD.read_text().strip() == ip_forward
        assert (dockerd.forward_policy() or "ACCEPT") == forward
        assert not Path(f"/proc/{daemon_pid}").exists(), "dockerd outlived the lab"


@pytest.mark.docker
def test_ctrl_c_on_docker_serve_brings_the_stack_down_and_restores_the_host(
        request: pytest.FixtureRequest) -> None:
    """Ctrl-C at a terminal signals the whole foreground process group: the
    stack must still come down in order (containers, then the daemon). One
    service beside the database is enough for that order (the whole stack took
    16 s up and 6 s down, this one 5 s and 3 s; the test above brings up all)."""
    reason = dockerd.docker_unavailable_reason()
    if reason:
        pytest.skip(f"Docker cannot run here: {reason}")
    if request.config.getoption("--lab-mode") == "docker" or dockerd.dockerd_pids():
        pytest.skip("a Docker daemon is already running: this test needs to own it")
    ip_forward = dockerd.IP_FORWARD.read_text().strip()
    forward = dockerd.forward_policy() or "ACCEPT"
    proc = subprocess.Popen([sys.executable, "-m", "lab.cli", "--lab-mode", "docker", "serve",
                             "--only", "rest/go_nethttp"],
                            cwd=settings.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own group, as a shell's foreground job
    lines = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (line := proc.stdout.readline()):
            lines.append(line)
            if line.startswith("serving"):
                break
        assert lines and lines[-1].startswith("serving"), "".join(lines)
        pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", "".join(lines))]
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            # Not down within 120 s (once in make test, 2026-11-28, with no container stopped): its
            # threads' stacks say where it waits (lab.cli: SIGUSR1); a second Ctrl-C unwinds, restoring the host.
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(1)
            os.killpg(proc.pid, signal.SIGINT)
            try:
                rest, _ = proc.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                rest = "(still running 90 s after a second Ctrl-C)"
            pytest.fail("serve was not down 120 s after Ctrl-C; its output, the stacks, what a second Ctrl-C did:\n"
                        + "".join(lines) + rest)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode == 0, "".join(lines) + out
    assert "host restored" in out, out
    assert pids and all(not Path(f"/proc/{pid}").exists() for pid in pids), "a container outlived the stack"
    assert dockerd.IP_FORWARD.read_text().strip() == ip_forward
    assert (dockerd.forward_policy() or "ACCEPT") == forward


def _environ(pid: int) -> list[dict[str, str]]:
    """The environment of the process and of each of its children (gunicorn's worker), as each process has it."""
    import psutil
    out = []
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        raw = Path(f"/proc/{proc.pid}/environ").read_bytes()
        out.append(dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item))
    return out


@pytest.mark.docker
def test_a_setting_defined_once_reaches_the_service_natively_and_in_docker_in_one_run(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker model set once in lab/axes.py (the +gthread variant) and a run setting
    (MONGODB_TIMEOUT_MS) reach the service's own processes in both modes, which run side by
    side as two sites of one run; read from each process's environment, natively and in
    its container (the container's processes are this host's), and each site serves."""
    reason = dockerd.docker_unavailable_reason()
    if reason:
        pytest.skip(f"Docker cannot run here: {reason}")
    if request.config.getoption("--lab-mode") != "native" or dockerd.dockerd_pids():
        pytest.skip("a Docker daemon is already running (the session's or another run's): one per host")
    monkeypatch.setenv("MONGODB_TIMEOUT_MS", "4321")
    subject = "rest/python_flask+gthread"
    with running_sites([Site(), Site("docker")], names=[subject]) as sites:
        assert set(sites.subjects()) == {subject, f"{subject}@docker", "direct", "direct@docker"}
        for name in (subject, f"{subject}@docker"):
            processes = _environ(sites.pid(name))
            workers = [env for env in processes if env.get("PORT")]
            assert workers, f"{name}: no service process with the contract's environment"
            for env in workers:
                assert env["LAB_WORKER_MODEL"] == "gthread", name
                assert env["MONGODB_TIMEOUT_MS"] == "4321", name
            client = sites.client(name)
            try:
                client.health()
            finally:
                client.close()
        # each site's baseline is its own database
        assert sites.lab_of("direct").database.uri != sites.lab_of("direct@docker").database.uri


# TLS and HTTP/2 over TLS in Docker mode: the run's CA and certificate (lab/tls.py) mounted into the
# containers (lab/host/compose.py, CONTAINER_TLS), dialled at 127.0.0.1 on the published port.
TLS_IN_DOCKER = {  # subject -> (TLS version, the ALPN protocol the lab's client must get)
    "rest/go_nethttp+tls13": ("TLSv1.3", "http/1.1"),
    "rest/go_nethttp+h2": ("TLSv1.3", "h2"),
    "grpc/go_grpc+tls13": ("TLSv1.3", "h2"),
    "rest/python_flask+tls12": ("TLSv1.2", "http/1.1"),
    "graphql/node_yoga+h2": ("TLSv1.3", "h2"),
}


def _tls_handshake(endpoint: str, ca: Path, alpn: list[str]) -> tuple[str | None, str | None]:
    """(version, ALPN protocol) of a new TLS connection to `endpoint`, verified against `ca` alone
    for the address the lab dials (127.0.0.1)."""
    import socket
    import ssl
    from urllib.parse import urlsplit
    parts = urlsplit(endpoint if "://" in endpoint else f"tcp://{endpoint}")
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(alpn)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=parts.hostname) as wrapped:
        return wrapped.version(), wrapped.selected_alpn_protocol()


@pytest.mark.docker
def test_tls_and_h2_subjects_in_docker_are_verified_by_the_runs_ca(request: pytest.FixtureRequest) -> None:
    """Each TLS subject's container serves the run's certificate for 127.0.0.1: the TLS version its subject
    names, verified against the lab's CA; an h2 subject (and gRPC) chooses h2 by ALPN, the others
    http/1.1; a client that trusts another CA is refused; the lab's own clients work through it (an
    h2 subject's every answer checked to be HTTP/2), and the container reads the mounted files."""
    import ssl

    from lab import tls
    reason = dockerd.docker_unavailable_reason()
    if reason:
        pytest.skip(f"Docker cannot run here: {reason}")
    games = dataset.games()
    with running_lab(list(TLS_IN_DOCKER), mode="docker", change_streams=False) as lab:
        assert lab.mode == "docker"
        for subject, (version, alpn) in TLS_IN_DOCKER.items():
            endpoint = lab.endpoints[subject]
            assert endpoint.split("//")[-1].startswith("127.0.0.1:"), endpoint
            offered = ["h2", "http/1.1"] if alpn == "h2" else ["http/1.1"]
            assert _tls_handshake(endpoint, tls.ca_file(), offered) == (version, alpn), subject
            with pytest.raises(ssl.SSLCertVerificationError):
                _tls_handshake(endpoint, tls.wrong_authority_file(), offered)
            _one_round(lab, subject, games[13], games[14])
            if subject.endswith("+h2"):
                client = lab.client(subject)
                try:
                    client.health()
                    assert client.transport.last == ("HTTP/2", "h2"), subject
                finally:
                    client.close()
            env = _environ(lab.pids[subject])[0]
            assert env["LAB_TLS_CERT"] == "/run/protolab-tls/server.pem" and env["LAB_TLS"], subject
        client = lab.client("rest/go_nethttp+tls13", ca_file=str(tls.wrong_authority_file()))
        try:
            with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
                client.health()
        finally:
            client.close()
