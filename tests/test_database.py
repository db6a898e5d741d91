"""Where the suite's database keeps its files: in memory (lab/settings.py testing()),
natively and in Docker mode, so a contended host disk cannot stall the tests; and
the tests' seeded data, loaded again whenever a test changed it."""

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


def test_seeded_data_is_loaded_again_whenever_a_test_changed_it(seeding, seeded, fingerprint):
    """`seeded` skips its reset only while the collection holds exactly what the last one
    left: a changed, added or removed document, or a dropped index, brings the reset back."""
    games = seeded
    assert not seeding.seed(games), "nothing changed, yet the collection was reset"
    intact = fingerprint()
    first = seeding.store.games.find_one({}, sort=[("_id", 1)])
    changes = [
        lambda c: c.update_one({"_id": first["_id"]}, {"$set": {"name": first["name"] + " "}}),
        lambda c: c.insert_one({"_id": "added", "name": "x"}),
        lambda c: c.delete_one({"_id": first["_id"]}),
        lambda c: c.drop_index(sorted(k for k in c.index_information() if k != "_id_")[0]),
    ]
    for change in changes:
        change(seeding.store.games)
        assert seeding.seed(games)
        assert fingerprint() == intact
        assert not seeding.seed(games)
    assert seeding.seed(games[:10]) and seeding.store.games.count_documents({}) == 10, "other games asked for"
