"""The Docker engine for Docker mode: install it, run a private daemon, build base images.

No image registry is assumed. `Dockerd` reuses a daemon that already answers;
otherwise it starts its own dockerd on a private socket, with its networks in
198.18.0.0/15 and the userland proxy off, and on stop undoes what dockerd did
to the host (ip_forward, the FORWARD policy, DOCKER* chains and rules, its
bridges). The local images (stand-ins for the official ones, docker/images/)
are built from Debian's mirror (debootstrap, then `docker import`) and from
the host's own toolchains (Go, Node.js), with ordinary Dockerfiles.

    python -m lab.host.dockerd images [--[no-]host-ca] [--only LAB_GO_IMAGE ...]  # install if needed, build, stop
    python -m lab.host.dockerd info                      # the daemon's settings as JSON
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Self

from lab.database import SECANTUS_CRATE, SECANTUS_VERSION, secantus_path
from lab.processes import die_with_parent
from lab.registry import TOOLCHAIN_MINIMUMS

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker" / "images"

PACKAGES = ("docker.io", "containerd", "runc", "iptables", "debootstrap", "docker-compose")
DATA_ROOT = Path(os.environ.get("PROTOLAB_DOCKER_DATA_ROOT", "/var/lib/protolab-docker"))
BIP = "198.18.0.1/24"
ADDRESS_POOL = "base=198.19.0.0/16,size=24"

DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_IMAGE = "protolab/debian:bookworm"
PYTHON_IMAGE = "protolab/python:3.11"
SECANTUSD_IMAGE = f"protolab/secantusd:{SECANTUS_VERSION}"  # the version: lab/database.py's, the one place
# Locally added CAs: on hosts behind an intercepting TLS proxy, its CA is here.
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")


class DockerError(RuntimeError):
    """Docker cannot be installed, started, stopped or used as asked."""


def _run(
    cmd: list[str], timeout: float, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DockerError(f"timed out after {timeout} s: {shlex.join(cmd)}") from exc
    if check and proc.returncode != 0:
        raise DockerError(f"{shlex.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc


# --- installation ------------------------------------------------------------


def missing_packages() -> list[str]:
    """The Debian packages Docker mode needs that are not installed."""
    if not shutil.which("dpkg-query"):
        return [] if shutil.which("dockerd") else list(PACKAGES)
    missing = []
    for pkg in PACKAGES:
        out = _run(["dpkg-query", "-W", "-f=${Status}", pkg], timeout=30, check=False).stdout
        if "install ok installed" not in out:
            missing.append(pkg)
    return missing


def ensure_docker_installed() -> list[str]:
    """Install the missing Debian packages; return what was installed."""
    missing = missing_packages()
    if not missing:
        return []
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", *missing]
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise DockerError(f"Docker mode needs {', '.join(missing)}; run as root: {shlex.join(cmd)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if _run(cmd, timeout=900, env=env, check=False).returncode != 0:
        _run(["apt-get", "update"], timeout=600, env=env)  # stale or missing package lists
        _run(cmd, timeout=900, env=env)
    return missing


# --- host state that dockerd changes -------------------------------------------

IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
IPTABLES = ("iptables", "ip6tables")
TABLES = ("filter", "nat", "mangle", "raw")


def _iptables_state(binary: str) -> dict[str, tuple[dict[str, str], set[str], list[str]]]:
    """Per table: builtin chain policies, user chains, rules (`-A ...` lines)."""
    state: dict[str, tuple[dict[str, str], set[str], list[str]]] = {}
    if not shutil.which(binary):
        return state
    for table in TABLES:
        proc = _run([f"{binary}-save", "-t", table], timeout=30, check=False)
        if proc.returncode != 0:
            continue
        policies: dict[str, str] = {}
        chains: set[str] = set()
        rules: list[str] = []
        for line in proc.stdout.splitlines():
            if line.startswith(":"):
                name, policy = line[1:].split()[:2]
                if policy == "-":
                    chains.add(name)
                else:
                    policies[name] = policy
            elif line.startswith("-A "):
                rules.append(line)
        state[table] = (policies, chains, rules)
    return state


def _bridges() -> set[str]:
    return {p.parent.name for p in Path("/sys/class/net").glob("*/bridge")}


def _is_docker_rule(rule: str) -> bool:
    # Only rules of Docker's own shape are removed, so rules that others add
    # to the host while the daemon runs are left alone.
    return any(mark in rule for mark in ("DOCKER", "docker0", " br-", "198.18.", "198.19."))


class HostState:
    """What dockerd changes on the host, captured before it starts."""

    def __init__(self) -> None:
        self.ip_forward = IP_FORWARD.read_text().strip()
        self.iptables = {b: _iptables_state(b) for b in IPTABLES}
        self.bridges = _bridges()

    def restore(self) -> list[str]:
        """Undo dockerd's changes; return what was undone, for the log."""
        undone: list[str] = []
        for binary, before in self.iptables.items():
            for table, (policies, chains, rules) in _iptables_state(binary).items():
                old_policies, old_chains, old_rules = before.get(table, ({}, set(), []))
                extra = collections.Counter(rules) - collections.Counter(old_rules)
                for rule in reversed(rules):
                    if extra[rule] > 0 and _is_docker_rule(rule):
                        extra[rule] -= 1
                        delete = [binary, "-t", table, "-D", *shlex.split(rule)[1:]]
                        _run(delete, timeout=30, check=False)
                        undone.append(f"{binary} -t {table} -D {rule[3:]}")
                new_chains = sorted(c for c in chains - old_chains if c.startswith("DOCKER"))
                for op in ("-F", "-X"):  # flush all first: the chains jump to each other
                    for chain in new_chains:
                        _run([binary, "-t", table, op, chain], timeout=30, check=False)
                undone += [f"{binary} -t {table} -X {c}" for c in new_chains]
                for chain, policy in policies.items():
                    # A table that did not exist before filtered nothing.
                    old = old_policies.get(chain, "ACCEPT")
                    if policy != old:
                        _run([binary, "-t", table, "-P", chain, old], timeout=30)
                        undone.append(f"{binary} -t {table} -P {chain} {old}")
        for bridge in sorted(_bridges() - self.bridges):
            if bridge == "docker0" or bridge.startswith("br-"):
                _run(["ip", "link", "delete", bridge], timeout=30, check=False)
                undone.append(f"ip link delete {bridge}")
        if IP_FORWARD.read_text().strip() != self.ip_forward:
            IP_FORWARD.write_text(self.ip_forward + "\n")
            undone.append(f"net.ipv4.ip_forward={self.ip_forward}")
        return undone


