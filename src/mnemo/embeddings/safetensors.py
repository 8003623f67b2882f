"""Named arrays in the safetensors format, read in place and written atomically.

The format (Hugging Face's): eight bytes holding the little-endian length of a JSON header, the header, then
the data. The header maps each array's name to its dtype, shape and ``[begin, end)`` byte offsets into the
data, plus an optional ``"__metadata__"`` object of strings. Reading maps the file and returns NumPy views
of its bytes, so opening a large file costs only the pages a caller touches.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._files import atomic_write

_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
_NAMES = {np.dtype(dtype): name for name, dtype in _DTYPES.items()}
_LENGTH = struct.Struct("<Q")
# Far above any header mnemo writes (a few kilobytes); a larger claim means the file is not one.
_MAX_HEADER_BYTES = 16 << 20
_METADATA = "__metadata__"


@dataclass(frozen=True)
class Safetensors:
    """A file's arrays (read-only views of its bytes), its metadata, and the data they view."""

    tensors: dict[str, np.ndarray]
    metadata: dict[str, str]
    data: memoryview


def read_safetensors(path: str | Path) -> Safetensors:
    """The arrays of the file at ``path``, memory-mapped. Raises ``OSError`` when it cannot be read and
    ``ValueError`` when it is not a well-formed safetensors file (cut short, offsets outside the data,
    sizes that disagree with shapes, unknown dtypes)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size < _LENGTH.size:
            raise ValueError(f"{size} bytes is too short for a safetensors file")
        raw = memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
    (length,) = _LENGTH.unpack(raw[: _LENGTH.size])
    if length > min(_MAX_HEADER_BYTES, size - _LENGTH.size):
        raise ValueError(f"a header of {length} bytes does not fit a file of {size}")
    try:
        header = json.loads(bytes(raw[_LENGTH.size : _LENGTH.size + length]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    metadata = header.pop(_METADATA, {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError("the metadata is not an object of strings")
    data = raw[_LENGTH.size + length :]
    return Safetensors({name: _view(name, entry, data) for name, entry in header.items()}, metadata, data)


def write_safetensors(path: Path, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None) -> None:
    """Write ``tensors`` (and string ``metadata``) to ``path`` atomically and durably
    (:func:`mnemo._files.atomic_write`), the data laid out as :func:`data_chunks` gives it."""
    header: dict[str, object] = {_METADATA: dict(metadata)} if metadata else {}
    chunks = data_chunks(tensors)
    at = 0
    for name, chunk in zip(_order(tensors), chunks, strict=True):
        array = tensors[name]
        header[name] = {
            "dtype": _NAMES[array.dtype.newbyteorder("<")],
            "shape": list(array.shape),
            "data_offsets": [at, at + len(chunk)],
        }
        at += len(chunk)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-aligned, as the format recommends
    atomic_write(path, _LENGTH.pack(len(encoded)), encoded, *chunks)


def data_chunks(tensors: Mapping[str, np.ndarray]) -> list[memoryview]:
    """The bytes of ``tensors`` in the order a file written by :func:`write_safetensors` holds them (what
    :attr:`Safetensors.data` reads back): widest dtype first, so each array starts at a multiple of its own
    item size and a reader's views are aligned; little-endian. ``ValueError`` for a dtype the format lacks."""
    unknown = sorted({str(a.dtype) for a in tensors.values() if a.dtype.newbyteorder("<") not in _NAMES})
    if unknown:
        raise ValueError(f"dtypes safetensors cannot hold: {', '.join(unknown)}")
    return [
        memoryview(np.ascontiguousarray(tensors[name], dtype=tensors[name].dtype.newbyteorder("<"))).cast("B")
        for name in _order(tensors)
    ]


def _order(tensors: Mapping[str, np.ndarray]) -> list[str]:
    return sorted(tensors, key=lambda name: -tensors[name].dtype.itemsize)


def _view(name: str, entry: object, data: memoryview) -> np.ndarray:
    if not isinstance(entry, dict):
        raise ValueError(f"the entry of {name!r} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in _DTYPES:
        raise ValueError(f"{name!r} has an unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError(f"{name!r} has a malformed shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(n, int) for n in offsets)):
        raise ValueError(f"{name!r} has malformed offsets {offsets!r}")
    begin, end = offsets
    item = np.dtype(_DTYPES[dtype]).newbyteorder("<")
    if not 0 <= begin <= end <= len(data) or end - begin != math.prod(shape) * item.itemsize:
        raise ValueError(f"{name!r} at bytes {begin}..{end} does not fit its shape or the data")
    return np.frombuffer(data[begin:end], dtype=item).reshape(shape)
