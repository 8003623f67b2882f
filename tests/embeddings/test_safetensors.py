"""Safetensors files: what is written is read back in place, and a malformed file is refused by name."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from mnemo.embeddings.safetensors import data_chunks, read_safetensors, write_safetensors


def _arrays() -> dict[str, np.ndarray]:
    return {
        "bytes": np.arange(-5, 6, dtype=np.int8),
        "matrix": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
        "scalar": np.asarray(1e-12, dtype=np.float32),
        "ids": np.array([1, 2**40], dtype=np.int64),
    }


def test_arrays_and_metadata_come_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    write_safetensors(path, _arrays(), {"note": "kept"})
    stored = read_safetensors(path)
    assert stored.metadata == {"note": "kept"}
    for name, array in _arrays().items():
        assert stored.tensors[name].dtype == array.dtype and stored.tensors[name].shape == array.shape
        assert np.array_equal(stored.tensors[name], array)


def test_the_data_is_what_data_chunks_gives_and_every_array_is_aligned(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    write_safetensors(path, _arrays())
    stored = read_safetensors(path)
    assert bytes(stored.data) == b"".join(data_chunks(_arrays()))
    assert all(array.ctypes.data % array.dtype.itemsize == 0 for array in stored.tensors.values())


def test_the_read_arrays_are_read_only_views(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    write_safetensors(path, _arrays())
    matrix = read_safetensors(path).tensors["matrix"]
    with pytest.raises(ValueError, match="read-only"):
        matrix[0, 0] = 1.0


def test_the_header_follows_the_format(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    write_safetensors(path, {"x": np.ones((2, 3), dtype=np.float32)}, {"k": "v"})
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    assert (8 + length) % 8 == 0
    assert header == {"__metadata__": {"k": "v"}, "x": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}


def test_a_dtype_the_format_lacks_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    with pytest.raises(ValueError, match="complex64"):
        write_safetensors(path, {"z": np.zeros(2, dtype=np.complex64)})
    assert list(tmp_path.iterdir()) == []


def _with_header(tmp_path: Path, header: object, data: bytes = b"\0" * 16) -> Path:
    encoded = json.dumps(header).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)
    return path


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ([1, 2], "not a JSON object"),
        ({"x": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}, "unknown dtype"),
        ({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, "malformed shape"),
        ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, "malformed offsets"),
        ({"x": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, "does not fit"),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, "does not fit"),
        ({"__metadata__": {"k": 1}}, "metadata"),
    ],
)
def test_a_malformed_header_is_a_value_error_naming_the_problem(tmp_path: Path, header: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        read_safetensors(_with_header(tmp_path, header))


@pytest.mark.parametrize(
    "content", [b"", b"\x05", struct.pack("<Q", 1 << 40) + b"{}", struct.pack("<Q", 2) + b"\xff\xfe"]
)
def test_a_file_cut_short_or_not_json_is_a_value_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError):
        read_safetensors(path)
