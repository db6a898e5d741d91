"""Docker mode: the lab's stack from compose.yaml, one switch away from native.

    with running_stack() as lab:      # what lab.stack.running_lab yields for LAB_MODE=docker
        client = lab.client("rest/python_flask")

`running_stack` ensures a Docker daemon (lab.host.dockerd: an answering one, else
a private one with --userland-proxy=false), chooses the images, builds the
service images that are missing or out of date (one hash per implementation
over its own inputs), starts compose.yaml under a unique project name with
every port published on 127.0.0.1 at a port chosen here, waits (with a
deadline) until the database is healthy and every service answers a health
call through its protocol's own client, and yields a lab.stack.Lab. On the way
out: `down -v`, unless LAB_KEEP_STACK=1, and the daemon is stopped if it was
started here.

One Dockerfile per language runtime (LANGUAGES below: docker/python,
docker/go (multi-stage), docker/node); images, by variable (README):
  LAB_PYTHON_IMAGE  base of the Python services   (default python:3.11-slim)
  LAB_GO_IMAGE      builder of the Go services    (default golang:1.26-bookworm)
  LAB_DEBIAN_IMAGE  runtime of the Go services    (default debian:bookworm-slim)
  LAB_NODE_IMAGE    base of the Node.js services  (default node:20-bookworm-slim)
  LAB_MONGO_IMAGE   MongoDB                       (default mongo:8.0, the official image)
  LAB_IMAGE_PREFIX  name prefix of service images (default protolab)
A default that is not present locally while Docker Hub cannot be reached is
replaced, with a line saying so, by the lab's local stand-in (protolab/python,
protolab/golang, protolab/node, protolab/debian, protolab/secantusd), built by
`python -m lab.host.dockerd images` (or on first use).

A TLS subject (lab/axes.py, axes tls and http) reads its certificate chain and key, and
the lab's clients the CA, from files the lab makes at run time (lab/tls.py): its container
mounts a directory of them read-only at CONTAINER_TLS, the directory that LAB_TLS_DIR names
(the lab sets it to the run's own, whose server certificate names 127.0.0.1, where the ports
are published, and the compose service names; unset, docker/tls, which holds no key: a TLS
container run by hand without it stops, saying its certificate is missing).

compose.yaml is generated from the manifests, so adding an implementation
folder is enough:
    python -m lab.host.compose write     # rewrite compose.yaml
    python -m lab.host.compose check     # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients import check_health
from clients.protocols import get as protocol_descriptor
from lab import interpreter, settings, tls
from lab.database import Database, durability_text, external, mode_text, secantus_flags
from lab.environment import RUN_SETTINGS, client_options, run_settings, service_environment
from lab.host import dockerd
from lab.processes import free_ports
from lab.registry import TOOLCHAIN_MINIMUMS, Implementation, every_variant, glob_files, select, services_of, variant
from lab.running import Lab

COMPOSE_FILE = settings.ROOT / "compose.yaml"
MONGO_SERVICE = "mongo"
MONGO_PORT = 27017
MONGO_MEMORY = "/data/memory"  # the database container's tmpfs mount (LAB_DB_IN_MEMORY=1)
MONGO_IMAGE_VARIABLE = "LAB_MONGO_IMAGE"
DEFAULT_MONGO_IMAGE = "mongo:8.0"
DEFAULT_PREFIX = "protolab"
# Readiness is the lab's business, not Docker's: the services have no Docker
# health check. The lab waits until each answers a health call through its
# protocol's own client (any language, no program inside the image), and
# nothing in compose waits on a service. A Docker check would also run a
# process in the container at every interval while measuring (a Python check
# every 2 s widened σ five-fold). The database keeps one (a tiny ping script
# in the lab's image, mongosh in the official one), checked every second,
# because the services' depends_on waits for it.
MONGO_HEALTH_INTERVAL = "1s"
SOURCE_LABEL = "org.protolab.source-hash"


@dataclass(frozen=True)
class Language:
    """How Docker mode builds one language's implementations."""

    dockerfile: str                            # from the root; a manifest's [docker] may name another
    images: tuple[tuple[str, str, str], ...]   # (build argument, variable, default image)
    inputs: tuple[str, ...]                    # the language's shared files the image copies (globs;
                                               # {protocol}: the implementation's protocol)
    runs_build: bool = False                   # the Dockerfile runs the manifest's [build] (BUILD_COMMAND)


