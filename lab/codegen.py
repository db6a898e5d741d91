"""Regenerate the code generated from the contract (committed; tests check it is current).
A build tool of the lab, not part of the contract: it builds protoc's Go plugins
with lab.host.tools, and the contract imports nothing.

Run: python -m lab.codegen (the WSDL: python -m services.soap.python_spyne.wsdl)

- Python: contract/games_pb2.py and games_pb2_grpc.py (grpcio-tools' protoc).
- Go: services/common/go/gamespb/ (the same protoc with protoc-gen-go and
  protoc-gen-go-grpc, built at pinned versions with `go install` into the
  lab's cache) and the gqlgen code of services/graphql/go_gqlgen from
  contract/schema.graphql (`go tool gqlgen`, pinned in services/go.mod).
  Skipped, with a line saying so, where Go is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

from lab.host.tools import go_install
from lab.settings import ROOT

GENERATED = ("games_pb2.py", "games_pb2_grpc.py")

GO_PACKAGE = "protolab/services/common/go/gamespb"
GO_DIR = ROOT / "services" / "common" / "go" / "gamespb"
GO_GENERATED = ("games.pb.go", "games_grpc.pb.go")
GO_PLUGINS = {  # binary: (module, version); protoc-gen-go matches google.golang.org/protobuf in go.mod
    "protoc-gen-go": ("google.golang.org/protobuf/cmd/protoc-gen-go", "v1.36.12"),
    "protoc-gen-go-grpc": ("google.golang.org/grpc/cmd/protoc-gen-go-grpc", "v1.6.2"),
}
GQLGEN_DIR = ROOT / "services" / "graphql" / "go_gqlgen"  # its gqlgen.yml


def generate(out_dir: Path) -> dict[str, str]:
    """Run protoc into out_dir; return {file name: text}."""
    status = protoc.main([
        "grpc_tools.protoc", f"-I{ROOT}", f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}", str(ROOT / "contract" / "games.proto"),
    ])
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status}")
    return {name: (out_dir / "contract" / name).read_text() for name in GENERATED}


def generate_go(out_dir: Path) -> dict[str, str]:
    """Run protoc with the Go plugins into out_dir; return {file name: text}."""
    plugins = {name: go_install(module, version, name) for name, (module, version) in GO_PLUGINS.items()}
    mapping = f"Mcontract/games.proto={GO_PACKAGE}"
    status = protoc.main([
        "grpc_tools.protoc", f"-I{ROOT}",
        *(f"--plugin={name}={path}" for name, path in plugins.items()),
        f"--go_out={out_dir}", "--go_opt=paths=source_relative", f"--go_opt={mapping}",
        f"--go-grpc_out={out_dir}", "--go-grpc_opt=paths=source_relative", f"--go-grpc_opt={mapping}",
        str(ROOT / "contract" / "games.proto"),
    ])
    if status != 0:
        raise RuntimeError(f"protoc (Go) failed with status {status}")
    return {name: (out_dir / "contract" / name).read_text() for name in GO_GENERATED}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in generate(Path(tmp)).items():
            (ROOT / "contract" / name).write_text(text)
    if shutil.which("go") is None:
        print("lab.codegen: Go not installed; the Go code was not regenerated", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        GO_DIR.mkdir(parents=True, exist_ok=True)
        for name, text in generate_go(Path(tmp)).items():
            (GO_DIR / name).write_text(text)
    subprocess.run(["go", "tool", "gqlgen", "generate"], cwd=GQLGEN_DIR, check=True, timeout=600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