def forward_policy() -> str | None:
    """The policy of the iptables filter FORWARD chain (None without iptables)."""
    return _iptables_state("iptables").get("filter", ({}, set(), []))[0].get("FORWARD")


def _default_route_mtu() -> int | None:
    # Containers on a bridge inherit MTU 1500; where the uplink is smaller
    # (1400 here) large TLS records from containers would be black-holed.
    try:
        for line in Path("/proc/net/route").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == "00000000":
                return int(Path(f"/sys/class/net/{fields[0]}/mtu").read_text())
    except (OSError, ValueError, IndexError):
        pass
    return None


# --- the daemon ----------------------------------------------------------------


def _ping(sock_path: str, timeout: float) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(sock_path)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
        return reply.startswith(b"HTTP/1.") and b" 200 " in reply.split(b"\r\n", 1)[0]
    except OSError:
        return False


def _docker_info(env: dict[str, str], timeout: float = 10) -> dict[str, Any] | None:
    if not shutil.which("docker"):
        return None
    try:
        proc = _run(["docker", "info", "--format", "{{json .}}"], timeout=timeout, env=env, check=False)
    except DockerError:
        return None
    try:
        info = json.loads(proc.stdout or "null")
    except json.JSONDecodeError:
        return None
    return info if proc.returncode == 0 and isinstance(info, dict) and info.get("ServerVersion") else None


