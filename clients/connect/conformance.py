"""Connect's own conformance suite (connectrpc.com/conformance, Apache-2.0) against a Connect server
of the lab: its `connectconformance` runner, in server mode, drives the implementation's
conformance server (services/connect/<impl>/conformance/: the library serving the suite's
ConformanceService as the lab's service is served) with the suite's reference client (connect-go),
over every configuration the server claims (conformance.yaml beside it), and reports each test case.

This module knows the suite: where an implementation keeps its server, the runner's command line and
how to read its report. Building is the caller's (tests/test_connect_conformance.py builds the runner
with the lab's pinned `go install` and the server with its conformance.toml's [build] command)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The runner (and its reference client): go install of this module at this version.
RUNNER = ("connectrpc.com/conformance/cmd/connectconformance", "v1.0.7", "connectconformance")
# The short feature set make test checks: what a server claims (its conformance.yaml), narrowed to the
# protobuf codec, no compression and no request limit (each protocol and HTTP version it claims stays).
SHORT = {"codecs": "[CODEC_PROTO]", "compressions": "[COMPRESSION_IDENTITY]",
         "supports_message_receive_limit": "false"}
_TOTAL = re.compile(r"Total cases: (\d+)\s*\n\s*(\d+) passed, (\d+) failed")
_FAILED = re.compile(r"^FAILED: (.+?)(?::| was expected to fail but did not)\s*$", re.M)
_NOT_RUN = re.compile(r"Another (\d+) could not be run")


@dataclass(frozen=True)
class Server:
    """An implementation's conformance server: its folder and its conformance.toml."""
    implementation: str  # "connect/go_connect"
    folder: Path
    build_command: tuple[str, ...]
    build_inputs: tuple[str, ...]
    run_command: tuple[str, ...]

    @property
    def config(self) -> Path:
        return self.folder / "conformance.yaml"

    def short_config(self) -> str:
        """Its conformance.yaml with the features of SHORT in place of its own."""
        lines = []
        for line in self.config.read_text().splitlines():
            key = line.strip().split(":", 1)[0]
            lines.append(f"  {key}: {SHORT[key]}" if key in SHORT and line.startswith("  ") else line)
        return "\n".join(lines) + "\n"

    def expand(self, parts: tuple[str, ...], out: Path) -> list[str]:
        return [p.format(root=str(ROOT), out=str(out), dir=str(self.folder), python=sys.executable) for p in parts]


def servers() -> list[Server]:
    """Every Connect implementation with a conformance server (services/connect/*/conformance/)."""
    out = []
    for toml in sorted((ROOT / "services" / "connect").glob("*/conformance/conformance.toml")):
        data = tomllib.loads(toml.read_text())
        build = data.get("build", {})
        out.append(Server(toml.parent.parent.relative_to(ROOT / "services").as_posix(), toml.parent,
                          tuple(build.get("command", ())), tuple(build.get("inputs", ())),
                          tuple(data["run"]["command"])))
    return out


def build(server: Server, out: Path, timeout: float = 900) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if not server.build_command:  # nothing to build (the lab's interpreter runs it)
        return
    done = subprocess.run(server.expand(server.build_command, out), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"building {server.implementation}'s conformance server failed:\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")


def run(runner: Path, server: Server, out: Path, config: Path, *, parallel: int = 2,
        timeout: float = 1200) -> dict[str, Any]:
    """Run the suite against the built server with `config`; the report as data: the case counts,
    the failed cases by name, the runner's exit status and the last lines of its output."""
    argv = [str(runner), "--mode", "server", "--conf", str(config), "--parallel", str(parallel),
            "--max-servers", "1", "--", *server.expand(server.run_command, out)]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    return {**read_report(output), "implementation": server.implementation, "exit_status": done.returncode,
            "config": config.read_text(), "runner": f"{RUNNER[0]}@{RUNNER[1]}",
            "seconds": round(time.monotonic() - started, 1), "output_tail": output[-4000:]}


def read_report(output: str) -> dict[str, Any]:
    """The runner's closing lines: "Total cases: N", "P passed, F failed", and each "FAILED: name"."""
    total = _TOTAL.search(output)
    not_run = _NOT_RUN.search(output)
    return {"cases": int(total.group(1)) if total else None,
            "passed": int(total.group(2)) if total else None,
            "failed": int(total.group(3)) if total else None,
            "not_run": int(not_run.group(1)) if not_run else 0,
            "failures": _FAILED.findall(output)}