# The official images' tags follow the toolchain minimums (lab/registry.py, the one place):
# golang:<Go minimum>, node:<Node.js minimum's major> (that tag moves to its newest release).
NODE_MAJOR = TOOLCHAIN_MINIMUMS["node"].split(".")[0]
# Adding a language: one entry, its Dockerfile, and its local stand-in images in lab.host.dockerd.
LANGUAGES: dict[str, Language] = {
    "python": Language(
        "docker/python/Dockerfile",
        (("BASE_IMAGE", "LAB_PYTHON_IMAGE", "python:3.11-slim"),),
        # The protocol's Python code: a variant may run another folder's app
        # (a Python folder may share another's modules), so the image has them all.
        ("pyproject.toml", "contract/**", "services/common/*.py", "services/{protocol}/**/*.py")),
    "go": Language(
        "docker/go/Dockerfile",
        (("BUILDER_IMAGE", "LAB_GO_IMAGE", f"golang:{TOOLCHAIN_MINIMUMS['go']}-bookworm"),
         ("BASE_IMAGE", "LAB_DEBIAN_IMAGE", "debian:bookworm-slim")),
        ("services/go.mod", "services/go.sum", "services/common/go/**", "contract/contract.json"),
        runs_build=True),
    "node": Language(
        "docker/node/Dockerfile",
        (("BASE_IMAGE", "LAB_NODE_IMAGE", f"node:{NODE_MAJOR}-bookworm-slim"),),
        # Its [build] (npm ci) is the Dockerfile's own `npm ci` from the lock file, before the sources.
        ("services/package.json", "services/package-lock.json", "services/common/node/**", "contract/**")),
}
# The official image ships mongosh; the lab's secantusd image ships its own
# OP_MSG ping script. Either way a real ping command, not an open port.
MONGO_HEALTH = ("if command -v mongosh >/dev/null 2>&1; "
                "then mongosh --quiet --eval 'quit(db.adminCommand({ping: 1}).ok ? 0 : 1)'; "
                "else secantusd-healthcheck 127.0.0.1 27017; fi")


def keep_stack() -> bool:
    return os.environ.get("LAB_KEEP_STACK", "") not in ("", "0")


def startup_timeout() -> float:
    # Containers start slower than processes (and the official mongod slower still).
    return max(settings.STARTUP_TIMEOUT, 120.0)


# --- compose.yaml, generated from the registry ---------------------------------


def service_name(impl: Implementation) -> str:
    """Compose service name: rest/python_flask -> rest-python-flask, rest/python_flask+gthread ->
    rest-python-flask-gthread."""
    return impl.name.replace("/", "-").replace("_", "-").replace("+", "-").lower()


def image_name(impl: Implementation) -> str:
    """The image's name: its base implementation's, which its variants share (a variant
    differs in its environment only), unless the variant runs another command (its manifest's
    [variant.<value>] command: another server, e.g. hypercorn for HTTP/2): the command is
    the image's own (SERVICE_COMMAND), so that variant has an image of its own."""
    name = impl.base.replace("/", "-").replace("_", "-").lower()
    if impl.command != variant(impl.base).command:
        name += "-" + "-".join(impl.variant).replace("_", "-").lower()
    return name


def port_variable(impl: Implementation) -> str:
    return "LAB_PORT_" + service_name(impl).replace("-", "_").upper()


def hash_variable(impl: Implementation) -> str:
    return "LAB_HASH_" + service_name(impl).replace("-", "_").upper()


def language_of(impl: Implementation) -> Language:
    try:
        return LANGUAGES[impl.language]
    except KeyError:
        raise SystemExit(f"{impl.name}: Docker mode has no Dockerfile for language {impl.language!r}; "
                         f"add it to LANGUAGES in lab/host/compose.py (known: {', '.join(LANGUAGES)})") from None


def container_port(impl: Implementation) -> int:
    return impl.docker_port or protocol_descriptor(impl.protocol).default_port


def dockerfile_of(impl: Implementation) -> str:
    """The manifest's dockerfile (relative to the implementation's folder), from the root;
    without one, its language's."""
    if impl.dockerfile == "Dockerfile" and not (impl.path / "Dockerfile").is_file():
        return language_of(impl).dockerfile
    path = (impl.path / impl.dockerfile).resolve()
    return path.relative_to(settings.ROOT).as_posix()


# Where the images keep the repository ({root}) and an implementation's build output ({out}).
CONTAINER_ROOT = Path("/app")
CONTAINER_OUT = Path("/app/build")
# Where a TLS subject's container finds the run's certificate, key and CA (lab/tls.py, container_files),
# mounted read-only from the directory LAB_TLS_DIR names (by default DEFAULT_TLS_DIR: no key in it).
CONTAINER_TLS = Path("/run/protolab-tls")
TLS_DIR_VARIABLE = "LAB_TLS_DIR"
DEFAULT_TLS_DIR = "./docker/tls"
CONTAINER_TLS_FILES = {placeholder: str(CONTAINER_TLS / name) for placeholder, name in tls.CONTAINER_NAMES.items()}


