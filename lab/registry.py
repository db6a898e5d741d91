"""Implementations are discovered from services/<protocol>/<library>/manifest.toml:
adding one is adding a folder."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from lab.settings import PROTOCOL_ORDER, ROOT

SERVICES = ROOT / "services"


@dataclass(frozen=True)
class Implementation:
    name: str  # "<protocol>/<library>", the folder under services/
    protocol: str
    language: str
    library: str
    server: str
    path: Path
    command: tuple[str, ...]
    endpoint: str  # template with {host} and {port}
    packages: tuple[str, ...] = ()
    dockerfile: str = "Dockerfile"
    manifest: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def argv(self) -> list[str]:
        return [sys.executable if part == "{python}" else part for part in self.command]

    def port_offset(self, position: int) -> int:
        """Its port above LAB_PORT_BASE: the manifest's [native] port_offset,
        else 100 + its position among the implementations started."""
        return int(self.manifest.get("native", {}).get("port_offset", 100 + position))

    def endpoint_for(self, host: str, port: int) -> str:
        return self.endpoint.format(host=host, port=port)

    def versions(self) -> dict[str, str]:
        found = {}
        for package in self.packages:
            try:
                found[package] = metadata.version(package)
            except metadata.PackageNotFoundError:
                found[package] = "not installed"
        return found


def _load(path: Path) -> Implementation:
    manifest = tomllib.loads(path.read_text())
    folder = path.parent
    name = folder.relative_to(SERVICES).as_posix()
    try:
        return Implementation(
            name=name, protocol=manifest["protocol"], language=manifest["language"],
            library=manifest["library"], server=manifest["server"], path=folder,
            command=tuple(manifest["native"]["command"]), endpoint=manifest["endpoint"],
            packages=tuple(manifest.get("packages", ())),
            dockerfile=manifest.get("docker", {}).get("dockerfile", "Dockerfile"),
            manifest=manifest)
    except KeyError as exc:
        raise SystemExit(f"{path}: manifest lacks {exc}") from None


def discover(root: Path = SERVICES) -> list[Implementation]:
    found = [_load(p) for p in sorted(root.glob("*/*/manifest.toml"))]

    def order(impl: Implementation) -> tuple[int, str]:
        rank = PROTOCOL_ORDER.index(impl.protocol) if impl.protocol in PROTOCOL_ORDER else 99
        return rank, impl.name
    return sorted(found, key=order)


def select(names: Sequence[str] | None = None) -> list[Implementation]:
    """The discovered implementations, or those named (an unknown name stops the run)."""
    implementations = discover()
    if names:
        unknown = set(names) - {i.name for i in implementations}
        if unknown:
            raise SystemExit(f"unknown implementation(s): {', '.join(sorted(unknown))}")
        implementations = [i for i in implementations if i.name in names]
    return implementations
