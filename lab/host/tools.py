"""External programs the lab installs once into its cache and reuses.

    from lab.host.tools import go_install, go_build
    go_install(module, version, binary)  # its Path, built with `go install` on first use
    go_build(source_dir, binary)         # the lab's own Go program (its own go.mod), built on first use

Each is built from its own registry (here the Go module proxy) at a pinned
version, or from the lab's own sources keyed by a hash of them, under a lock
so that two runs starting at once build it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from lab import settings


def _built_once(root: Path, path: Path, no_go: str, note: str, build: Callable[[str], None]) -> Path:
    """`path`, built by build(go) into `root` unless it is there, under a lock so that two
    runs starting at once build it once."""
    if path.exists():
        return path
    go = shutil.which("go")
    if go is None:
        raise SystemExit(f"{no_go}; install Go from https://go.dev/dl/ or your distribution, then run again.")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            print(f"protolab: building {note}", flush=True)
            build(go)
    return path


def go_install(module: str, version: str, binary: str) -> Path:
    """`go install module@version` into the lab's cache; the path of `binary`."""
    root = settings.cache_dir() / f"{binary}-{version}"

    def build(go: str) -> None:
        env = {**os.environ, "GOBIN": str(root / "bin"), "CGO_ENABLED": "0"}
        subprocess.run([go, "install", f"{module}@{version}"], check=True, env=env, timeout=1800)
    return _built_once(root, root / "bin" / binary, f"{binary} {version} is built with Go (go install "
                       f"{module}@{version})", f"{binary} {version} into {root} (once; about 2 minutes)", build)


def go_build(source: Path, binary: str) -> Path:
    """`go build` of the Go module in `source` (its own go.mod and go.sum) into
    the lab's cache, keyed by a hash of its sources: the path of `binary`."""
    files = sorted(p for p in source.iterdir()
                   if (p.suffix == ".go" and not p.name.endswith("_test.go")) or p.name in ("go.mod", "go.sum"))
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    root = settings.cache_dir() / f"{binary}-{digest.hexdigest()[:16]}"
    path = root / binary

    def build(go: str) -> None:
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
        subprocess.run([go, "build", "-trimpath", "-o", str(root / f".{binary}.new"), "."], check=True,
                       cwd=source, env=env, timeout=900)
        (root / f".{binary}.new").rename(path)
    return _built_once(root, path, f"{binary} is built with Go from {source}", f"{binary} into {root} (once)", build)