def uses_tls_files(impl: Implementation) -> bool:
    """Its service reads the run's TLS files (a tls or http=h2 variant): its container mounts them."""
    return any("{tls_" in value for value in impl.service_env().values())


def tls_volume() -> str:
    return f"${{{TLS_DIR_VARIABLE}:-{DEFAULT_TLS_DIR}}}:{CONTAINER_TLS}:ro"


def container_command(impl: Implementation) -> str:
    """The manifest's [run] command with its placeholders mapped to the image's paths."""
    return shlex.join(impl.expand(impl.command, python="python", root=CONTAINER_ROOT, out=CONTAINER_OUT))


def container_build_command(impl: Implementation) -> str:
    """The manifest's [build] command, mapped the same way ("" without one)."""
    if not impl.build_command:
        return ""
    return shlex.join(impl.expand(impl.build_command, python="python", root=CONTAINER_ROOT, out=CONTAINER_OUT))


def container_environment(impl: Implementation) -> dict[str, str]:
    """The service's environment (lab/environment.py) as its container sees it: the
    run's settings as ${NAME:-default}, which the lab's stack sets (ComposeStack.env)."""
    return service_environment(
        impl, host="0.0.0.0", port=container_port(impl),
        mongodb_uri=f"mongodb://{MONGO_SERVICE}:{MONGO_PORT}/?directConnection=true", root=str(CONTAINER_ROOT),
        settings_values={name: f"${{{name}:-{default}}}" for name, default in RUN_SETTINGS.items()},
        tls_files=CONTAINER_TLS_FILES)


def _q(value: object) -> str:
    # JSON strings and lists are valid YAML flow scalars and sequences.
    return json.dumps(value, ensure_ascii=False)


def render(implementations: Sequence[Implementation] | None = None) -> str:
    # One container per service process: a subject varied only on the client's side shares its own's.
    impls = [i for i in (every_variant() if implementations is None else implementations)
             if not i.not_in_docker and i.served_by == i.name]
    mongo_interval = f"${{LAB_MONGO_HEALTH_INTERVAL:-{MONGO_HEALTH_INTERVAL}}}"
    out = [
        "# Generated from services/*/*/manifest.toml by `python -m lab.host.compose write`; do not edit.",
        "# Docker mode of the lab (LAB_MODE=docker) runs it under a unique project name",
        "# and sets the LAB_*_PORT variables to free ports; by hand, unset ports are",
        "# chosen by Docker:  docker-compose up -d && docker-compose ps",
        "# Images: LAB_MONGO_IMAGE, LAB_PYTHON_IMAGE, LAB_GO_IMAGE, LAB_DEBIAN_IMAGE,",
        "# LAB_NODE_IMAGE, LAB_IMAGE_PREFIX, LAB_MONGO_ARGS (see README). The services have no Docker",
        "# health check: the lab waits for each through its protocol's own client.",
        f"# TLS subjects mount {TLS_DIR_VARIABLE} (the lab sets it to the run's certificates, lab/tls.py;",
        f"# by hand: python -m lab.tls containers DIR, then {TLS_DIR_VARIABLE}=DIR).",
        "services:",
        f"  {MONGO_SERVICE}:",
        f"    image: ${{{MONGO_IMAGE_VARIABLE}:-{DEFAULT_MONGO_IMAGE}}}",
        f"    ports: [\"127.0.0.1:${{LAB_MONGO_PORT:-}}:{MONGO_PORT}\"]",
        # The lab's secantusd image runs as natively (lab/database.py secantus_flags):
        # LAB_MONGO_ARGS is set from the run's settings; unset, the image's own CMD.
        "    command: ${LAB_MONGO_ARGS:-}",
        # A RAM file system the lab's database uses with LAB_DB_IN_MEMORY=1 (the tests).
        f"    tmpfs: [\"{MONGO_MEMORY}\"]",
        "    healthcheck:",
        f"      test: {_q(['CMD-SHELL', MONGO_HEALTH])}",
        f"      interval: {mongo_interval}",
        "      timeout: 5s",
        "      retries: 3",
        "      start_period: 60s",
    ]
    for impl in impls:
        port = container_port(impl)
        language = language_of(impl)
        out += [
            f"  {service_name(impl)}:",
            f"    image: ${{LAB_IMAGE_PREFIX:-{DEFAULT_PREFIX}}}/{image_name(impl)}",
            "    build:",
            "      context: .",
            f"      dockerfile: {dockerfile_of(impl)}",
            "      network: host",
            "      args:",
            *(f"        {arg}: ${{{variable}:-{default}}}" for arg, variable, default in language.images),
            f"        SERVICE: {impl.base}",
            f"        PROTOCOL: {impl.protocol}",
            *([f"        BUILD_COMMAND: {_q(container_build_command(impl))}"]
              if impl.build_command and language.runs_build else []),
            f"        SERVICE_COMMAND: {_q(container_command(impl))}",
            f"        PORT: \"{port}\"",
            f"        SOURCE_HASH: ${{{hash_variable(impl)}:-}}",
            "    pull_policy: build",
            "    environment:",
            *(f"      {name}: {_q(value)}" for name, value in container_environment(impl).items()),
            f"    ports: [\"127.0.0.1:${{{port_variable(impl)}:-}}:{port}\"]",
            *([f"    volumes: [{_q(tls_volume())}]"] if uses_tls_files(impl) else []),
            "    depends_on:",
            f"      {MONGO_SERVICE}:",
            "        condition: service_healthy",
        ]
    return "\n".join(out) + "\n"


