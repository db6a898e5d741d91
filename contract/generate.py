"""Regenerate the Python code for games.proto (committed; a test checks it is current).

Run: python -m contract.generate
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ("games_pb2.py", "games_pb2_grpc.py")


def generate(out_dir: Path) -> dict[str, str]:
    """Run protoc into out_dir; return {file name: text}."""
    status = protoc.main([
        "grpc_tools.protoc", f"-I{ROOT}", f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}", str(ROOT / "contract" / "games.proto"),
    ])
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status}")
    return {name: (out_dir / "contract" / name).read_text() for name in GENERATED}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in generate(Path(tmp)).items():
            (ROOT / "contract" / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
