"""Which Python runs the services, and how fast it is.

The interpreter's build matters as much as a container: on this machine a
pyenv-built CPython 3.11 ran the services 15–25 % slower than Debian's
python3 (the one in the lab's Docker images). So every result records the
services' interpreter and a fixed pure-Python calibration timed inside it,
measured where the services run (natively, or in a service container).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

PROBE = """
import json, sys, timeit
d = {"a": list(range(300)), "b": "x" * 1000}
work = "json.loads(json.dumps(d)); sum(i * i for i in range(2000))"
best = min(timeit.repeat(work, globals={"json": json, "d": d}, number=200, repeat=7)) / 200
print(json.dumps({"version": sys.version.split()[0], "build": sys.version,
                  "executable": sys.executable, "calibration_us": round(best * 1e6, 1)}))
"""


def probe(prefix: Sequence[str] = (sys.executable,), timeout: float = 60) -> dict[str, Any]:
    """Run the probe with `prefix` (an interpreter, or e.g. docker exec ... python)."""
    try:
        out = subprocess.run([*prefix, "-c", PROBE], capture_output=True, text=True,
                             timeout=timeout, check=True).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return {"error": str(exc)}