def stale_reason(path: Path = COMPOSE_FILE) -> str | None:
    if not path.is_file():
        return f"{path.name} is missing"
    if path.read_text() != render():
        return f"{path.name} does not match the manifests"
    return None


# --- images --------------------------------------------------------------------


def image_inputs(impl: Implementation) -> list[Path]:
    """The files one implementation's image is built from: its language's shared
    files, its manifest's [build] inputs, its own folder, its Dockerfile."""
    shared = [p.format(protocol=impl.protocol) for p in language_of(impl).inputs]
    patterns = [*shared, *impl.build_inputs, f"services/{impl.base}/**", dockerfile_of(impl), ".dockerignore"]
    return glob_files(patterns)


def source_hash(impl: Implementation, images: dict[str, str]) -> str:
    """Hash of what one implementation's image is built from: its inputs, its
    build arguments and the images its language builds on."""
    digest = hashlib.sha256()
    for _, variable, _ in language_of(impl).images:
        digest.update(f"{variable}={images[variable]}\0".encode())
    for arg in (container_build_command(impl), container_command(impl), str(container_port(impl))):
        digest.update(arg.encode() + b"\0")
    for file in image_inputs(impl):
        digest.update(file.relative_to(settings.ROOT).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def registry_reachable(timeout: float = 4.0) -> bool:
    """Docker Hub answers its API (401 with the registry's own header), not a proxy's refusal."""
    try:
        urllib.request.urlopen("https://registry-1.docker.io/v2/", timeout=timeout)  # noqa: S310
        return True
    except urllib.error.HTTPError as exc:
        return exc.code == 401 and "Docker-Distribution-Api-Version" in exc.headers
    except OSError:
        return False


@dataclass
class Images:
    chosen: dict[str, str]  # variable (LAB_PYTHON_IMAGE, ..., LAB_MONGO_IMAGE) -> image
    prefix: str
    chosen_because: str

    @property
    def mongo(self) -> str:
        return self.chosen[MONGO_IMAGE_VARIABLE]


def image_defaults(implementations: Sequence[Implementation]) -> dict[str, str]:
    """The images the implementations' languages need, and the database's: variable -> default."""
    wanted = {variable: default for impl in implementations
              for _, variable, default in language_of(impl).images}
    return {**wanted, MONGO_IMAGE_VARIABLE: DEFAULT_MONGO_IMAGE}


def choose_images(d: dockerd.Dockerd, implementations: Sequence[Implementation]) -> Images:
    """Per variable: its value if set; else the default if present locally or
    Docker Hub answers; else the lab's local stand-in (said on a line)."""
    prefix = os.environ.get("LAB_IMAGE_PREFIX") or DEFAULT_PREFIX
    chosen: dict[str, str] = {}
    missing: list[str] = []
    for variable, default in image_defaults(implementations).items():
        chosen[variable] = os.environ.get(variable) or default
        if not os.environ.get(variable) and not d.image_exists(default):
            missing.append(variable)
    if not missing:
        return Images(chosen, prefix, "variables and defaults present locally")
    if registry_reachable():
        return Images(chosen, prefix, "defaults (Docker Hub reachable)")
    local = dockerd.local_images()
    for variable in missing:
        chosen[variable] = local[variable]
    settings_text = " ".join(f"{v}={chosen[v]}" for v in missing)
    why = (f"Docker Hub is not reachable and {', '.join(image_defaults(implementations)[v] for v in missing)} "
           f"not present: using the lab's local images ({settings_text})")
    print(f"protolab: {why}", flush=True)
    return Images(chosen, prefix, why)


def ensure_local_images(d: dockerd.Dockerd, images: Images) -> dict[str, Any]:
    """Build the lab's local images (`make docker-images`) if one in use is missing."""
    local = dockerd.local_images()
    wanted = [variable for variable, image in images.chosen.items()
              if local.get(variable) == image and not d.image_exists(image)]
    if not wanted:
        return {}
    print(f"protolab: building the local images ({', '.join(images.chosen[v] for v in wanted)}); "
          "once, a minute or two each", flush=True)
    return dockerd.build_images(d, only=wanted)


# --- the running stack -----------------------------------------------------------


class StackFailed(RuntimeError):
    pass


@dataclass
class ComposeStack:
    """One compose project on one daemon."""

    d: dockerd.Dockerd
    implementations: list[Implementation]
    images: Images
    project: str = field(default_factory=lambda: f"protolab-{uuid.uuid4().hex[:10]}")
    ports: dict[str, int] = field(default_factory=dict)  # compose service -> host port
    timings: dict[str, Any] = field(default_factory=dict)
    built: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)  # compose service -> source hash
    networks_removed: list[str] = field(default_factory=list)  # earlier stacks' networks, removed at up
    change_streams: bool = False  # the database as a single-node replica set (tests), else standalone
    sync_on_commit: bool = True
    in_memory: bool = False  # the database's files on its tmpfs mount (MONGO_MEMORY), not its volume

    def mongo_args(self) -> str:
        """The database container's arguments: the lab's secantusd image runs
        with the flags of native mode (lab/database.py); another image keeps its own."""
        if "secantus" not in self.images.mongo:
            return ""
        return shlex.join(secantus_flags("0.0.0.0", MONGO_PORT, MONGO_MEMORY if self.in_memory else "/data/db",
                                         change_streams=self.change_streams, sync_on_commit=self.sync_on_commit))

    @property
    def services(self) -> list[str]:
        return [service_name(i) for i in self.implementations]

    def env(self) -> dict[str, str]:
        env = {**self.d.env, **self.images.chosen,
               "LAB_IMAGE_PREFIX": self.images.prefix, **run_settings(),
               "LAB_MONGO_PORT": str(self.ports.get(MONGO_SERVICE, "")), "LAB_MONGO_ARGS": self.mongo_args()}
        for impl in self.implementations:
            env[port_variable(impl)] = str(self.ports.get(service_name(impl), ""))
            env[hash_variable(impl)] = self.hash_of(impl)
        secure = [service_name(i) for i in self.implementations if uses_tls_files(i)]
        if secure:  # the run's certificate for 127.0.0.1 (the published ports) and the services' names
            env[TLS_DIR_VARIABLE] = str(tls.container_files(secure))
        return env

    def hash_of(self, impl: Implementation) -> str:
        name = service_name(impl)
        if name not in self.hashes:
            self.hashes[name] = source_hash(impl, self.images.chosen)
        return self.hashes[name]

    def compose(self, *args: str, timeout: float = 300,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = ["docker-compose", "-p", self.project, "-f", str(COMPOSE_FILE),
               "--project-directory", str(settings.ROOT), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env(),
                              cwd=settings.ROOT, check=False)
        if check and proc.returncode != 0:
            raise StackFailed(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.strip()[-3000:]}")
        return proc

    def image_of(self, impl: Implementation) -> str:
        return f"{self.images.prefix}/{image_name(impl)}"

    def build(self) -> None:
        """Build the service images that are missing or built from other inputs
        (each image's label holds the hash of its own inputs: source_hash)."""
        stale = []
        for impl in self.implementations:
            got = self.d.docker("image", "inspect", "--format",
                                f'{{{{index .Config.Labels "{SOURCE_LABEL}"}}}}', self.image_of(impl),
                                timeout=30, check=False)
            if got.returncode != 0 or got.stdout.strip() != self.hash_of(impl):
                stale.append(impl)
        t0 = time.monotonic()
        each: dict[str, float] = {}
        images_built: set[str] = set()
        for impl in stale:  # one at a time, so that each image's time is its own
            if self.image_of(impl) in images_built:
                continue  # a variant's image is its base's (unless its command is another)
            images_built.add(self.image_of(impl))
            base = ", ".join(self.images.chosen[v] for _, v, _ in language_of(impl).images)
            print(f"protolab: building {service_name(impl)} ({impl.language}, on {base})", flush=True)
            t1 = time.monotonic()
            self.compose("build", service_name(impl), timeout=1800)
            each[service_name(impl)] = round(time.monotonic() - t1, 2)
            print(f"protolab: built {service_name(impl)} in {each[service_name(impl)]} s", flush=True)
        self.built = [service_name(i) for i in stale]
        self.timings["build_s"] = round(time.monotonic() - t0, 2)
        self.timings["build_s_each"] = each

    def remove_left_networks(self) -> None:
        """Remove the networks earlier lab stacks left on this daemon (down)
        that no container uses: each holds a subnet of the daemon's address pool.
        Only on a daemon the lab started, which runs no other stack: on a shared
        one, another lab's network could be between its creation and its first
        container."""
        if not self.d.owned:
            return
        got = self.d.docker("network", "ls", "--filter", "label=com.docker.compose.project",
                            "--format", "{{.Name}}", timeout=30, check=False)
        left = [n for n in got.stdout.split() if n.startswith(f"{DEFAULT_PREFIX}-")]
        self.networks_removed = [n for n in left
                                 if self.d.docker("network", "rm", n, timeout=60, check=False).returncode == 0]
        if self.networks_removed:
            print(f"protolab: removed networks earlier stacks left: {', '.join(self.networks_removed)}", flush=True)

    def up(self) -> None:
        self.remove_left_networks()
        self.ports = dict(zip([MONGO_SERVICE, *self.services], free_ports(1 + len(self.services)), strict=True))
        t0 = time.monotonic()
        self.compose("up", "-d", "--no-build", MONGO_SERVICE, *self.services, timeout=startup_timeout())
        self.wait_healthy(deadline=t0 + startup_timeout())
        self.timings["up_s"] = round(time.monotonic() - t0, 2)

    def containers(self) -> dict[str, dict[str, Any]]:
        """compose service -> `docker inspect` of its container."""
        ids = self.d.docker("ps", "-aq", "--no-trunc", "--filter",
                            f"label=com.docker.compose.project={self.project}", timeout=30).stdout.split()
        if not ids:
            return {}
        found = json.loads(self.d.docker("inspect", *ids, timeout=30).stdout)
        return {c["Config"]["Labels"]["com.docker.compose.service"]: c for c in found}

    def wait_healthy(self, deadline: float) -> dict[str, dict[str, Any]]:
        """The database healthy by Docker's check; every service running and
        answering a health call through the lab's own client on its published port."""
        delay = 0.05
        by_service = {service_name(i): i for i in self.implementations}
        answered: set[str] = set()
        while True:
            found = self.containers()
            states = {s: found[s]["State"] if s in found else {} for s in [MONGO_SERVICE, *self.services]}
            mongo = states[MONGO_SERVICE].get("Health", {}).get("Status", "none")
            if mongo == "healthy":
                for service in self.services:
                    if service not in answered and states[service].get("Running"):
                        impl = by_service[service]
                        if _answers(impl, impl.endpoint_for("127.0.0.1", self.ports[service])):  # over TLS too
                            answered.add(service)
                if answered == set(self.services):
                    return found
            dead = [s for s, st in states.items() if st and not st.get("Running")]
            if dead or mongo == "unhealthy" or time.monotonic() > deadline:
                why = (f"exited: {', '.join(dead)}" if dead else "database unhealthy" if mongo == "unhealthy"
                       else f"not ready within {startup_timeout():.0f} s: database {mongo}, services "
                            f"answering: {sorted(answered)}")
                raise StackFailed(f"compose project {self.project} {why}\n{self.diagnostics(found)}")
            time.sleep(delay)  # poll interval, not a readiness guess
            delay = min(delay * 2, 0.5)

    def diagnostics(self, found: dict[str, dict[str, Any]]) -> str:
        lines = []
        for service, c in found.items():
            log = c.get("State", {}).get("Health", {}).get("Log") or []
            if log:
                lines.append(f"{service} last health check: {log[-1].get('Output', '').strip()[-500:]}")
        logs = self.compose("logs", "--no-color", "--tail", "20", timeout=60, check=False)
        return "\n".join(lines) + "\n" + (logs.stdout or "")[-4000:]

    def log_tail(self, service: str, lines: int) -> str:
        """One service's container log, its last `lines` (stdout and stderr)."""
        got = self.compose("logs", "--no-color", "--no-log-prefix", "--tail", str(lines), service,
                           timeout=30, check=False)
        return (got.stdout or "") + (got.stderr or "")

    def down(self) -> None:
        """Remove the project's containers, network and volumes. `down` is
        idempotent, so a failed one is tried once more before it counts: once in
        a fresh clone's `make test` (2026-11-26, after Ctrl-C on `serve`) it exited
        1 while removing the containers. One refusal is not the stack's failure:
        every container removed, the daemon refuses the network, "has active
        endpoints" (once in CI, 2026-11-27; once in 37 up/down cycles of 22
        containers here, 2026-11-27). Its count of the network's endpoints is
        wrong in memory only (moby/moby#42119): 60 s of retries did not change
        it, and the same daemon restarted removed the network at once, twice. So
        the empty network is left, and the next stack on a daemon the lab starts
        removes it (up)."""
        t0 = time.monotonic()
        args = ("down", "-v", "--remove-orphans", "--timeout", "10")
        got = self.compose(*args, timeout=180, check=False)
        tries = 1
        if got.returncode != 0:
            print(f"protolab: docker-compose down failed ({got.returncode}), trying again: "
                  f"{got.stderr.strip()[-500:]}", flush=True)
            got = self.compose(*args, timeout=180, check=False)
            tries = 2
        why = got.stderr.strip()
        if got.returncode != 0:
            if "has active endpoints" not in why or self.containers():
                raise StackFailed(f"docker-compose -p {self.project} down failed twice ({got.returncode}):\n"
                                  f"{why[-3000:]}")
            self.timings["network_left"] = True
            then = ("the next stack removes it" if self.d.owned else
                    f"remove it once the daemon restarts: docker network rm {self.project}_default")
            print(f"protolab: every container of {self.project} is removed; the daemon refuses its empty "
                  f"network ({why[-160:]}): {then}", flush=True)
        self.timings["down_s"] = round(time.monotonic() - t0, 2)
        self.timings["down_tries"] = tries

    def database(self) -> Database:
        uri = f"mongodb://127.0.0.1:{self.ports[MONGO_SERVICE]}/?directConnection=true"
        db = external(uri)
        image = self.images.mongo
        if "secantus" in image:
            tag = image.rpartition(":")[2]
            return dataclasses.replace(
                db, server=f"SecantusDB secantusd-rs{mode_text(self.change_streams)} (image {image})", version=tag,
                durability=durability_text(self.sync_on_commit, self.in_memory))
        return dataclasses.replace(db, server=f"MongoDB (image {image})")

    def interpreter(self, found: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """The Python services' interpreter, probed inside the first Python container."""
        python = [service_name(i) for i in self.implementations if i.language == "python"]
        if not python:
            return None
        container = found[python[0]]["Id"]
        return interpreter.probe(["docker", "--host", self.d.docker_host, "exec", container, "python"])

    def describe(self, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """What results record about the Docker side of the run."""
        return {
            "daemon": self.d.settings,
            "daemon_pid": self.d.pid,
            "compose_project": self.project,
            "mongo_image": self.images.mongo,
            "mongo_args": self.mongo_args() or "the image's own",
            "images": self.images.chosen,
            "images_chosen_by": self.images.chosen_because,
            "image_ids": {s: c.get("Image", "")[:19] for s, c in found.items()},
            "source_hashes": dict(self.hashes),
            "published_on": "127.0.0.1",
            "service_health_check": "none in Docker; the lab's own client, until ready",
            "mongo_health_interval": os.environ.get("LAB_MONGO_HEALTH_INTERVAL", MONGO_HEALTH_INTERVAL),
            "timings_s": self.timings,
            "networks_removed_at_up": self.networks_removed,
            "interpreter": self.interpreter(found),
        }


def images_text(docker: dict[str, Any]) -> str:
    """The service base images a run recorded ("python:3.11-slim (python), ..."),
    also for runs from before one image per language (their one "base_image")."""
    images = docker.get("images") or {"LAB_PYTHON_IMAGE": docker.get("base_image")}
    return ", ".join(f"{image} ({variable.removeprefix('LAB_').removesuffix('_IMAGE').lower()})"
                     for variable, image in images.items() if variable != MONGO_IMAGE_VARIABLE)


# The description of the stack this process ran last, for lab.context.run_context:
# results are written after the stack is down (pytest's terminal summary).
_active: dict[str, Any] | None = None


def active_description() -> dict[str, Any] | None:
    return _active


@contextlib.contextmanager
def running_stack(names: Sequence[str] | None = None, change_streams: bool | None = None) -> Iterator[Any]:
    """The Docker-mode lab.stack.Lab (pids: the containers' main process ids on the host).
    change_streams: the database as natively (lab.database.database): a single-node
    replica set for tests (the push feed `changes`), standalone for measurements."""
    global _active
    stale = stale_reason()
    if stale:
        raise SystemExit(f"{stale}; regenerate it with: python -m lab.host.compose write")
    implementations = docker_subjects(select(names), named=names is not None)
    reason = dockerd.docker_unavailable_reason()
    if reason:
        raise SystemExit(f"LAB_MODE=docker: Docker cannot run here: {reason}")
    d = dockerd.Dockerd()
    try:
        d.start()
    except dockerd.DockerError as exc:
        raise SystemExit(f"LAB_MODE=docker: {exc}") from None
    kept = False
    try:
        serving = services_of(implementations)  # one container per service process
        services = list({impl.name: impl for impl in serving.values()}.values())
        images = choose_images(d, services)
        ensure_local_images(d, images)
        stack = ComposeStack(d, services, images,
                             change_streams=settings.change_streams() if change_streams is None else change_streams,
                             sync_on_commit=settings.db_sync_on_commit(), in_memory=settings.db_in_memory())
        stack.build()
        try:
            stack.up()
        except BaseException:
            with contextlib.suppress(Exception):  # keep the reason it failed, not the cleanup's
                stack.down()
            raise
        try:
            found = stack.containers()
            # The database container's main process as the host sees it: its CPU per operation.
            db_pid = int(found.get(MONGO_SERVICE, {}).get("State", {}).get("Pid") or 0) or None
            lab = Lab(mode="docker", database=dataclasses.replace(stack.database(), pid=db_pid),
                      implementations=implementations,
                      container_log=lambda name, lines: stack.log_tail(service_name(serving[name]), lines))
            for impl in implementations:
                container = service_name(serving[impl.name])
                lab.endpoints[impl.name] = impl.endpoint_for("127.0.0.1", stack.ports[container])
                lab.pids[impl.name] = int(found[container]["State"]["Pid"])
            _active = stack.describe(found)
            print(f"protolab: docker stack {stack.project} healthy in {stack.timings['up_s']} s "
                  f"(database {lab.database.server} {lab.database.version})", flush=True)
            yield lab
        finally:
            kept = _leave(stack)
    finally:
        if not kept:
            _stop_daemon(d)


def docker_subjects(implementations: Sequence[Implementation], named: bool) -> list[Implementation]:
    """Those Docker mode runs: a subject whose variant it leaves out (lab/axes.py,
    Value.not_in_docker, saying why) stops the run when named, and is
    left out with the reason printed when the run only discovered it (LAB_VARIANTS)."""
    out = []
    for impl in implementations:
        if not impl.not_in_docker:
            out.append(impl)
        elif named:
            raise SystemExit(f"LAB_MODE=docker: {impl.name} is not run in Docker mode: {impl.not_in_docker}")
        else:
            print(f"protolab: {impl.name}@docker left out: {impl.not_in_docker}", flush=True)
    return out


def _answers(impl: Implementation, endpoint: str) -> bool:
    try:
        check_health(impl.protocol, endpoint, **client_options(impl))  # a TLS subject's client verifies the CA
    except Exception:  # not ready yet
        return False
    return True


def _leave(stack: ComposeStack) -> bool:
    """Bring the stack down unless LAB_KEEP_STACK=1; True if it was kept."""
    if not keep_stack():
        stack.down()
        print(f"protolab: docker stack {stack.project} down in {stack.timings['down_s']} s", flush=True)
        return False
    print(f"protolab: LAB_KEEP_STACK=1: leaving compose project {stack.project} running; stop it with\n"
          f"  DOCKER_HOST={stack.d.docker_host} docker-compose -p {stack.project} down -v"
          + (f"\n  and the daemon: kill {stack.d.pid}" if stack.d.owned else ""), flush=True)
    return True


def _stop_daemon(d: dockerd.Dockerd) -> None:
    undone = d.stop()
    if undone:
        print(f"protolab: dockerd stopped; host restored ({len(undone)} changes undone)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.host.compose", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("write", help="write compose.yaml from the manifests")
    sub.add_parser("check", help="exit 1 if compose.yaml does not match the manifests")
    args = parser.parse_args(argv)
    if args.cmd == "write":
        COMPOSE_FILE.write_text(render())
        print(f"wrote {COMPOSE_FILE.relative_to(settings.ROOT)}")
        return 0
    stale = stale_reason()
    print(stale or "compose.yaml matches the manifests")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
