"""Implementations are discovered from services/<protocol>/<language>_<library>/manifest.toml:
adding one, in any language, is adding a folder.

The manifest (the same format for every language; services/README.md):

    protocol = "rest"                 # the client and capture descriptor to use
    language = "go"
    library = "net/http"
    server = "net/http"               # the production server it runs under
    concurrency = "a goroutine per connection"
    endpoint = "http://{host}:{port}"

    [build]                           # optional; cached, rerun only when an input changes
    command = ["go", "build", "-C", "{root}/services", "-o", "{out}/server", "./rest/go_nethttp"]
    inputs = ["services/go.mod", "services/go.sum", "services/common/go/**", "services/rest/go_nethttp/**"]
    output = ""                       # optional: a path (from the root) the build must leave, e.g.
                                      # "services/node_modules"; without it the build reruns
    needs = ["go"]                    # programs that must be on PATH

    [run]                             # environment: HOST, PORT, MONGODB_URI, LAB_THREADS, LAB_CONTRACT
    command = ["{out}/server"]

    [versions]                        # where the library versions come from
    lockfile = "services/go.mod"      # go.mod, package-lock.json, or "python" (the lab's environment)
    packages = ["go.mongodb.org/mongo-driver/v2"]

    [docker]
    dockerfile = "../../../docker/go/Dockerfile"   # relative to the folder
    port = 8000

    [variants]                        # optional: the values of lab/axes.py's variant axes it supports,
    workers = ["gevent", "gthread"]   # per axis, its base (the subject without a suffix) first

    [variant.gthread]                 # optional: what the manifest says differently of that variant
    server = "gunicorn (gthread)"     # (server, concurrency, operations, port_offset, command, [load], [bench])
    port_offset = 11

    [unsupported]                     # optional: per axis its library cannot serve, why (printed
    compression = "..."               # when a run asks for the axis and leaves this one out)

A variant is a subject of its own, named "<implementation>+<value>"
("rest/python_flask+gthread"): the same folder and command, the values'
environment (lab/axes.py) on the service. `discover()` expands every
implementation into its base and the variants of the axes measured by
default; `variant(name)` resolves any other.

Placeholders in commands: {python} (the lab's interpreter), {root} (the
repository), {dir} (the implementation's folder), {out} (its build output
directory in the lab's cache). Every command runs in the repository root.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from clients.protocols import Protocol, secure_endpoint
from clients.protocols import get as protocol_descriptor
from lab import axes, settings
from lab.settings import PROTOCOL_ORDER, ROOT

SERVICES = ROOT / "services"
CONTRACT = ROOT / "contract" / "contract.json"
# The oldest toolchains the implementations build and run with: the one place
# the lab states them (the README quotes it). They follow the projects'
# own declarations, services/go.mod's `go` line and services/package.json's
# "engines"; tests/test_docs.py holds the three alike.
TOOLCHAIN_MINIMUMS = {"go": "1.26", "node": "20.19"}
# How to get a toolchain the lab found missing.
TOOLCHAIN_HINTS = {
    "go": f"install Go >= {TOOLCHAIN_MINIMUMS['go']} (https://go.dev/dl/ or your distribution's golang package)",
    "node": f"install Node.js >= {TOOLCHAIN_MINIMUMS['node']} with npm "
            "(https://nodejs.org/ or your distribution's nodejs package)",
    "npm": "install npm (it comes with Node.js)",
}
RUNTIME_VERSION = {"go": ["go", "version"], "node": ["node", "--version"]}
# The order of languages within a protocol, wherever implementations are listed.
LANGUAGE_ORDER = ("python", "go", "node")


# What an implementation serves unless its manifest says otherwise (`operations`):
# the contract's CRUD operations and a health call. A push-only one says
# operations = ["health", "subscribe"]; the suites select by it (lab/pytest_plugin/fixtures.py).
CRUD_CALLS = ("create", "get", "list", "update", "delete", "health")


class BuildFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Implementation:
    name: str  # "<protocol>/<language>_<library>", the folder under services/
    protocol: str
    language: str
    library: str
    server: str
    path: Path
    command: tuple[str, ...]
    endpoint: str  # template with {host} and {port}
    concurrency: str = ""
    build_command: tuple[str, ...] = ()
    build_inputs: tuple[str, ...] = ()
    build_output: str = ""
    needs: tuple[str, ...] = ()
    lockfile: str = "python"
    packages: tuple[str, ...] = ()
    dockerfile: str = "Dockerfile"
    operations: tuple[str, ...] = CRUD_CALLS
    warmup_calls: int | None = None  # [bench] warmup_calls: untimed calls before the latency suite measures it
    # The manifest's other fields, typed: [run] port_offset, [docker] port, tuned, [load].
    fixed_port_offset: int | None = None
    docker_port: int | None = None
    tuned: str = ""
    max_connections: int | str | None = None   # [load] max_connections: a number, or "threads"
    holds_idle_connections: bool = True        # [load] holds_idle_connections
    # The subject's place on the variant axes (lab/axes.py): (axis, value) for every axis
    # its manifest declares, base values included; `base` is the folder's implementation.
    base: str = ""
    values: tuple[tuple[str, str], ...] = ()
    supported: tuple[tuple[str, tuple[str, ...]], ...] = ()   # [variants]: axis -> its values
    unsupported: tuple[tuple[str, str], ...] = ()   # [unsupported]: axis -> why its library cannot serve it

    @property
    def variant(self) -> tuple[str, ...]:
        """The values that differ from the base (empty for the base itself)."""
        supported = dict(self.supported)
        return tuple(v for a, v in self.values if supported[a][0] != v)

    def service_env(self) -> dict[str, str]:
        """What its variant's values set on the service's environment (lab/environment.py adds it)."""
        env: dict[str, str] = {}
        for axis, value in self.values:
            env.update(axes.VARIANT_AXES[axis].value(value).service_env)
        return env

    def client_options(self) -> dict[str, Any]:
        """What its variant's values set on the protocol client (keyword options), as the axis
        table says them (a run's file as its placeholder: lab.environment.client_options expands it)."""
        options: dict[str, Any] = {}
        for axis, value in self.values:
            options.update(axes.VARIANT_AXES[axis].value(value).client)
        return options

    def capture(self) -> dict[str, Any]:
        """What its variant's values tell the wire capture (lab/axes.py, Value.capture): the framing
        tshark decodes when it is not its protocol's own ("transport": "http2"), the TLS it is wrapped in."""
        found: dict[str, Any] = {}
        for axis, value in self.values:
            found.update(axes.VARIANT_AXES[axis].value(value).capture)
        return found

    @property
    def served_by(self) -> str:
        """The subject whose service process serves this one: itself, unless values of its variant
        change only the lab's client (lab/axes.py, Value.client_only: a protocol's own axis, e.g.
        the wire protocol its client speaks to the one server); then the subject without them,
        whose process, endpoint and port it shares."""
        supported = dict(self.supported)
        changed = [(a, v) for a, v in self.values if supported[a][0] != v]
        kept = []
        for a, v in changed:
            value = axes.VARIANT_AXES[a].value(v)
            if not value.client_only:
                kept.append(v)
            elif value.served_with:  # served by the subject with that value of its axis instead (h1tls: h2)
                kept.append(value.served_with)
        if kept == [v for _, v in changed]:
            return self.name
        return variant(self.base + "".join(f"+{v}" for v in kept)).name

    def framing(self) -> Protocol:
        """Its protocol's descriptor as its variant puts it on the wire: the `transport` and `payload`
        its values' capture entries name (lab/axes.py, Value.capture) over the descriptor's own. What
        the wire capture dissects and counts by (a client-only wire protocol frames its messages its way)."""
        overrides = {key: setting for axis, value in self.values
                     for key, setting in axes.VARIANT_AXES[axis].value(value).capture.items()
                     if key in ("transport", "payload")}
        descriptor = protocol_descriptor(self.protocol)
        return dataclasses.replace(descriptor, **overrides) if overrides else descriptor

    @property
    def secure(self) -> bool:
        """Its variant puts TLS between the lab's client and it: its client verifies a CA."""
        return "ca_file" in self.client_options()

    @property
    def not_in_docker(self) -> str:
        """Why Docker mode leaves this subject out ("" when it runs there): its values' reasons."""
        return "; ".join(dict.fromkeys(r for a, v in self.values if (r := axes.VARIANT_AXES[a].value(v).not_in_docker)))

    # --- placeholders, build and run ---------------------------------------------

    def out_dir(self) -> Path:
        """The build output directory: keyed by a hash of the build's inputs. A
        build whose command does not name {out} (npm ci of the one Node.js
        project) is the same build for every implementation that runs it: one
        directory, so it runs once."""
        slug = self.base.replace("/", "-") if any("{out}" in part for part in self.build_command) else "shared"
        return settings.cache_dir() / "builds" / f"{slug}-{self.input_hash()}"

    def expand(self, parts: Sequence[str], *, python: str = sys.executable, root: Path | None = None,
               out: Path | None = None, **extra: str) -> list[str]:
        """`extra`: placeholders of a command's own (a cross-check client's {plan})."""
        root = ROOT if root is None else root
        values = {"python": python, "root": str(root), "dir": str(root / self.path.relative_to(ROOT)),
                  "out": str(out if out is not None else self.out_dir()), **extra}
        return [part.format(**values) for part in parts]

    def argv(self) -> list[str]:
        return self.expand(self.command)

    def input_hash(self) -> str:
        digest = hashlib.sha256(json.dumps(self.build_command).encode())
        for file in self.input_files():
            digest.update(file.relative_to(ROOT).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
        for tool in self.needs:
            digest.update(_runtime_version(tool).encode())
        return digest.hexdigest()[:16]

    def input_files(self) -> list[Path]:
        return glob_files(self.build_inputs)

    def missing(self) -> list[str]:
        """The programs this implementation needs that are not on PATH."""
        return [tool for tool in self.needs if shutil.which(tool) is None]

    def build(self, log: Path | None = None) -> Path | None:
        """Run the build step once per set of inputs; its output directory (None if it has none)."""
        if not self.build_command:
            return None
        missing = self.missing()
        if missing:
            raise BuildFailed(f"{self.name} needs {', '.join(missing)}: "
                              + "; ".join(TOOLCHAIN_HINTS.get(t, f"install {t}") for t in missing))
        out = self.out_dir()
        if self._built(out):
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.parent / f".{out.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build even when two runs start at once
            if self._built(out):
                return out
            out.mkdir(exist_ok=True)
            print(f"protolab: building {self.name} into {out}", flush=True)
            done = subprocess.run(self.expand(self.build_command, out=out), cwd=ROOT, capture_output=True,
                                  text=True, timeout=1800)
            if log is not None:
                log.write_text(done.stdout + done.stderr)
            if done.returncode != 0:
                raise BuildFailed(f"building {self.name} failed (exit {done.returncode}):\n"
                                  f"{(done.stdout + done.stderr)[-3000:]}")
            self._marker(out).write_text(" ".join(self.expand(self.build_command, out=out)) + "\n")
        return out

    def _marker(self, out: Path) -> Path:
        """Written once the build has succeeded. A build into the tree (npm ci's
        node_modules) keeps it inside that output: the cache directory is shared by
        every clone on the machine, and a marker there would call a clone's
        half-written node_modules built while another process's npm ci still fills it.
        Named after `out` (the inputs' hash): a stale output's marker names another."""
        return ROOT / self.build_output / f".protolab-built-{out.name}" if self.build_output else out / ".built"

    def _built(self, out: Path) -> bool:
        return self._marker(out).exists()

    def serves(self, *operations: str) -> bool:
        return set(operations) <= set(self.operations)

    def port_offset(self, position: int) -> int:
        """Its port above LAB_PORT_BASE: the manifest's [run] port_offset,
        else 100 + its position among the implementations started."""
        return self.fixed_port_offset if self.fixed_port_offset is not None else 100 + position

    def endpoint_for(self, host: str, port: int) -> str:
        """Its endpoint at host:port; over TLS, with the secure scheme (https://, wss://)."""
        endpoint = self.endpoint.format(host=host, port=port)
        return secure_endpoint(endpoint) if self.secure else endpoint

    # --- what it ran with --------------------------------------------------------

    def versions(self) -> dict[str, str]:
        found = dict(_lock_versions(self.lockfile, self.packages))
        for tool in self.needs:
            if tool in RUNTIME_VERSION:
                found[tool] = _runtime_version(tool)
        if self.language == "python":
            found["python"] = sys.version.split()[0]
        return found


def glob_files(patterns: Sequence[str]) -> list[Path]:
    """The files the patterns (from the root) match, without caches and node_modules.
    A trailing "**" means every file below (Python 3.11's glob gives only directories)."""
    files: set[Path] = set()
    for pattern in patterns:
        if pattern.endswith("**"):
            pattern += "/*"
        for path in ROOT.glob(pattern):
            if path.is_file() and not {"node_modules", "__pycache__"} & set(path.parts) and path.suffix != ".pyc":
                files.add(path)
    return sorted(files)


@cache
def _runtime_version(tool: str) -> str:
    argv = RUNTIME_VERSION.get(tool, [tool, "--version"])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not found"


def _lock_versions(lockfile: str, packages: Sequence[str]) -> dict[str, str]:
    """Versions of `packages` from the language's own lock file."""
    found = {p: "not in lock file" for p in packages}
    if lockfile == "python":
        for package in packages:
            try:
                found[package] = metadata.version(package)
            except metadata.PackageNotFoundError:
                found[package] = "not installed"
        return found
    path = ROOT / lockfile
    if not path.is_file():
        return {p: f"{lockfile} missing" for p in packages}
    if path.name == "go.mod":
        for module, version in re.findall(r"^\s*(?:require\s+)?([\w./~-]+)\s+(v[\w.+-]+)", path.read_text(), re.M):
            if module in found:
                found[module] = version
    elif path.name == "package-lock.json":
        lock = json.loads(path.read_text()).get("packages", {})
        for package in packages:
            entry = lock.get(f"node_modules/{package}")
            if entry:
                found[package] = entry.get("version", "?")
    return found


# What a [variant.<value>] table may say differently of its variant.
# `command`: the [run] command of a variant another server runs (a Python WSGI app under
# hypercorn for HTTP/2, lab/axes.py axis http); its image in Docker mode is its own (compose.py).
VARIANT_OVERRIDES = ("server", "concurrency", "operations", "port_offset", "command", "load", "bench")


def _manifest(path: Path) -> dict[str, Any]:
    manifest = tomllib.loads(path.read_text())
    if "native" in manifest:
        raise SystemExit(f"{path}: the [native] table is gone: name it [run]")
    supported = manifest.get("variants", {})
    for axis, values in supported.items():
        if axis not in axes.VARIANT_AXES:
            raise SystemExit(f"{path}: [variants] names axis {axis!r}, not in lab/axes.py "
                             f"({', '.join(axes.VARIANT_AXES)})")
        if not isinstance(values, list) or not values:
            raise SystemExit(f"{path}: [variants] {axis} must list its values, the base first")
        for value in values:
            served_with = axes.VARIANT_AXES[axis].value(value).served_with  # raises on an unknown value
            if served_with and served_with not in values:
                raise SystemExit(f"{path}: [variants] {axis} lists {value!r}, which {served_with!r}'s process "
                                 f"serves (lab/axes.py): list {served_with!r} too")
    for axis in manifest.get("unsupported", {}):
        if axis not in axes.VARIANT_AXES or axis in supported:
            raise SystemExit(f"{path}: [unsupported] names {axis!r}: not an axis of lab/axes.py, or one its "
                             "[variants] declares")
    declared = {v for values in supported.values() for v in values}
    for value, table in manifest.get("variant", {}).items():
        if value not in declared:
            raise SystemExit(f"{path}: [variant.{value}] is not a value its [variants] declares")
        unknown = set(table) - set(VARIANT_OVERRIDES)
        if unknown:
            raise SystemExit(f"{path}: [variant.{value}] may set {', '.join(VARIANT_OVERRIDES)}, "
                             f"not {', '.join(sorted(unknown))}")
    return manifest


def _with_variant(manifest: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """The manifest as the variant with these values reads it: its [variant.<value>] tables over the base."""
    merged = dict(manifest)
    run = dict(merged.get("run", {}))
    for value in values.values():
        for key, setting in manifest.get("variant", {}).get(value, {}).items():
            if key in ("port_offset", "command"):
                run[key] = setting
            elif isinstance(setting, dict):
                merged[key] = {**merged.get(key, {}), **setting}
            else:
                merged[key] = setting
    merged["run"] = run
    return merged


def _implementation(path: Path, manifest: dict[str, Any], values: dict[str, str]) -> Implementation:
    folder = path.parent
    base = folder.relative_to(SERVICES).as_posix()
    supported = {axis: tuple(v) for axis, v in manifest.get("variants", {}).items()}
    variant = [v for a, v in values.items() if supported[a][0] != v]
    m = _with_variant(manifest, values)
    run, build, versions = m.get("run", {}), m.get("build", {}), m.get("versions", {})
    if run.get("port_offset") is not None:  # each value's shift (lab/axes.py, e.g. tls13 +200), unless it sets its own
        run = {**run, "port_offset": run["port_offset"] + sum(
            axes.VARIANT_AXES[a].value(v).port_shift for a, v in values.items()
            if "port_offset" not in manifest.get("variant", {}).get(v, {}))}
    load = m.get("load", {})
    try:
        return Implementation(
            name=base + "".join(f"+{v}" for v in variant), protocol=m["protocol"], language=m["language"],
            library=m["library"], server=m["server"], path=folder,
            command=tuple(run["command"]), endpoint=m["endpoint"],
            concurrency=m.get("concurrency", ""),
            build_command=tuple(build.get("command", ())), build_inputs=tuple(build.get("inputs", ())),
            build_output=build.get("output", ""),
            needs=tuple(dict.fromkeys([*build.get("needs", ()), *run.get("needs", ())])),
            lockfile=versions.get("lockfile", "python"),
            packages=tuple(versions.get("packages", ())),
            dockerfile=m.get("docker", {}).get("dockerfile", "Dockerfile"),
            operations=tuple(m.get("operations", CRUD_CALLS)),
            warmup_calls=_warmup_calls(path, m.get("bench", {})),
            fixed_port_offset=run.get("port_offset"), docker_port=m.get("docker", {}).get("port"),
            tuned=m.get("tuned", ""), max_connections=load.get("max_connections"),
            holds_idle_connections=load.get("holds_idle_connections", True),
            base=base, values=tuple((a, values[a]) for a in axes.VARIANT_AXES if a in values),
            supported=tuple((a, supported[a]) for a in axes.VARIANT_AXES if a in supported),
            unsupported=tuple((a, str(why)) for a, why in manifest.get("unsupported", {}).items()))
    except KeyError as exc:
        raise SystemExit(f"{path}: manifest lacks {exc}") from None


def _load(path: Path) -> Implementation:
    """The base implementation of the manifest at `path`."""
    manifest = _manifest(path)
    return _implementation(path, manifest, {a: v[0] for a, v in manifest.get("variants", {}).items()})


def _warmup_calls(path: Path, bench: dict[str, Any]) -> int | None:
    value = bench.get("warmup_calls")
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise SystemExit(f"{path}: [bench] warmup_calls must be a whole number >= 0, not {value!r}")
    return value


@cache
def _folders(root: Path = SERVICES) -> tuple[tuple[Path, dict[str, Any]], ...]:
    return tuple((p, _manifest(p)) for p in sorted(root.glob("*/*/manifest.toml")))


def _order(impl: Implementation) -> tuple[int, int, str]:
    # By protocol (clients/<protocol>/__init__.py), then by language within it (Python, the
    # reference, first), then by folder, each base before its variants.
    rank = PROTOCOL_ORDER.index(impl.protocol) if impl.protocol in PROTOCOL_ORDER else 99
    language = LANGUAGE_ORDER.index(impl.language) if impl.language in LANGUAGE_ORDER else 99
    return rank, language, impl.base


def bases(root: Path = SERVICES) -> list[Implementation]:
    """One implementation per folder, as its manifest runs it without a suffix."""
    return sorted((_load(p) for p, _ in _folders(root)), key=_order)


def variants_of(impl: Implementation, *, default_run: bool = False) -> list[Implementation]:
    """Its variants, one axis varied at a time from its base (`default_run`: only the axes
    make bench and make test measure by default)."""
    base = variant(impl.base)
    out = []
    for axis, values in base.supported:
        if default_run and not axes.VARIANT_AXES[axis].in_default_run:
            continue
        out += [variant(f"{impl.base}+{value}") for value in values[1:]]
    return out


def services_of(implementations: Sequence[Implementation]) -> dict[str, Implementation]:
    """Subject name -> the implementation whose process serves it (Implementation.served_by): itself,
    or the subject its client-only values vary (the one among `implementations` when there, else the
    registry's). The lab starts one process per distinct value, in the order given."""
    given = {impl.name: impl for impl in implementations}
    return {impl.name: given.get(impl.served_by) or variant(impl.served_by) for impl in implementations}


def every_variant(root: Path = SERVICES) -> list[Implementation]:
    """Every implementation and every variant its manifest declares (compose.yaml has them all)."""
    return [v for impl in bases(root) for v in (impl, *variants_of(impl))]


def requested_values() -> list[str]:
    """LAB_VARIANTS: the axes (or single values) a run measures beyond the default ones,
    a comma list, e.g. "compression" or "gzip,tls13"; each axis' every non-base value."""
    names = [n.strip() for n in os.environ.get("LAB_VARIANTS", "").split(",") if n.strip()]
    values = []
    for name in names:
        if name in axes.VARIANT_AXES:
            values += [v.name for v in axes.VARIANT_AXES[name].values]
        elif any(name in {v.name for v in a.values} for a in axes.VARIANT_AXES.values()):
            values.append(name)
        else:
            raise SystemExit(f"LAB_VARIANTS: {name!r} is neither an axis nor a value of lab/axes.py "
                             f"(axes: {', '.join(axes.VARIANT_AXES)})")
    return values


def discover(root: Path = SERVICES) -> list[Implementation]:
    """The implementations the lab runs: each folder's base and, right after it, its variants
    on the axes measured by default (lab/axes.py: in_default_run) and those LAB_VARIANTS asks
    for. An implementation that does not support a requested value is left out of that cell,
    with a line that says so."""
    requested = requested_values()
    out = []
    for impl in bases(root):
        out.append(impl)
        for candidate in variants_of(impl):
            axis = next(a for a, v in candidate.values if v in candidate.variant)
            if axes.VARIANT_AXES[axis].in_default_run or set(candidate.variant) <= set(requested):
                out.append(candidate)
        for value in requested:
            axis = next(a for a, ax in axes.VARIANT_AXES.items() if value in {v.name for v in ax.values})
            supported = dict(impl.supported).get(axis, ())
            if value not in supported and value != axes.VARIANT_AXES[axis].values[0].name:
                why = dict(impl.unsupported).get(axis)
                _warn_once(f"protolab: {impl.name}+{value} left out: {impl.name} does not support "
                           f"{axis}={value}" + (f": {why}" if why else f" (its manifest's [variants] {axis} "
                                                                      f"lists {', '.join(supported) or 'nothing'})"))
    return out


@cache
def variant(name: str) -> Implementation:
    """The subject "<implementation>[+<value>...]", or a ValueError that says why it does not exist."""
    base, *values = name.split("+")
    folder = next(((p, m) for p, m in _folders() if p.parent.relative_to(SERVICES).as_posix() == base), None)
    if folder is None:
        raise ValueError(f"unknown implementation {base!r} (protolab list shows them)")
    path, manifest = folder
    supported = {axis: tuple(v) for axis, v in manifest.get("variants", {}).items()}
    chosen = {a: v[0] for a, v in supported.items()}
    for value in values:
        axis = next((a for a, v in axes.VARIANT_AXES.items() if value in {x.name for x in v.values}), None)
        if axis is None:
            raise ValueError(f"{name}: {value!r} is no value of any axis in lab/axes.py")
        if value not in supported.get(axis, ()):
            raise ValueError(f"{name}: {base} does not support {axis}={value} (its manifest's [variants] "
                             f"{axis} lists {', '.join(supported.get(axis, ())) or 'nothing'})")
        chosen[axis] = value
    return _implementation(path, manifest, chosen)


def select(names: Sequence[str] | None = None) -> list[Implementation]:
    """The discovered implementations, or those named (an unknown name stops the
    run; a variant is named "<implementation>+<value>"). Unnamed, those whose toolchain
    is missing are left out, each with a line that says what is missing and how to get
    it; named, they stop the run. An empty list names none."""
    if names is not None:
        chosen = []
        for name in names:
            try:
                chosen.append(variant(name))
            except ValueError as exc:
                raise SystemExit(f"unknown implementation: {exc}") from None
        for impl in chosen:
            if impl.missing():
                raise SystemExit(missing_line(impl))
        return sorted(chosen, key=lambda i: (*_order(i), i.name))  # the registry's order, as listed
    implementations = discover()
    for impl in implementations:
        if impl.missing():
            _warn_once(missing_line(impl))
    return [i for i in implementations if not i.missing()]


def first_of_each(implementations: Iterable[Implementation],
                  key: Callable[[Implementation], Hashable]) -> dict[Hashable, str]:
    """The name of the first implementation (in the order given: the registry's) of each
    value of `key`, e.g. per (protocol, language): how the experiments and studies pick
    their default subjects from the manifests' fields."""
    first: dict[Hashable, str] = {}
    for impl in implementations:
        first.setdefault(key(impl), impl.name)
    return first


def one_per_protocol(languages: Sequence[str] = ("go",), serving: Sequence[str] = CRUD_CALLS) -> list[str]:
    """One implementation per protocol that serves `serving` and can run here: the first of
    `languages` present, else the first in the registry's order. The sweep's default subjects
    (sweep/grid.py), and those of the instruments that measure one implementation per protocol
    across network paths (load --per-protocol, benchmarks.connection_setup): the question is
    which *protocol*, so the language stays the same wherever the lab has the same one."""
    chosen: dict[str, Implementation] = {}
    for impl in bases():
        if not impl.serves(*serving) or impl.missing():
            continue
        have = chosen.get(impl.protocol)
        if have is None or (have.language not in languages and impl.language in languages):
            chosen[impl.protocol] = impl
    return [impl.name for impl in chosen.values()]


def missing_line(impl: Implementation) -> str:
    missing = impl.missing()
    return (f"protolab: {impl.name} left out: needs {', '.join(missing)}, not on PATH; "
            + "; ".join(TOOLCHAIN_HINTS.get(t, f"install {t}") for t in missing))


@cache
def _warn_once(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def study_column(names: Sequence[str]) -> dict[str, str]:
    """Protocol -> the implementation set beside the published studies: the first
    Python one in `names` (the core study's stack: Flask, grpcio, graphene,
    simple-websocket), else the first of that protocol."""
    known = {i.name: i for i in discover()}
    out: dict[str, str] = {}
    for name in names:
        impl = known.get(name)
        if impl is None:
            continue
        if impl.protocol not in out or (impl.language == "python"
                                        and known[out[impl.protocol]].language != "python"):
            out[impl.protocol] = name
    return out
