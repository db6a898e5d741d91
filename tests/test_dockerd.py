"""Smoke test of the Docker groundwork: daemon, base images, embedded database.

Starts (or reuses) a daemon through lab.host.dockerd, builds the base images
(idempotent: the data root persists), runs protolab/secantusd with a port
published on 127.0.0.1, round-trips a document with pymongo from the host,
and checks that stopping the daemon restores ip_forward and the FORWARD policy.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path

import pytest

from lab.host import dockerd

pytestmark = pytest.mark.docker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(d: dockerd.Dockerd, container: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = json.loads(d.docker("inspect", "--format", "{{json .State}}", container).stdout)
        if state.get("Health", {}).get("Status") == "healthy":
            return
        if not state.get("Running"):
            logs = d.docker("logs", container, check=False)
            pytest.fail(f"{container} exited: {logs.stdout}{logs.stderr}")
        time.sleep(0.2)  # poll interval; readiness is the health status
    pytest.fail(f"{container} not healthy after {timeout} s")


def test_secantusd_in_docker_round_trip() -> None:
    reason = dockerd.docker_unavailable_reason()
    if reason:
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    if not dockerd.secantusd_binary().is_file():
        pytest.skip(f"{dockerd.secantusd_binary()} is not built")
    pymongo = pytest.importorskip("pymongo")

    dockerd.ensure_docker_installed()
    ip_forward_before = dockerd.IP_FORWARD.read_text().strip()
    forward_before = dockerd.forward_policy() or "ACCEPT"

    d = dockerd.Dockerd()
    name = f"protolab-smoke-{uuid.uuid4().hex[:8]}"
    with d:
        pid = d.pid
        print(f"dockerd: {json.dumps(d.settings)}")
        print(f"while running: ip_forward={dockerd.IP_FORWARD.read_text().strip()}")
        print(f"while running: FORWARD policy={dockerd.forward_policy()}")
        print(f"images: {json.dumps(dockerd.build_images(d))}")
        port = _free_port()
        d.docker(
            "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:27017",
            dockerd.SECANTUSD_IMAGE,
        )  # fmt: skip
        try:
            _wait_healthy(d, name, timeout=60)
            client = pymongo.MongoClient(
                f"mongodb://127.0.0.1:{port}/",
                directConnection=True,
                serverSelectionTimeoutMS=5000,
                connectTimeoutMS=5000,
                socketTimeoutMS=5000,
            )
            try:
                games = client["protolab_smoke"]["games"]
                doc = {"_id": "570", "name": "Dota 2", "tags": ["MOBA"], "price": None}
                games.insert_one(dict(doc))
                assert games.find_one({"_id": "570"}) == doc
            finally:
                client.close()
        finally:
            d.docker("rm", "-f", "-v", name, check=False)
        assert name not in d.docker("ps", "-a", "--format", "{{.Names}}").stdout
    if d.settings["started_by_lab"]:
        print(f"dockerd timings: {d.timings}")
        assert dockerd.IP_FORWARD.read_text().strip() == ip_forward_before
        assert (dockerd.forward_policy() or "ACCEPT") == forward_before
        assert pid is not None and not Path(f"/proc/{pid}").exists()
        assert not list(Path("/tmp").glob("protolab-dockerd-*/docker.sock"))
