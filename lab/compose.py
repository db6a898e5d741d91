"""Docker mode: the lab's stack from compose.yaml, one switch away from native.

    with running_stack() as lab:      # what lab.stack.running_lab yields for LAB_MODE=docker
        client = lab.client("rest/python_flask")

`running_stack` ensures a Docker daemon (lab.dockerd: an answering one, else
a private one with --userland-proxy=false), chooses the images, builds the
service images that are missing or out of date, starts compose.yaml under a
unique project name with every port published on 127.0.0.1 at a port chosen
here, waits (with a deadline) until Docker reports every container healthy,
and yields a lab.stack.Lab. On the way out: `down -v`, unless LAB_KEEP_STACK=1,
and the daemon is stopped if it was started here.

Images, by variable (README):
  LAB_BASE_IMAGE   base of the service images   (default python:3.11-slim)
  LAB_MONGO_IMAGE  MongoDB                      (default mongo:8.0, the official image)
  LAB_IMAGE_PREFIX name prefix of service images (default protolab)
When neither default is present locally and Docker Hub cannot be reached, the
lab says so and uses its local images instead (protolab/python:3.11,
protolab/secantusd:<version>), built by `python -m lab.dockerd images`.

compose.yaml is generated from the manifests, so adding an implementation
folder is enough:
    python -m lab.compose write     # rewrite compose.yaml
    python -m lab.compose check     # exit 1 if it is stale
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
from lab import dockerd, interpreter, settings
from lab.database import Database, external
from lab.processes import free_port
from lab.registry import Implementation, discover, select

COMPOSE_FILE = settings.ROOT / "compose.yaml"
MONGO_SERVICE = "mongo"
MONGO_PORT = 27017
DEFAULT_BASE_IMAGE = "python:3.11-slim"
DEFAULT_MONGO_IMAGE = "mongo:8.0"
DEFAULT_PREFIX = "protolab"
DEFAULT_PORT = 8000
# Docker's health checks run a process in the container at every interval,
# which shows in σ and max while measuring (a Python check every 2 s widened
# σ five-fold). So the services are checked rarely, and the lab waits for
# them itself, through their own protocol's client; the database (a tiny
# ping script in the lab's image) is checked often, because the services'
# depends_on waits for it.
HEALTH_INTERVAL = "30s"
MONGO_HEALTH_INTERVAL = "1s"
# Files the service images are built from (services/common/Dockerfile copies them).
IMAGE_INPUTS = ("pyproject.toml", "contract", "services", "clients",
                "lab/__init__.py", "lab/settings.py", "lab/registry.py", ".dockerignore")
SOURCE_LABEL = "org.protolab.source-hash"
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
    """Compose service (and image) name: rest/python_flask -> rest-python-flask."""
    return impl.name.replace("/", "-").replace("_", "-").lower()


def port_variable(impl: Implementation) -> str:
    return "LAB_PORT_" + service_name(impl).replace("-", "_").upper()


def container_port(impl: Implementation) -> int:
    return int(impl.manifest.get("docker", {}).get("port", DEFAULT_PORT))


def dockerfile_of(impl: Implementation) -> str:
    """The manifest's dockerfile (relative to the implementation's folder), from the root."""
    path = (impl.path / impl.dockerfile).resolve()
    return path.relative_to(settings.ROOT).as_posix()


# Where the images keep the repository and an implementation's build output.
CONTAINER_ROOT = Path("/app")
CONTAINER_OUT = Path("/app/build")


def container_command(impl: Implementation) -> str:
    return shlex.join(impl.expand(impl.command, python="python", root=CONTAINER_ROOT, out=CONTAINER_OUT))


def _q(value: object) -> str:
    # JSON strings and lists are valid YAML flow scalars and sequences.
    return json.dumps(value, ensure_ascii=False)


def render(implementations: Sequence[Implementation] | None = None) -> str:
    impls = list(discover() if implementations is None else implementations)
    interval = f"${{LAB_HEALTH_INTERVAL:-{HEALTH_INTERVAL}}}"
    mongo_interval = f"${{LAB_MONGO_HEALTH_INTERVAL:-{MONGO_HEALTH_INTERVAL}}}"
    out = [
        "# Generated from services/*/*/manifest.toml by `python -m lab.compose write`; do not edit.",
        "# Docker mode of the lab (LAB_MODE=docker) runs it under a unique project name",
        "# and sets the LAB_*_PORT variables to free ports; by hand, unset ports are",
        "# chosen by Docker:  docker-compose up -d && docker-compose ps",
        "# Images: LAB_MONGO_IMAGE, LAB_BASE_IMAGE, LAB_IMAGE_PREFIX (see README).",
        "services:",
        f"  {MONGO_SERVICE}:",
        f"    image: ${{LAB_MONGO_IMAGE:-{DEFAULT_MONGO_IMAGE}}}",
        f"    ports: [\"127.0.0.1:${{LAB_MONGO_PORT:-}}:{MONGO_PORT}\"]",
        "    healthcheck:",
        f"      test: {_q(['CMD-SHELL', MONGO_HEALTH])}",
        f"      interval: {mongo_interval}",
        "      timeout: 5s",
        "      retries: 3",
        "      start_period: 60s",
    ]
    for impl in impls:
        port = container_port(impl)
        out += [
            f"  {service_name(impl)}:",
            f"    image: ${{LAB_IMAGE_PREFIX:-{DEFAULT_PREFIX}}}/{service_name(impl)}",
            "    build:",
            "      context: .",
            f"      dockerfile: {dockerfile_of(impl)}",
            "      network: host",
            "      args:",
            f"        BASE_IMAGE: ${{LAB_BASE_IMAGE:-{DEFAULT_BASE_IMAGE}}}",
            f"        SERVICE: {impl.name}",
            f"        SERVICE_COMMAND: {_q(container_command(impl))}",
            f"        PORT: \"{port}\"",
            "        SOURCE_HASH: ${LAB_SOURCE_HASH:-}",
            "    pull_policy: build",
            "    environment:",
            f"      MONGODB_URI: \"mongodb://{MONGO_SERVICE}:{MONGO_PORT}/?directConnection=true\"",
            "      LAB_THREADS: ${LAB_THREADS:-4}",
            f"    ports: [\"127.0.0.1:${{{port_variable(impl)}:-}}:{port}\"]",
            "    depends_on:",
            f"      {MONGO_SERVICE}:",
            "        condition: service_healthy",
            "    healthcheck:",
            f"      test: {_q(['CMD', 'python', '-m', 'services.common.healthcheck'])}",
            f"      interval: {interval}",
            "      timeout: 5s",
            "      retries: 3",
            "      start_period: 60s",
        ]
    return "\n".join(out) + "\n"


def stale_reason(path: Path = COMPOSE_FILE) -> str | None:
    if not path.is_file():
        return f"{path.name} is missing"
    if path.read_text() != render():
        return f"{path.name} does not match the manifests"
    return None


# --- images --------------------------------------------------------------------


def source_hash(base_image: str) -> str:
    """Hash of everything a service image is built from, and of its base image."""
    digest = hashlib.sha256(base_image.encode())
    for entry in IMAGE_INPUTS:
        path = settings.ROOT / entry
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
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
    base: str
    mongo: str
    prefix: str
    chosen_because: str


def choose_images(d: dockerd.Dockerd) -> Images:
    env_base, env_mongo = os.environ.get("LAB_BASE_IMAGE"), os.environ.get("LAB_MONGO_IMAGE")
    prefix = os.environ.get("LAB_IMAGE_PREFIX") or DEFAULT_PREFIX
    base = env_base or DEFAULT_BASE_IMAGE
    mongo = env_mongo or DEFAULT_MONGO_IMAGE
    if env_base and env_mongo:
        return Images(base, mongo, prefix, "LAB_BASE_IMAGE and LAB_MONGO_IMAGE")
    missing = [i for i, env in ((base, env_base), (mongo, env_mongo)) if not env and not d.image_exists(i)]
    if not missing:
        return Images(base, mongo, prefix, "defaults (present locally)")
    if registry_reachable():
        return Images(base, mongo, prefix, "defaults (Docker Hub reachable)")
    if not env_base:
        base = dockerd.PYTHON_IMAGE
    if not env_mongo:
        mongo = dockerd.SECANTUSD_IMAGE
    why = (f"Docker Hub is not reachable and {', '.join(missing)} not present: using the lab's local "
           f"images (LAB_BASE_IMAGE={base} LAB_MONGO_IMAGE={mongo})")
    print(f"protolab: {why}", flush=True)
    return Images(base, mongo, prefix, why)


def ensure_local_images(d: dockerd.Dockerd, images: Images) -> dict[str, Any]:
    """Build the lab's local images (`make docker-images`) if one in use is missing."""
    local = {dockerd.PYTHON_IMAGE, dockerd.SECANTUSD_IMAGE, dockerd.BASE_IMAGE}
    wanted = [i for i in (images.base, images.mongo) if i in local]
    if not wanted or all(d.image_exists(i) for i in wanted):
        return {}
    print(f"protolab: building the local images ({', '.join(wanted)}); once, about a minute", flush=True)
    return dockerd.build_images(d)


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
    timings: dict[str, float] = field(default_factory=dict)
    built: list[str] = field(default_factory=list)

    @property
    def services(self) -> list[str]:
        return [service_name(i) for i in self.implementations]

    def env(self) -> dict[str, str]:
        env = {**self.d.env, "LAB_BASE_IMAGE": self.images.base, "LAB_MONGO_IMAGE": self.images.mongo,
               "LAB_IMAGE_PREFIX": self.images.prefix, "LAB_THREADS": str(settings.threads()),
               "LAB_SOURCE_HASH": source_hash(self.images.base),
               "LAB_MONGO_PORT": str(self.ports.get(MONGO_SERVICE, ""))}
        for impl in self.implementations:
            env[port_variable(impl)] = str(self.ports.get(service_name(impl), ""))
        return env

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
        return f"{self.images.prefix}/{service_name(impl)}"

    def build(self) -> None:
        """Build the service images that are missing or built from other sources."""
        want = source_hash(self.images.base)
        stale = []
        for impl in self.implementations:
            got = self.d.docker("image", "inspect", "--format",
                                f'{{{{index .Config.Labels "{SOURCE_LABEL}"}}}}', self.image_of(impl),
                                timeout=30, check=False)
            if got.returncode != 0 or got.stdout.strip() != want:
                stale.append(service_name(impl))
        t0 = time.monotonic()
        if stale:
            print(f"protolab: building {', '.join(stale)} on {self.images.base}", flush=True)
            self.compose("build", *stale, timeout=1800)
        self.built = stale
        self.timings["build_s"] = round(time.monotonic() - t0, 2)

    def up(self) -> None:
        self.ports = {MONGO_SERVICE: free_port()} | {s: free_port() for s in self.services}
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
                        if _answers(impl, impl.endpoint_for("127.0.0.1", self.ports[service])):
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

    def down(self) -> None:
        t0 = time.monotonic()
        self.compose("down", "-v", "--remove-orphans", "--timeout", "10", timeout=180)
        self.timings["down_s"] = round(time.monotonic() - t0, 2)

    def database(self) -> Database:
        uri = f"mongodb://127.0.0.1:{self.ports[MONGO_SERVICE]}/?directConnection=true"
        db = external(uri)
        image = self.images.mongo
        if "secantus" in image:
            tag = image.rpartition(":")[2]
            return dataclasses.replace(db, server=f"SecantusDB secantusd-rs (image {image})", version=tag)
        return dataclasses.replace(db, server=f"MongoDB (image {image})")

    def interpreter(self, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The services' Python, probed inside the first service container."""
        container = found[self.services[0]]["Id"]
        return interpreter.probe(["docker", "--host", self.d.docker_host, "exec", container, "python"])

    def describe(self, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """What results record about the Docker side of the run."""
        return {
            "daemon": self.d.settings,
            "daemon_pid": self.d.pid,
            "compose_project": self.project,
            "mongo_image": self.images.mongo,
            "base_image": self.images.base,
            "images_chosen_by": self.images.chosen_because,
            "image_ids": {s: c.get("Image", "")[:19] for s, c in found.items()},
            "published_on": "127.0.0.1",
            "health_interval": os.environ.get("LAB_HEALTH_INTERVAL", HEALTH_INTERVAL),
            "mongo_health_interval": os.environ.get("LAB_MONGO_HEALTH_INTERVAL", MONGO_HEALTH_INTERVAL),
            "timings_s": self.timings,
            "interpreter": self.interpreter(found),
        }


# The description of the stack this process ran last, for lab.context.run_context:
# results are written after the stack is down (pytest's terminal summary).
_active: dict[str, Any] | None = None


def active_description() -> dict[str, Any] | None:
    return _active


@contextlib.contextmanager
def running_stack(names: Sequence[str] | None = None) -> Iterator[Any]:
    """The Docker-mode lab.stack.Lab (pids: the containers' main process ids on the host)."""
    global _active
    from lab.stack import Lab  # lab.stack imports this module only in Docker mode

    stale = stale_reason()
    if stale:
        raise SystemExit(f"{stale}; regenerate it with: python -m lab.compose write")
    implementations = select(names)
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
        images = choose_images(d)
        ensure_local_images(d, images)
        stack = ComposeStack(d, implementations, images)
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
                      implementations=implementations)
            for impl in implementations:
                lab.endpoints[impl.name] = impl.endpoint_for("127.0.0.1", stack.ports[service_name(impl)])
                lab.pids[impl.name] = int(found[service_name(impl)]["State"]["Pid"])
            _active = stack.describe(found)
            print(f"protolab: docker stack {stack.project} healthy in {stack.timings['up_s']} s "
                  f"(database {lab.database.server} {lab.database.version})", flush=True)
            yield lab
        finally:
            kept = _leave(stack)
    finally:
        if not kept:
            _stop_daemon(d)


def _answers(impl: Implementation, endpoint: str) -> bool:
    try:
        check_health(impl.protocol, endpoint)
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
    parser = argparse.ArgumentParser(prog="python -m lab.compose", description=__doc__.splitlines()[0])
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
