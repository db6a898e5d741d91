"""External programs the lab installs once into its cache and reuses.

    from lab.host.tools import go_install
    go_install(module, version, binary)  # its Path, built with `go install` on first use

Each is built from its own registry (here the Go module proxy) at a pinned
version, under a lock so that two runs starting at once build it once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from lab import settings


def go_install(module: str, version: str, binary: str) -> Path:
    """`go install module@version` into the lab's cache; the path of `binary`."""
    root = settings.cache_dir() / f"{binary}-{version}"
    path = root / "bin" / binary
    if path.exists():
        return path
    go = shutil.which("go")
    if go is None:
        raise SystemExit(f"{binary} {version} is built with Go (go install {module}@{version}); "
                         "install Go from https://go.dev/dl/ or your distribution, then run again.")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            print(f"protolab: building {binary} {version} into {root} (once; about 2 minutes)", flush=True)
            env = {**os.environ, "GOBIN": str(root / "bin"), "CGO_ENABLED": "0"}
            subprocess.run([go, "install", f"{module}@{version}"], check=True, env=env, timeout=1800)
    return path

