"""Where the suite's database keeps its files: in memory (lab/settings.py testing()),
natively and in Docker mode, so a contended host disk cannot stall the tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab import settings


def filesystem_of(pid: int, path: str) -> str:
    """The type of the file system holding `path` as process `pid` sees it (its own
    mount namespace: a container's process sees the container's mounts)."""
    best, kind = "", ""
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        mount_point, fs_type = fields[4], fields[fields.index("-") + 1]
        inside = path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, kind = mount_point, fs_type
    return kind


def test_filesystem_of_names_the_innermost_mount():
    me = os.getpid()
    assert filesystem_of(me, "/proc/self") == "proc"
    assert filesystem_of(me, "/proc") == "proc"
    assert filesystem_of(me, "/") != "proc"
    if settings.MEMORY_DIR.is_dir():
        assert filesystem_of(me, str(settings.MEMORY_DIR / "x")) == "tmpfs"


def test_the_suites_database_keeps_its_files_in_memory(lab):
    if lab.database.pid is None:
        pytest.skip("MONGODB_URI: the lab did not start the database")
    argv = Path(f"/proc/{lab.database.pid}/cmdline").read_bytes().decode().split("\0")
    storage = argv[argv.index("--storage-path") + 1]
    assert filesystem_of(lab.database.pid, storage) == "tmpfs", (storage, lab.mode)
    assert "in memory" in lab.database.durability
