"""Points 10 and 12 (orphans): atomic durable writes, symlinks written through, crash safety."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemo import Add, MemoryStore, MemoryWriteFailed
from mnemo.curated.entries import parse_entries

from .conftest import loaded, seed


def _temp_files(directory: Path) -> list[Path]:
    return sorted(directory.glob(".*.tmp"))


def test_write_goes_temp_fsync_rename_fsync_directory(memories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def observed_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def observed_replace(src: str, dst: str) -> None:
        events.append(("replace", f"{Path(src).name} -> {Path(dst).name}"))
        real_replace(src, dst)

    store = loaded(memories)
    store.apply("memory", Add("first"))  # the history file exists from now on
    monkeypatch.setattr(os, "fsync", observed_fsync)
    monkeypatch.setattr(os, "replace", observed_replace)
    store.apply("memory", Add("durable"))

    history = ("fsync", str(store.history.path.resolve()))
    assert events[0] == history  # the history record is durable before the file changes
    del events[0]
    (fsync_temp, temp_path), (rename, names), (fsync_dir, dir_path) = events
    assert (fsync_temp, rename, fsync_dir) == ("fsync", "replace", "fsync")
    temp = Path(temp_path)
    assert temp.parent == memories.resolve() and temp.name.startswith(".MEMORY.md.")
    assert names == f"{temp.name} -> MEMORY.md"
    assert Path(dir_path) == memories.resolve()


def test_symlinked_file_is_written_through_to_its_target(memories: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "dotfiles"
    elsewhere.mkdir()
    real = seed(elsewhere, "memory", "from dotfiles")
    (memories / "MEMORY.md").symlink_to(real)

    loaded(memories).apply("memory", Add("new note"))

    assert (memories / "MEMORY.md").is_symlink()
    assert real.read_text(encoding="utf-8") == "from dotfiles\n§\nnew note"
    assert _temp_files(memories) == [] and _temp_files(elsewhere) == []


def test_existing_file_permissions_are_kept(memories: Path) -> None:
    path = seed(memories, "memory", "a")
    path.chmod(0o640)
    loaded(memories).apply("memory", Add("b"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_new_files_are_private(file_store: MemoryStore, memories: Path) -> None:
    file_store.apply("user", Add("name is Ada"))
    assert stat.S_IMODE((memories / "USER.md").stat().st_mode) == 0o600


def test_orphaned_temp_files_are_cleaned_up_by_the_next_write(memories: Path) -> None:
    seed(memories, "memory", "a")
    for token in ("abc123", "zz9"):
        (memories / f".MEMORY.md.{token}.tmp").write_text("half-written")
    loaded(memories).apply("memory", Add("b"))
    assert _temp_files(memories) == []
    assert (memories / "MEMORY.md").read_text(encoding="utf-8") == "a\n§\nb"


_FAILING_WRITER = """
import resource, signal, sys
from mnemo import Add, MemoryStore, MemoryWriteFailed
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
store = MemoryStore(sys.argv[1], memory_char_limit=100_000)
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
try:
    store.apply("memory", Add("y" * 500))
except MemoryWriteFailed as exc:
    print(type(exc).__name__, exc.path)
"""


def test_a_write_that_cannot_be_persisted_is_an_error_and_leaves_the_old_file(memories: Path) -> None:
    path = seed(memories, "memory", "old entry")
    result = subprocess.run(
        [sys.executable, "-c", _FAILING_WRITER, str(memories)], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == [MemoryWriteFailed.__name__, str(path)], result.stderr
    assert path.read_text(encoding="utf-8") == "old entry"
    assert _temp_files(memories) == []


_STREAMING_WRITER = """
import sys
from mnemo import Add, MemoryStore
store = MemoryStore(sys.argv[1], memory_char_limit=10_000_000)
store.load()
start = len(store.entries("memory"))
for i in range(start, start + 100_000):
    store.apply("memory", Add(f"entry {i:06d} " + "x" * 200))
"""


def test_a_writer_killed_mid_stream_always_leaves_a_parseable_prefix(memories: Path) -> None:
    path = memories / "MEMORY.md"
    rng = random.Random(7)
    for _round in range(6):
        before = len(parse_entries(path.read_text(encoding="utf-8"))) if path.exists() else 0
        writer = subprocess.Popen([sys.executable, "-c", _STREAMING_WRITER, str(memories)])
        wanted = before + rng.randint(1, 20)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and len(parse_entries(path.read_text(encoding="utf-8"))) >= wanted:
                break
            time.sleep(0.002)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)

        entries = parse_entries(path.read_bytes().decode("utf-8"))
        assert len(entries) >= wanted
        assert entries == [f"entry {i:06d} " + "x" * 200 for i in range(len(entries))]
        assert len(_temp_files(memories)) <= 1


def test_a_store_whose_directory_cannot_be_created_refuses_writes_with_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "memories"
    blocker.write_text("a regular file where the directory should be")
    store = MemoryStore(blocker)
    store.load()
    with pytest.raises(MemoryWriteFailed):
        store.apply("memory", Add("x"))
    assert blocker.read_text() == "a regular file where the directory should be"