def dockerd_pids() -> list[int]:
    return [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/comm") if _read(p) == "dockerd"]


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _userland_proxy_of_existing() -> bool | None:
    """Best effort for a daemon we did not start: its flags, then daemon.json."""
    pids = dockerd_pids()
    if len(pids) == 1:
        args = _read(Path(f"/proc/{pids[0]}/cmdline")).split("\0")
        for arg in args:
            if arg.startswith("--userland-proxy"):
                return arg.partition("=")[2].lower() not in ("false", "0")
    try:
        value = json.loads(Path("/etc/docker/daemon.json").read_text()).get("userland-proxy")
        if value is not None:
            return bool(value)
    except (OSError, ValueError, AttributeError):
        pass
    return True if pids else None


def docker_unavailable_reason() -> str | None:
    """Why Docker cannot run here (None if it can or already does)."""
    if _docker_info(dict(os.environ), timeout=5):
        return None
    if not sys.platform.startswith("linux"):
        return f"no Docker daemon answers and the lab starts one only on Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return "no Docker daemon answers (docker info) and starting one needs root"
    if not Path("/sys/fs/cgroup").is_dir() or not any(Path("/sys/fs/cgroup").iterdir()):
        return "no cgroup filesystem at /sys/fs/cgroup"
    if not shutil.which("apt-get") and not shutil.which("dockerd"):
        return "dockerd is not installed and there is no apt-get to install it"
    return None


class Dockerd(AbstractContextManager["Dockerd"]):
    """A Docker daemon for the lab: an answering one, else one started here.

    After `start()`, `env` holds DOCKER_HOST for subprocesses and `settings`
    the daemon's settings for results. `stop()` stops only a daemon started
    here, by PID, and restores the host.
    """

    def __init__(
        self,
        data_root: Path = DATA_ROOT,
        bip: str = BIP,
        address_pool: str = ADDRESS_POOL,
        userland_proxy: bool = False,
        start_timeout: float = 60.0,
        stop_timeout: float = 60.0,
    ) -> None:
        self.data_root = data_root
        self.bip = bip
        self.address_pool = address_pool
        self.userland_proxy = userland_proxy
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.owned = False
        self.env: dict[str, str] = dict(os.environ)
        self.settings: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._run_dir: Path | None = None
        self._host: HostState | None = None
        self._mtu: int | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def docker_host(self) -> str:
        return self.env.get("DOCKER_HOST", "unix:///var/run/docker.sock")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Self:
        t0 = time.monotonic()
        info = _docker_info(self.env)
        if info is None:
            others = dockerd_pids()
            if others:
                # A second daemon would fight the first over docker0 and the
                # iptables chains, which are per host, not per socket.
                raise DockerError(
                    f"dockerd (pid {', '.join(map(str, others))}) runs but does not answer at "
                    f"{self.docker_host}; set DOCKER_HOST to its socket"
                )
            ensure_docker_installed()
            self._launch()
            info = _docker_info(self.env)
            if info is None:
                self.stop()
                raise DockerError(f"dockerd answers /_ping but not docker info at {self.docker_host}")
        self.timings["start_s"] = round(time.monotonic() - t0, 3)
        self.settings = {
            "started_by_lab": self.owned,
            "docker_host": self.docker_host,
            "version": info.get("ServerVersion"),
            "userland_proxy": self.userland_proxy if self.owned else _userland_proxy_of_existing(),
            "data_root": info.get("DockerRootDir"),
            "storage_driver": info.get("Driver"),
            "cgroup_version": info.get("CgroupVersion"),
            "cgroup_driver": info.get("CgroupDriver"),
            "kernel": info.get("KernelVersion"),
            "cpus": info.get("NCPU"),
        }
        if self.owned:
            self.settings |= {"bip": self.bip, "address_pool": self.address_pool, "mtu": self._mtu}
        return self

    def _launch(self) -> None:
        if os.geteuid() != 0:
            raise DockerError("starting dockerd needs root; or start Docker yourself and set DOCKER_HOST")
        self.data_root.mkdir(parents=True, exist_ok=True)
        self._run_dir = Path(tempfile.mkdtemp(prefix="protolab-dockerd-"))
        sock = self._run_dir / "docker.sock"
        self._mtu = _default_route_mtu()
        cmd = [
            "dockerd",
            f"--data-root={self.data_root}",
            f"--exec-root={self._run_dir / 'exec'}",
            f"--pidfile={self._run_dir / 'dockerd.pid'}",
            f"--host=unix://{sock}",
            f"--bip={self.bip}",
            f"--default-address-pool={self.address_pool}",
            f"--userland-proxy={str(self.userland_proxy).lower()}",
            # Own containerd namespaces, in case a system containerd is shared.
            "--containerd-namespace=protolab",
            "--containerd-plugins-namespace=protolab-plugins",
        ]
        if self._mtu:
            cmd.append(f"--mtu={self._mtu}")
        self._host = HostState()
        with open(self._run_dir / "dockerd.log", "wb") as log:  # dockerd keeps its own copy
            # Its own session: a Ctrl-C at the terminal goes to the lab, which
            # brings the stack down first and only then stops the daemon (a
            # daemon in the lab's process group died first, and `down` failed).
            # If the lab is killed outright, the daemon gets SIGTERM.
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True, preexec_fn=die_with_parent)
        self.owned = True
        self.env = {**os.environ, "DOCKER_HOST": f"unix://{sock}"}
        deadline = time.monotonic() + self.start_timeout
        while not _ping(str(sock), timeout=2):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = self._log_tail()
                why = f"exited with {self._proc.returncode}" if self._proc.poll() is not None else "timed out"
                self.stop()
                raise DockerError(f"dockerd {why} before answering on {sock}:\n{tail}")
            time.sleep(0.05)  # poll interval; readiness is the /_ping answer

    def _log_tail(self, lines: int = 40) -> str:
        if not self._run_dir:
            return ""
        text = _read(self._run_dir / "dockerd.log")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> list[str]:
        """Stop a daemon started here and restore the host; return what was undone."""
        if not self.owned or self._proc is None:
            return []
        t0 = time.monotonic()
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                # Killed, dockerd cannot stop the containerd it supervises.
                containerd = _read(self._run_dir / "exec/containerd/containerd.pid") if self._run_dir else ""
                self._proc.kill()
                self._proc.wait(timeout=30)
                if containerd.isdigit():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(containerd), signal.SIGTERM)
        undone = self._host.restore() if self._host else []
        self._remove_run_dir()
        self.owned = False
        self._proc = None
        self.env = dict(os.environ)
        self.timings["stop_s"] = round(time.monotonic() - t0, 3)
        return undone

    def _remove_run_dir(self) -> None:
        # dockerd leaves exec/netns/default (an nsfs bind mount) behind.
        if self._run_dir and not _umount_under(self._run_dir):
            shutil.rmtree(self._run_dir, ignore_errors=True)
            self._run_dir = None

    def docker(
        self, *args: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the docker CLI against this daemon."""
        return _run(["docker", *args], timeout=timeout, env=self.env, check=check)

    def image_exists(self, image: str) -> bool:
        return self.docker("image", "inspect", image, timeout=30, check=False).returncode == 0

    def image_size(self, image: str) -> int:
        return int(self.docker("image", "inspect", "--format", "{{.Size}}", image, timeout=30).stdout)


# --- images --------------------------------------------------------------------


# What the official debian:*-slim images configure: no apt caches kept in
# layers, and no docs, man pages or translations installed.
_APT_RM = "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin"
APT_CLEAN = f"""\
DPkg::Post-Invoke {{ "{_APT_RM} || true"; }};
APT::Update::Post-Invoke {{ "{_APT_RM} || true"; }};
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""
DPKG_SLIM = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
"""


def _slim_rootfs(rootfs: Path, mirror: str) -> None:
    (rootfs / "etc/apt/sources.list").write_text(
        f"deb {mirror} bookworm main\n"
        f"deb {mirror} bookworm-updates main\n"
        f"deb {mirror}-security bookworm-security main\n"
    )
    (rootfs / "etc/apt/apt.conf.d/docker-clean").write_text(APT_CLEAN)
    (rootfs / "etc/dpkg/dpkg.cfg.d/docker").write_text(DPKG_SLIM)
    junk = [p for d in ("man", "info", "locale") for p in (rootfs / "usr/share" / d).glob("*")]
    junk += [p for p in (rootfs / "usr/share/doc").glob("*/*") if p.name != "copyright"]
    junk += [p for p in (rootfs / "var/lib/apt/lists").glob("*") if p.is_file()]
    junk += [p for p in (rootfs / "var/cache/apt").rglob("*") if p.is_file()]
    for p in junk:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


def _umount_under(path: Path) -> list[str]:
    """Unmount what is mounted below path; return what stays mounted."""

    def below() -> list[str]:
        mounts = _read(Path("/proc/self/mounts")).splitlines()
        return [m.split()[1] for m in mounts if m.split()[1].startswith(f"{path}/")]

    for mount in sorted(below(), reverse=True):
        _run(["umount", mount], timeout=30, check=False)
    return below()


def build_base_image(d: Dockerd, image: str = BASE_IMAGE, mirror: str = DEBIAN_MIRROR) -> dict[str, float]:
    """Debootstrap Debian bookworm (minbase) and import it; return step timings.

    Returns {} if the image exists already.
    """
    if d.image_exists(image):
        return {}
    if not shutil.which("debootstrap"):
        ensure_docker_installed()
    tmp = Path(tempfile.mkdtemp(prefix="protolab-rootfs-", dir="/var/tmp"))
    rootfs = tmp / "rootfs"
    t0 = time.monotonic()
    try:
        _run(
            ["debootstrap", "--variant=minbase", "bookworm", str(rootfs), mirror],
            timeout=1800,
        )
        _slim_rootfs(rootfs, mirror)
        timings = {"debootstrap_s": round(time.monotonic() - t0, 1)}
        with subprocess.Popen(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."],
            stdout=subprocess.PIPE,
        ) as tar:
            changes = ["--change", 'CMD ["bash"]', "--change", "ENV LANG=C.UTF-8"]
            proc = subprocess.run(
                ["docker", "import", *changes, "-", image],
                stdin=tar.stdout,
                capture_output=True,
                text=True,
                env=d.env,
                timeout=900,
                check=False,
            )
        if tar.returncode != 0 or proc.returncode != 0:
            raise DockerError(f"docker import failed: {proc.stderr.strip()}")
        timings["import_s"] = round(time.monotonic() - t0 - timings["debootstrap_s"], 1)
    finally:
        # debootstrap mounts /proc and /sys in the rootfs; never delete through them.
        if not _umount_under(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return timings


def tls_intercepted(host: str = "pypi.org", timeout: float = 5.0) -> bool:
    """True if host's certificate does not chain to Mozilla's CAs (a TLS proxy).

    False also when host cannot be reached: then nothing is added.
    """
    mozilla = sorted(Path("/usr/share/ca-certificates/mozilla").glob("*.crt"))
    if not mozilla:
        return False
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for cert in mozilla:
        ctx.load_verify_locations(cert)
    try:
        with (
            socket.create_connection((host, 443), timeout=timeout) as raw,
            ctx.wrap_socket(raw, server_hostname=host),
        ):
            return False
    except ssl.SSLCertVerificationError:
        return True
    except OSError:
        return False


def host_ca_files() -> list[Path]:
    """CAs the host added to its own trust store (e.g. an intercepting proxy's)."""
    return sorted(HOST_CA_DIR.rglob("*.crt")) if HOST_CA_DIR.is_dir() else []


def _build(d: Dockerd, folder: str, image: str, base: str, extra: dict[str, Path],
           extra_ca: list[Path] | None = None) -> None:
    # A temporary context: the folder, files or folders from the host (extra: name
    # -> source), and extra-ca/ (empty unless asked: docker/images/README.md).
    with tempfile.TemporaryDirectory(prefix=f"protolab-{folder}-") as tmp:
        ctx = Path(tmp)
        shutil.copytree(DOCKER_DIR / folder, ctx, dirs_exist_ok=True)
        (ctx / "extra-ca").mkdir(exist_ok=True)
        for i, cert in enumerate(extra_ca or []):
            shutil.copy2(cert, ctx / "extra-ca" / f"{i:02d}-{cert.name}")
        for name, source in extra.items():
            if source.is_dir():
                shutil.copytree(source, ctx / name, symlinks=True)
            else:
                shutil.copy2(source, ctx / name)
        build = ["build", "--network=host", "--build-arg", f"BASE_IMAGE={base}", "-t", image, str(ctx)]
        d.docker(*build, timeout=1800)


def build_python_image(
    d: Dockerd, image: str = PYTHON_IMAGE, base: str = BASE_IMAGE, extra_ca: list[Path] | None = None
) -> None:
    """Build protolab/python:3.11; `extra_ca` certificates are added to its trust store."""
    _build(d, "python", image, base, {}, extra_ca)


def _host_output(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise DockerError(f"{shlex.join(argv)} failed on the host: {exc}") from None


def host_go_version() -> str | None:
    """The host's Go version ("1.26.8"), None without Go."""
    if not shutil.which("go"):
        return None
    return _host_output(["go", "env", "GOVERSION"]).removeprefix("go")


def host_node_version() -> str | None:
    """The host's Node.js version ("20.20.2"), None without Node.js."""
    if not shutil.which("node"):
        return None
    return _host_output(["node", "--version"]).removeprefix("v")


def golang_image() -> str:
    return f"protolab/golang:{host_go_version() or 'no-go-on-host'}"


def node_image() -> str:
    return f"protolab/node:{host_node_version() or 'no-node-on-host'}"


def build_golang_image(d: Dockerd, base: str = BASE_IMAGE, extra_ca: list[Path] | None = None) -> None:
    """Build protolab/golang:<version> from the host's Go toolchain (its GOROOT)."""
    if host_go_version() is None:
        raise DockerError("the local Go image is built from the host's Go toolchain: install Go "
                          f">= {TOOLCHAIN_MINIMUMS['go']} "
                          "(https://go.dev/dl/), or set LAB_GO_IMAGE to a Go image")
    goroot = Path(_host_output(["go", "env", "GOROOT"]))
    _build(d, "golang", golang_image(), base, {"go": goroot}, extra_ca)


def build_node_image(d: Dockerd, base: str = BASE_IMAGE, extra_ca: list[Path] | None = None) -> None:
    """Build protolab/node:<version> from the host's node binary and npm."""
    if host_node_version() is None or not shutil.which("npm"):
        raise DockerError("the local Node.js image is built from the host's Node.js: install Node.js "
                          f">= {TOOLCHAIN_MINIMUMS['node']} "
                          "with npm (https://nodejs.org/), or set LAB_NODE_IMAGE to a Node.js image")
    node = Path(shutil.which("node") or "").resolve()
    npm = Path(_host_output(["npm", "root", "-g"])) / "npm"
    if not (npm / "bin" / "npm-cli.js").is_file():
        raise DockerError(f"npm not found at {npm} (npm root -g)")
    _build(d, "node", node_image(), base, {"node": node, "npm": npm}, extra_ca)


def local_images() -> dict[str, str]:
    """The lab's local stand-in for each official image, by the variable that chooses it
    (lab/host/compose.py)."""
    return {"LAB_PYTHON_IMAGE": PYTHON_IMAGE, "LAB_GO_IMAGE": golang_image(), "LAB_NODE_IMAGE": node_image(),
            "LAB_DEBIAN_IMAGE": BASE_IMAGE, "LAB_MONGO_IMAGE": SECANTUSD_IMAGE}


def secantusd_binary() -> Path:
    """The host's secantusd-rs the database image is built from: $PROTOLAB_SECANTUSD_BINARY,
    else the lab's own build in its cache (PROTOLAB_CACHE; lab/database.py's secantus_path)."""
    override = os.environ.get("PROTOLAB_SECANTUSD_BINARY")
    return Path(override) if override else secantus_path()


def build_secantusd_image(
    d: Dockerd, image: str = SECANTUSD_IMAGE, base: str = BASE_IMAGE, binary: Path | None = None
) -> None:
    """Build the embedded database's image from the binary built on the host (secantusd_binary())."""
    binary = secantusd_binary() if binary is None else binary
    if not binary.is_file():
        raise DockerError(
            f"{binary} is missing; build it with: cargo install {SECANTUS_CRATE} --version {SECANTUS_VERSION} "
            f"--ignore-rust-version --locked --root {binary.parent.parent}"
        )
    _build(d, "mongo-embedded", image, base, {"secantusd-rs": binary})


def build_images(d: Dockerd, host_ca: bool | None = None, only: list[str] | None = None,
                 rebuild: bool = False) -> dict[str, Any]:
    """Build the local images that are missing (all, or `only` those chosen by
    these variables, e.g. ["LAB_GO_IMAGE"]); return timings (s) and sizes (bytes).
    rebuild: build them even if present (not the debootstrapped base).

    host_ca: add the host's local CAs to the python, golang and node images so
    that pip, go and npm work behind an intercepting TLS proxy. None:
    $PROTOLAB_HOST_CA (1/0) if set, else only where TLS to pypi.org is seen to
    be intercepted.
    """
    if host_ca is None:
        env = os.environ.get("PROTOLAB_HOST_CA")
        host_ca = env not in ("0", "") if env is not None else tls_intercepted()
    extra_ca = host_ca_files() if host_ca else []
    report: dict[str, Any] = {"extra_ca": [str(p) for p in extra_ca]}
    steps = [  # (name, variable, image, build); the base first, the others build on it
        ("base", "LAB_DEBIAN_IMAGE", BASE_IMAGE, lambda: build_base_image(d)),
        ("python", "LAB_PYTHON_IMAGE", PYTHON_IMAGE, lambda: build_python_image(d, extra_ca=extra_ca)),
        ("golang", "LAB_GO_IMAGE", golang_image(), lambda: build_golang_image(d, extra_ca=extra_ca)),
        ("node", "LAB_NODE_IMAGE", node_image(), lambda: build_node_image(d, extra_ca=extra_ca)),
        ("secantusd", "LAB_MONGO_IMAGE", SECANTUSD_IMAGE, lambda: build_secantusd_image(d)),
    ]
    for name, variable, image, build in steps:
        if name != "base" and only is not None and variable not in only:
            continue
        if only is None and (name, variable) in (("golang", "LAB_GO_IMAGE"), ("node", "LAB_NODE_IMAGE")) \
                and (host_go_version() if name == "golang" else host_node_version()) is None:
            report[name] = {"image": image, "skipped": f"no {name} toolchain on the host"}
            continue
        if d.image_exists(image) and not (rebuild and name != "base"):
            report[name] = {"image": image, "seconds": 0.0, "present": True, "bytes": d.image_size(image)}
            continue
        t0 = time.monotonic()
        steps_s = build() or {}
        seconds = round(time.monotonic() - t0, 1)
        size = d.image_size(image)
        report[name] = {"image": image, "seconds": seconds, **steps_s, "bytes": size}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.host.dockerd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    images = sub.add_parser("images", help="build the missing local images: protolab/debian, protolab/python, "
                            "protolab/golang, protolab/node, protolab/secantusd")
    images.add_argument(
        "--host-ca",
        action=argparse.BooleanOptionalAction,
        help="add the host's local CAs to the python, golang and node images (default: only if "
        "TLS to pypi.org is intercepted, or $PROTOLAB_HOST_CA)",
    )
    images.add_argument("--only", nargs="+", metavar="VARIABLE",
                        help="only the images these variables choose (LAB_PYTHON_IMAGE, LAB_GO_IMAGE, "
                             "LAB_NODE_IMAGE, LAB_DEBIAN_IMAGE, LAB_MONGO_IMAGE)")
    images.add_argument("--rebuild", action="store_true", help="rebuild them even if present (not the base)")
    sub.add_parser("info", help="print the daemon's settings as JSON")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    installed = ensure_docker_installed()
    out: dict[str, Any] = {"installed": installed, "install_s": round(time.monotonic() - t0, 1)}
    with Dockerd() as d:
        out["dockerd"] = d.settings
        if args.cmd == "images":
            out["images"] = build_images(d, host_ca=args.host_ca, only=args.only, rebuild=args.rebuild)
    out["dockerd_timings"] = d.timings
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
