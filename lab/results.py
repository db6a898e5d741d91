"""The one results format: every instrument writes through `write`, the report
reads through `read`.

A result file is one JSON object:

    {"schema": "protolab.<kind>/<version>", "context": {...}, <the kind's data>}

`schema` says which kind of result it is and which version of that kind's
layout; `context` is what `lab.context` says about the run (date, commit,
machine, and for a run of the lab its mode, database and implementations);
the rest is the kind's data, at the top level so that readers index it as
they always did (`run["results"]`). `lab/schemas/<kind>.schema.json` describes
each kind (docs/results.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from lab import settings

SCHEMAS = Path(__file__).parent / "schemas"

# kind: the version `write` writes (and the newest `read` accepts). A change to a
# kind's layout that an older reader would misread bumps its version here and in
# its schema file.
KINDS: dict[str, int] = {
    "latency": 1,       # benchmarks/conftest.py: results/benchmarks/<mode>-*.json
    "load": 1,          # python -m load (sweep): results/load/sweep-*.json
    "crosscheck": 1,    # python -m load.crosscheck: results/load/crosscheck-*.json
    "feathers": 1,      # python -m studies feathers: results/load/feathers-*.json
    "fernando": 1,      # python -m studies fernando: results/load/fernando-*.json
    "push": 1,          # python -m studies push: results/load/push-*.json
    "capture": 1,       # python -m capture: results/capture/wire.json, wire-netns.json
    "push-capture": 1,  # python -m capture.push: results/capture/push-*.json
    "runs": 1,          # python -m lab.stats.runs: results/runs-*.json
    "faults": 1,        # tests/test_faults.py: results/faults/<test>.json
    "fuzz": 1,          # tests/test_fuzz.py: results/fuzz/latest.json, latest-test.json
    "cpus": 1,          # python -m benchmarks.cpus: results/cpus-*.json
    "study": 1,         # python -m benchmarks.study: results/study-*.json
    "executions": 1,    # python -m benchmarks.executions: results/executions-*.json
    "memory-reducer": 1,  # python -m benchmarks.memory_reducer: results/memory-reducer-*.json
    "handshake": 1,     # python -m benchmarks.handshake: results/handshake-*.json
    "sweep": 1,         # python -m sweep: results/sweep/latest.json, sweep-*.json
    "conformance": 1,   # make conformance (tests/test_connect_conformance.py): results/conformance/<impl>-*.json
    "connection-setup": 1,  # python -m benchmarks.connection_setup: results/setup/connection-setup-*.json
    "reference": 1,     # make reference (python -m report.reference): docs/reference/results/<stage>.json
    "reference-index": 1,  # make reference: docs/reference/index.json (every file's SHA-256)
}

_NAME = re.compile(r"^protolab\.(?P<kind>[a-z0-9-]+)/(?P<version>[0-9]+)$")


class ResultError(ValueError):
    """A file that is not a result this lab can read (the message names the file)."""


def schema_name(kind: str) -> str:
    if kind not in KINDS:
        raise ResultError(f"unknown result kind {kind!r}; known: {', '.join(KINDS)}")
    return f"protolab.{kind}/{KINDS[kind]}"


def stamp(context: Mapping[str, Any]) -> str:
    """The date in a file name: 2026-12-02T061500Z (from the context's ISO date)."""
    return str(context["date"]).replace(":", "").replace("+0000", "Z")


def document(kind: str, context: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """The file's content: the envelope, then the data."""
    clash = {"schema", "context"} & set(data)
    if clash:
        raise ResultError(f"a {kind} result's data may not hold {', '.join(sorted(clash))}: the envelope's")
    if "date" not in context:
        raise ResultError(f"a {kind} result's context has no date (lab.context writes one)")
    return {"schema": schema_name(kind), "context": dict(context), **data}


def write(kind: str, name: str, context: Mapping[str, Any], data: Mapping[str, Any],
          directory: Path | None = None, *, latest: bool = True, stamped: bool = True) -> Path:
    """Write results/<directory>/<name>-<stamp>.json and <name>-latest.json; return the stamped path.

    `directory`: default results/. `latest=False`: only the stamped file (a partial
    run must not replace the complete one readers take). `stamped=False`: one file,
    <name>.json (the instruments whose readers know a fixed name: wire.json, faults)."""
    directory = Path(directory) if directory is not None else settings.RESULTS
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document(kind, context, data), indent=1) + "\n"
    if not stamped:
        path = directory / f"{name}.json"
        path.write_text(text)
        return path
    path = directory / f"{name}-{stamp(context)}.json"
    path.write_text(text)
    if latest:
        (directory / f"{name}-latest.json").write_text(text)
    return path


def kind_of(data: Any, where: object = "result") -> tuple[str, int]:
    """(kind, version) from a result's `schema`, or a ResultError saying why not."""
    name = data.get("schema") if isinstance(data, dict) else None
    if name is None:
        raise ResultError(f"{where}: no \"schema\" member, so not a protolab result "
                          "(written before the results format, or by something else)")
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise ResultError(f"{where}: schema {name!r} is not a protolab result name (protolab.<kind>/<version>)")
    kind, version = match["kind"], int(match["version"])
    if kind not in KINDS:
        raise ResultError(f"{where}: unknown result kind {kind!r} (schema {name!r}); this lab reads "
                          f"{', '.join(KINDS)}")
    if version > KINDS[kind]:
        raise ResultError(f"{where}: {name!r} is newer than this lab reads (protolab.{kind}/{KINDS[kind]}); "
                          "update the lab")
    return kind, version


def read(path: Path, kind: str | None = None) -> dict[str, Any]:
    """A result file's content, after checking its schema name and version
    (and, with `kind`, that it is that kind). OSError when it cannot be read;
    ResultError (a ValueError) when it is not JSON or not a result this lab reads."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise ResultError(f"{path}: not JSON ({exc})") from exc
    found, _ = kind_of(data, path)
    if kind is not None and found != kind:
        raise ResultError(f"{path}: a {found} result where a {kind} result was expected")
    return data


@cache
def _registry() -> Any:
    from referencing import Registry, Resource

    resources = [Resource.from_contents(json.loads(p.read_text())) for p in sorted(SCHEMAS.glob("*.schema.json"))]
    return Registry().with_resources((r.id(), r) for r in resources)


def schema_id(kind: str) -> str:
    return f"urn:protolab:result:{kind}"


def validate(path: Path) -> dict[str, Any]:
    """Read `path` and check it against its kind's JSON Schema (lab/schemas/);
    ResultError naming the file, the place in it and what is wrong."""
    import jsonschema

    data = read(path)
    kind, _ = kind_of(data, path)
    registry = _registry()
    schema = registry.contents(schema_id(kind))
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top)"
        raise ResultError(f"{path}: not a valid {data['schema']} result at {where}: {first.message[:300]}"
                          + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
    return data
