"""The vector file format: whole writes, appends that never duplicate or go back, erasing, and status."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo.embeddings.vector_file import (
    MappedVectors,
    VectorFileError,
    append_rows,
    erase_rows,
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
