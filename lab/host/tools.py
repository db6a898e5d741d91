"""External programs the lab installs once into its cache and reuses.

    from lab.host.tools import go_install, go_build, apt_tool
    go_install(module, version, binary)  # its Path, built with `go install` on first use
    go_build(source_dir, binary)         # the lab's own Go program (its own go.mod), built on first use
    apt_tool(binary, package)            # a program of the distribution's: its path, installed when missing

Each is built from its own registry (here the Go module proxy) at a pinned
version, or from the lab's own sources keyed by a hash of them, under a lock
so that two runs starting at once build it once. A distribution's program
(tshark, h2load) is installed with apt-get when it is missing and the lab runs
as root; otherwise the error says which command installs it.
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


class ToolMissing(RuntimeError):
    """A program the lab needs is not installed and could not be installed here (the message says how)."""


def apt_tool(binary: str, package: str, debconf: bytes = b"") -> str:
    """The path of `binary`; when it is missing and the lab runs as root on a host with apt-get, Debian's
    `package` is installed first (`debconf`: answers to its questions, debconf-set-selections' input, so
    that the install never prompts). Otherwise ToolMissing, naming the command that installs it."""
    path = shutil.which(binary)
    if path:
        return path
    hint = f"install it with: sudo apt-get install {package}"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ToolMissing(f"{binary} is not installed; {hint}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if debconf:
        subprocess.run(["debconf-set-selections"], check=False, env=env, capture_output=True, timeout=60,
                       input=debconf)
    # A failing mirror in `update` need not stop the install; its result decides.
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True, timeout=600)
    # another apt-get (a parallel test worker's, a fresh machine's own) holds dpkg's lock: wait for it
    done = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                           "-o", "DPkg::Lock::Timeout=300", package],
                          check=False, env=env, capture_output=True, text=True, timeout=900)
    path = shutil.which(binary)
    if done.returncode or not path:
        raise ToolMissing(f"installing {package} failed ({done.stderr.strip()[-500:]}); {hint}")
    return path
