"""The vector file format: whole writes, appends that never duplicate or go back, erasing, and status."""

from __future__ import annotations

import signal
import subprocess
import sys

import numpy as np
import pytest

from mnemo.embeddings.vector_file import (
    MappedVectors,
    VectorFileError,
    append_rows,
    erase_rows,
    first_mismatch,
    locked,
    make_rows,
    row_is_intact,
    vector_file_status,
    write_file,
)

KEY, DIM = "test\x1fpartition", 4


def _rows(*seqs: int) -> np.ndarray:
    return make_rows(DIM, [(s, f"owner-{s}", np.full(DIM, s / 10, np.float32).tobytes()) for s in seqs])


@pytest.fixture
def path(tmp_path):
    target = tmp_path / "test.vec"
    write_file(target, KEY, DIM, _rows(1, 2, 3), cursor=5)
    return target


def test_a_written_file_maps_back_its_rows_and_cursor(path):
    mapped = MappedVectors.open(path, KEY, DIM)
    assert list(mapped.rows["seq"]) == [1, 2, 3] and mapped.header.cursor == 5
    assert all(row_is_intact(row) for row in mapped.rows)


def test_append_adds_only_rows_above_the_file_cursor(path):
    header = append_rows(path, KEY, DIM, _rows(4, 6, 7), cursor=9, known_cursor=5)
    assert (header.count, header.cursor, header.generation) == (5, 9, 2)
    assert list(MappedVectors.open(path, KEY, DIM).rows["seq"]) == [1, 2, 3, 6, 7]


def test_append_refuses_a_file_whose_cursor_is_behind_what_the_caller_saw(path):
    with pytest.raises(VectorFileError, match="went back"):
        append_rows(path, KEY, DIM, _rows(8), cursor=9, known_cursor=7)


def test_a_file_of_another_partition_is_refused(path):
    with pytest.raises(VectorFileError, match="expected"):
        MappedVectors.open(path, "other\x1fpartition", DIM)


def test_erasing_zeroes_the_rows_and_keeps_them_in_order(path):
    assert erase_rows(path, KEY, DIM, [2, 99]) == 1
    rows = MappedVectors.open(path, KEY, DIM).rows
    assert list(rows["seq"]) == [1, 2, 3] and not rows[1]["vector"].any() and row_is_intact(rows[1])
    status = vector_file_status(path)
    assert (status.state, status.rows, status.erased) == ("ok", 3, 1)


def test_status_finds_a_row_whose_checksum_fails(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    status = vector_file_status(path)
    assert status.state == "damaged" and "checksum" in status.problem


# Rewrites argv[1] whole with many rows under its writer lock, pausing once they are in the temp file: the
# parent kills it there.
_KILLED_WRITER = f"""
import os, sys
from pathlib import Path
import numpy as np
from mnemo.embeddings.vector_file import locked, make_rows, write_file
real_fsync = os.fsync
def pause(fd):
    if os.readlink(f"/proc/self/fd/{{fd}}").endswith(".tmp"):
        print("writing", flush=True)
        sys.stdin.read()
    real_fsync(fd)
os.fsync = pause
rows = make_rows({DIM}, [(s, f"owner-{{s}}", np.zeros({DIM}, np.float32).tobytes()) for s in range(1, 200_001)])
with locked(Path(sys.argv[1]), 10):
    write_file(Path(sys.argv[1]), {KEY!r}, {DIM}, rows, cursor=200_000)
"""


def test_a_writer_killed_mid_rewrite_leaves_a_temp_file_the_next_writer_removes(path):
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    (orphan,) = path.parent.glob(".test.vec.*.tmp")
    assert orphan.stat().st_size > 5_000_000
    with locked(path, 10):
        append_rows(path, KEY, DIM, _rows(6), cursor=6, known_cursor=5)
    assert not orphan.exists()
    assert list(MappedVectors.open(path, KEY, DIM).rows["seq"]) == [1, 2, 3, 6]


def test_a_temp_file_named_by_an_older_writers_pid_is_removed_by_the_next_writer(path):
    old = path.with_name(f"{path.name}.4242.tmp")
    old.write_bytes(b"\0" * 4096)
    with locked(path, 10):
        pass
    assert not old.exists() and path.exists()


def test_rows_that_match_their_checksums_and_owners_have_no_mismatch():
    rows = _rows(1, 2, 3, 4)
    assert first_mismatch(rows, [3, 0, 2], ["owner-4", "owner-1", "owner-3"]) is None
    assert first_mismatch(rows, [], []) is None


def test_a_row_whose_vector_changed_is_the_first_mismatch():
    rows = _rows(1, 2, 3, 4)
    rows[2]["vector"][1] += 1.0  # the checksum still says what the row held before
    assert first_mismatch(rows, [0, 2, 3], ["owner-1", "owner-3", "owner-4"]) == 2


def test_a_row_of_another_owner_is_a_mismatch():
    rows = _rows(1, 2, 3)
    assert first_mismatch(rows, [0, 1, 2], ["owner-1", "owner-7", "owner-3"]) == 1

