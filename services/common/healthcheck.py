"""Container health check: one `health` call through the lab's own client.

    SERVICE=rest/python_flask PORT=8000 python -m services.common.healthcheck

Exit status 0 only if the service answered its protocol's health operation
(which reaches MongoDB); an open port alone is not enough.
"""

from __future__ import annotations

import os
import sys

from clients import connect
from lab.registry import discover


def main() -> int:
    name, port = os.environ["SERVICE"], int(os.environ["PORT"])
    impl = next((i for i in discover() if i.name == name), None)
    if impl is None:
        print(f"unhealthy: no manifest for {name!r}", file=sys.stderr)
        return 1
    try:
        client = connect(impl.protocol, impl.endpoint_for("127.0.0.1", port))
        try:
            client.health()
        finally:
            client.close()
    except Exception as exc:  # any failure is "unhealthy", with its reason in `docker inspect`
        print(f"unhealthy: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
