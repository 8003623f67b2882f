"""Temp files of whole-file writes: a killed writer's partial copy is removed by the next writer of the same
target (or reported by ``mnemo doctor``), and a live writer's is never touched, however old it looks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo._files import STALE_SECONDS, remove_stale_temp_files, stale_temp_files, temp_files

SIZE = 24_000_000  # as large as the model weights a killed conversion leaves

# Writes SIZE bytes to argv[1] and pauses once they are in its temp file, before the rename, until argv[2]
# exists: the parent kills it there, or lets it finish.
_WRITER = f"""
import os, sys, time
from pathlib import Path
from mnemo._files import atomic_write
real_fsync = os.fsync
def pause(fd):
    if os.readlink(f"/proc/self/fd/{{fd}}").endswith(".tmp"):
        print("writing", flush=True)
        while not Path(sys.argv[2]).exists():
            time.sleep(0.01)
    real_fsync(fd)
os.fsync = pause
atomic_write(Path(sys.argv[1]), b"w" * {SIZE})
"""


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    """A process paused in the middle of writing ``tmp_path/weights.bin``, its temp file, and the file whose
    creation lets it finish."""
    target, go = tmp_path / "weights.bin", tmp_path / "go"
    process = subprocess.Popen([sys.executable, "-c", _WRITER, str(target), str(go)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "writing"
        (temp,) = temp_files(target)
        yield process, temp, go
    finally:
        process.kill()
        process.wait()


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_killed_writers_temp_file_is_removed_by_the_next_writer_once_stale(writer) -> None:
    process, temp, _ = writer
    process.send_signal(signal.SIGKILL)
    process.wait()
    target = temp.parent / "weights.bin"
    assert temp.stat().st_size == SIZE and not target.exists()
    assert remove_stale_temp_files(target) == []  # too young to tell from a writer's first instant
    _age(temp, STALE_SECONDS + 1)
    assert stale_temp_files(temp.parent) == [temp]
    assert remove_stale_temp_files(target) == [temp]
    assert not temp.exists()


def test_a_writer_holding_the_targets_own_lock_removes_a_killed_writers_temp_file_at_once(writer) -> None:
    process, temp, _ = writer
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert remove_stale_temp_files(temp.parent / "weights.bin", 0) == [temp]


def test_a_live_writers_temp_file_is_never_removed_however_old(writer) -> None:
    process, temp, go = writer
    _age(temp, 86_400)
    target = temp.parent / "weights.bin"
    assert remove_stale_temp_files(target, 0) == []
    assert stale_temp_files(temp.parent) == []
    go.touch()
    assert process.wait(timeout=60) == 0
    assert target.stat().st_size == SIZE and temp_files(target) == []


def test_only_the_targets_temp_files_are_touched(tmp_path: Path) -> None:
    others = [tmp_path / ".other.bin.k3j4h5g6.tmp", tmp_path / ".mem_k3j4h5g6.tmp", tmp_path / "weights.bin.123.tmp"]
    for path in others:
        path.write_bytes(b"someone else's")
        _age(path, 86_400)
    assert remove_stale_temp_files(tmp_path / "weights.bin", 0) == []
    assert all(path.exists() for path in others)
