"""With the database gone, every service answers UNAVAILABLE in its protocol's
own terms, within its timeout, and keeps serving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from expect import expect

from contract.errors import UNAVAILABLE
from lab import dataset
from lab.registry import SERVICES, TOOLCHAIN_HINTS, select
from lab.stack import running_lab


@pytest.fixture
def lab_without_database(monkeypatch):
    """A lab of its own (the session's stays intact) whose database is then killed."""
    if os.environ.get("MONGODB_URI"):
        pytest.skip("the lab must own the database to take it away")
    monkeypatch.setenv("MONGODB_TIMEOUT_MS", "300")
    with running_lab(mode="native") as lab:
        clients = {impl.name: (impl, lab.client(impl.name)) for impl in lab.implementations}
        os.kill(lab.database.pid, signal.SIGKILL)
        try:
            yield lab, clients
        finally:
            for _, client in clients.values():
                client.close()


def test_every_protocol_says_unavailable_and_keeps_serving(lab_without_database):
    """Every service at once, each through its own client (each answer waits
    out the database timeout, so one after another took ~35 s)."""
    lab, clients = lab_without_database
    game = dataset.games(1)[0]

    def check(name: str) -> None:
        impl, client = clients[name]
        for _ in range(2):  # and again: the first answer did not take the server down
            if impl.serves("get", "create"):  # a push-only service (SSE) has health alone
                expect(impl.protocol, UNAVAILABLE, client.get, "730")
                expect(impl.protocol, UNAVAILABLE, client.create, game)
            expect(impl.protocol, UNAVAILABLE, client.health)
        assert lab.pids[name] and os.waitpid(lab.pids[name], os.WNOHANG) == (0, 0), f"{name} exited"
    with ThreadPoolExecutor(len(clients)) as pool:
        futures = {name: pool.submit(check, name) for name in clients}
    failures = {name: repr(f.exception()) for name, f in futures.items() if f.exception()}
    assert not failures, failures


# A socket whose peer (the killed database) has ended it, written to a moment
# later, as a pooled connection is: Node's own EPIPE error, which mongodb's
# driver let through unwrapped while waiting for 'drain'.
_ENDED_SOCKET = """
import net from 'node:net';
import { databaseError } from %s;
const server = net.createServer((c) => c.end()).listen(0, '127.0.0.1', () => {
  const socket = net.connect(server.address().port, '127.0.0.1');
  socket.on('error', () => {});
  socket.on('end', () => setImmediate(() => socket.write(Buffer.alloc(64), (err) => {
    const e = databaseError(err);
    console.log(JSON.stringify({ raw: err.code, code: e.code ?? null, message: e.message }));
    server.close();
  })));
});
"""


def test_node_store_says_unavailable_for_a_socket_the_database_ended():
    node = [i for i in select() if i.language == "node" and i.build_command]
    if not node:
        pytest.skip(f"no Node.js implementation here: {TOOLCHAIN_HINTS['node']}")
    node[0].build()  # the services' node_modules, where store.js finds mongodb
    store = (SERVICES / "common" / "node" / "store.js").as_uri()
    done = subprocess.run(["node", "--input-type=module", "-e", _ENDED_SOCKET % json.dumps(store)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["raw"] == "EPIPE", answer
    assert answer["code"] == UNAVAILABLE, answer
    assert "ended by the other party" in answer["message"], answer
