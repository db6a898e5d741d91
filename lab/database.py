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
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
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
    durability: str = "as configured at MONGODB_URI"  # what an acknowledged write survives

    def describe(self) -> dict[str, str]:
        return {"server": self.server, "version": self.version,
                "buildinfo_version": self.reported_version, "durability": self.durability}


# Cargo profile overrides of the build (environment variables cargo reads).
# None is set: lto, codegen-units and opt-level overrides each saved at most
# ~3 % of the build's ~740 CPU-seconds, most of which is WiredTiger's C built
# by CMake in Release whatever cargo's profile (README, "The database").
# The cache directory is keyed by them: another setting is another build.
BUILD_PROFILE: dict[str, str] = {}


def build_key(profile: dict[str, str]) -> str:
    """The cache directory's suffix for a build profile ("" for the crate's own)."""
    short = {"CARGO_PROFILE_RELEASE_LTO": "lto", "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "cgu",
             "CARGO_PROFILE_RELEASE_OPT_LEVEL": "opt"}
    return "".join(f"-{short.get(k, k.lower())}{v}" for k, v in sorted(profile.items()))


def secantus_path(profile: dict[str, str] | None = None) -> Path:
    """Where the cached secantusd-rs of this build profile is (built or not), under the
    lab's cache (PROTOLAB_CACHE, settings.cache_dir())."""
    profile = BUILD_PROFILE if profile is None else profile
    return settings.cache_dir() / f"secantusd-rs-{SECANTUS_VERSION}{build_key(profile)}" / "bin" / SECANTUS_BINARY


def secantus_binary(profile: dict[str, str] | None = None) -> Path:
    """The cached secantusd-rs, built with cargo on first use (minutes)."""
    profile = BUILD_PROFILE if profile is None else profile
    binary = secantus_path(profile)
    root = binary.parent.parent
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
                  "(once; 4-11 minutes)", flush=True)
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


def secantus_flags(host: str, port: int | str, storage: Path | str, *, change_streams: bool,
                   sync_on_commit: bool) -> list[str]:
    """secantusd-rs's flags, natively and in its Docker image (lab/host/compose.py):
    a single-node replica set (change streams) or --standalone, a 16 MB WAL
    file instead of a preallocated 128 MB one, WARNING logging."""
    return ["--host", host, "--port", str(port), *([] if change_streams else ["--standalone"]),
            "--storage-path", str(storage), "--cache-size", "256M", "--log-file-max", "16MB",
            "--log-level", "WARNING", *(["--sync-on-commit"] if sync_on_commit else [])]


def mode_text(change_streams: bool) -> str:
    return " (replica-set mode)" if change_streams else ""


def durability_text(sync_on_commit: bool, in_memory: bool = False) -> str:
    text = ("log fsynced at every commit (--sync-on-commit): acknowledged writes survive kill -9"
            if sync_on_commit else "log written, not fsynced, at commit: a kill -9 can lose acknowledged writes")
    return text + ("; its files in memory (tmpfs), gone with the machine" if in_memory else "")


class EmbeddedServer:
    """secantusd-rs on one data directory, the one way the lab starts it.

    start() launches it (on a free port the first time, on the same port
    after that), kill() ends it with SIGKILL as a crash would, and start()
    again brings it back on the same storage and port, so services that hold
    the URI reconnect. `prefix` runs it inside a network namespace
    (VethLink.exec_args) listening on `host`.

    Durability: WiredTiger's log is on, and --sync-on-commit fsyncs it at
    every commit. Without it an acknowledged write can sit in the log buffer,
    and a kill -9 loses it (tests/test_faults.py measures this); the server
    accepts a write concern's j but does not act on it.
    """

    def __init__(self, root: Path, host: str = "127.0.0.1", prefix: Sequence[str] = (),
                 sync_on_commit: bool | None = None, change_streams: bool = False,
                 binary: Path | None = None):
        self.root, self.host, self.prefix = root, host, tuple(prefix)
        self.binary = binary
        self.change_streams = change_streams
        self.sync_on_commit = settings.db_sync_on_commit() if sync_on_commit is None else sync_on_commit
        self.in_memory = root.resolve().is_relative_to(settings.MEMORY_DIR)
        self.port = 0
        self.starts = 0
        self.process: Process | None = None

    def start(self) -> Database:
        self.starts += 1
        log = self.root / f"secantusd-{self.starts}.log"
        process = Process(SECANTUS_BINARY, [
            *self.prefix, str(self.binary or secantus_binary()),
            *secantus_flags(self.host, self.port, self.root / "data", change_streams=self.change_streams,
                            sync_on_commit=self.sync_on_commit),
        ], log)
        self.process = process
        host, port = process.wait_until(
            lambda: _LISTENING.search(log.read_bytes()).groups(),  # type: ignore[union-attr]
            settings.STARTUP_TIMEOUT, "listening")
        self.port = int(port)
        uri = f"mongodb://{host.decode()}:{port.decode()}/?directConnection=true"
        reported = process.wait_until(lambda: _buildinfo_version(uri), settings.STARTUP_TIMEOUT, "answering")
        return Database(uri=uri, server=f"SecantusDB {SECANTUS_BINARY}{mode_text(self.change_streams)}",
                        version=SECANTUS_VERSION, reported_version=str(reported), pid=process.pid,
                        durability=durability_text(self.sync_on_commit, self.in_memory))

    def kill(self) -> None:
        """SIGKILL, no chance to flush or checkpoint; waits until it is gone."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.popen.wait(settings.STARTUP_TIMEOUT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


@contextmanager
def embedded(change_streams: bool = False, binary: Path | None = None, host: str = "127.0.0.1",
             prefix: Sequence[str] = ()) -> Iterator[Database]:
    """The embedded server. `change_streams`: it advertises a single-node
    replica set and keeps an oplog, so change streams open (the push feed
    `changes`, contract/push.md); otherwise `--standalone`, for measurements:
    the oplog costs every write (~0.1 ms more per insert, measured here).
    Its files go on the disk, or in memory with LAB_DB_IN_MEMORY=1 (settings.db_in_memory)."""
    memory = settings.db_in_memory() and settings.MEMORY_DIR.is_dir()
    with tempfile.TemporaryDirectory(prefix="protolab-db-", dir=settings.MEMORY_DIR if memory else None) as tmp:
        server = EmbeddedServer(Path(tmp), host=host, prefix=prefix, change_streams=change_streams, binary=binary)
        server.port = settings.port_base() or 0  # protolab serve --port-base N: the database on N
        try:
            yield server.start()
        finally:
            server.stop()


@contextmanager
def database(change_streams: bool | None = None, host: str = "127.0.0.1",
             prefix: Sequence[str] = ()) -> Iterator[Database]:
    """The run's database: MONGODB_URI's, else the embedded server, listening on `host`
    (inside a network namespace: `prefix`, e.g. VethLink.exec_args)."""
    uri = settings.mongodb_uri()
    if uri:
        if prefix:
            raise SystemExit("MONGODB_URI names a database outside the lab's network paths: a path's "
                             "`direct` must cross the same link as its services; unset it to measure a path")
        yield external(uri)
    else:
        with embedded(settings.change_streams() if change_streams is None else change_streams,
                      host=host, prefix=prefix) as db:
            yield db
