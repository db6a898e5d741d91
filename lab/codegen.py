"""Regenerate the code generated from the contract (committed; tests check it is current).

Run: python -m lab.codegen

Each protocol whose descriptor names a `codegen` hook (clients/<protocol>/codegen.py)
regenerates its own files; the lab passes it lab.host.tools.go_install, which builds
a pinned Go tool (protoc's Go plugins) once into the lab's cache. A build tool of the
lab, not part of the contract: the contract imports nothing.
"""

from __future__ import annotations

import sys

from clients.protocols import PROTOCOLS
from lab.host.tools import go_install
from lab.settings import ROOT


def main() -> int:
    for protocol in PROTOCOLS.values():
        if protocol.codegen:
            for path in protocol.codegen_function()(go_install):
                print(f"{protocol.name}: wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
