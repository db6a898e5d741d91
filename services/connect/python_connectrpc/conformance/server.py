"""The conformance server of connect/python_connectrpc, as the suite's runner starts it: reads the
runner's ServerCompatRequest (size-delimited protobuf) on stdin, starts the conformance application
(app.py) under gunicorn as the lab's service runs (services/common/gunicorn_conf.py) on a free port of
127.0.0.1, and once it answers writes the ServerCompatResponse to stdout; it stops gunicorn when stopped."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from services.connect.python_connectrpc.conformance.gen import server_compat_pb2 as pb

ROOT = Path(__file__).resolve().parents[4]


def main() -> int:
    size = struct.unpack(">I", sys.stdin.buffer.read(4))[0]
    request = pb.ServerCompatRequest.FromString(sys.stdin.buffer.read(size))
    if request.use_tls:
        sys.exit("TLS: not claimed by this server's configuration")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), "PYTHONPATH": str(ROOT),
           "CONFORMANCE_RECEIVE_LIMIT": str(request.message_receive_limit)}
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", str(ROOT / "services/common/gunicorn_conf.py"),
                               "services.connect.python_connectrpc.conformance.app:app"], env=env, cwd=ROOT)
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                sys.exit("the conformance server did not start")
            time.sleep(0.05)
    reply = pb.ServerCompatResponse(host="127.0.0.1", port=port).SerializeToString()
    sys.stdout.buffer.write(struct.pack(">I", len(reply)) + reply)
    sys.stdout.buffer.flush()
    try:
        return server.wait()
    except KeyboardInterrupt:
        server.terminate()
        return server.wait(10)


if __name__ == "__main__":
    sys.exit(main())
