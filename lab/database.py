"""The database every service shares.

Without MONGODB_URI the lab runs its embedded default, SecantusDB's Rust
server (a MongoDB-wire server from crates.io; chosen by measurement, see
README), on a free port with a temporary data directory, and stops it
afterwards. It is built once with cargo into the lab's cache and reused.
With MONGODB_URI the lab uses that server and starts nothing.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lab import settings
from lab.processes import Process

SECANTUS_CRATE = "secantus-mdb"
SECANTUS_VERSION = "0.5.3-beta.193"
SECANTUS_BINARY = "secantusd-rs"
_LISTENING = re.compile(rb"listening on ([0-9.]+):(\d+)")


@dataclass(frozen=True)
class Database:
    uri: str
    server: str  # the server's real name, never just "MongoDB" for a compatible one
    version: str
    reported_version: str  # what buildInfo says
    pid: int | None = None  # when the lab started it

    def describe(self) -> dict[str, str]:
        return {"server": self.server, "version": self.version,
                "buildinfo_version": self.reported_version}


# Cargo profile overrides of the build (environment variables cargo reads).
# The crate's release profile is lto = "thin", codegen-units = 1; overriding
# them builds much faster, and the server measured as fast (README, "The
# database"). The cache directory is keyed by them: another setting is another build.
BUILD_PROFILE: dict[str, str] = {}


def build_key(profile: dict[str, str]) -> str:
    """The cache directory's suffix for a build profile ("" for the crate's own)."""
    short = {"CARGO_PROFILE_RELEASE_LTO": "lto", "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "cgu",
             "CARGO_PROFILE_RELEASE_OPT_LEVEL": "opt"}
    return "".join(f"-{short.get(k, k.lower())}{v}" for k, v in sorted(profile.items()))


def secantus_binary(profile: dict[str, str] | None = None) -> Path:
    """The cached secantusd-rs, built with cargo on first use (minutes)."""
    profile = BUILD_PROFILE if profile is None else profile
    root = settings.cache_dir() / f"secantusd-rs-{SECANTUS_VERSION}{build_key(profile)}"
    binary = root / "bin" / SECANTUS_BINARY
    if binary.exists():
        return binary
    cargo = shutil.which("cargo")
    if cargo is None:
        raise SystemExit(
            "The embedded database needs cargo (Rust) to build secantusd-rs once; "
            "install Rust, or set MONGODB_URI to a MongoDB server.")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build even when two runs start at once
        if not binary.exists():
            print(f"protolab: building {SECANTUS_CRATE} {SECANTUS_VERSION} into {root} "
                  "(once; about 7 minutes)", flush=True)
            subprocess.run(
                [cargo, "install", SECANTUS_CRATE, "--version", SECANTUS_VERSION, "--locked",
                 "--ignore-rust-version", "--root", str(root)],
                check=True, timeout=3600, env={**os.environ, **profile})
    return binary


def _buildinfo_version(uri: str) -> str:
    import pymongo  # here, so that the build (make db) runs before the venv has pymongo

    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=int(settings.CALL_TIMEOUT * 1000)) as c:
        return str(c.admin.command("buildInfo").get("version", "unknown"))


def external(uri: str) -> Database:
    version = _buildinfo_version(uri)
    return Database(uri=uri, server="MongoDB-wire server at MONGODB_URI", version=version,
                    reported_version=version)


@contextmanager
def embedded(binary: Path | None = None) -> Iterator[Database]:
    binary = binary or secantus_binary()
    with tempfile.TemporaryDirectory(prefix="protolab-db-") as tmp:
        log = Path(tmp) / "secantusd.log"
        process = Process(SECANTUS_BINARY, [
            str(binary), "--host", "127.0.0.1", "--port", "0", "--standalone",
            "--storage-path", str(Path(tmp) / "data"), "--cache-size", "256M",
            "--log-file-max", "16MB", "--log-level", "WARNING",
        ], log)
        try:
            host, port = process.wait_until(
                lambda: _LISTENING.search(log.read_bytes()).groups(),  # type: ignore[union-attr]
                settings.STARTUP_TIMEOUT, "listening")
            uri = f"mongodb://{host.decode()}:{port.decode()}/?directConnection=true"
            reported = process.wait_until(lambda: _buildinfo_version(uri),
                                          settings.STARTUP_TIMEOUT, "answering")
            yield Database(uri=uri, server=f"SecantusDB {SECANTUS_BINARY}",
                           version=SECANTUS_VERSION, reported_version=str(reported), pid=process.pid)
        finally:
            process.stop()


@contextmanager
def database() -> Iterator[Database]:
    uri = settings.mongodb_uri()
    if uri:
        yield external(uri)
    else:
        with embedded() as db:
            yield db
