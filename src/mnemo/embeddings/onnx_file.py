"""The parts of an ONNX model file mnemo reads itself: the weights (initializers) and the nodes of its graph,
and the few it writes back when it rewrites a graph (:mod:`mnemo.embeddings.onnx_int8`).

An ONNX file is one protocol-buffers message (``ModelProto``). Reading the few fields needed here from the wire
format takes a page of standard library instead of the ``onnx`` package, and the weights are read in place:
the file is memory-mapped and each tensor is a NumPy view of its bytes, so opening a 23 MB model touches only
the pages a caller uses.
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mnemo.errors import ConfigError

# Field numbers of onnx.proto (ModelProto.graph / .opset_import, GraphProto.node / .initializer, NodeProto.*,
# TensorProto.*, AttributeProto.*, OperatorSetIdProto.*), and the element types used by the models mnemo reads.
MODEL_GRAPH, MODEL_OPSET_IMPORT = 7, 8
GRAPH_NODE, GRAPH_INITIALIZER = 1, 5
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP_TYPE, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_RAW = 1, 2, 8, 9
_ATTRIBUTE_NAME, _ATTRIBUTE_FLOAT, _ATTRIBUTE_INT, _ATTRIBUTE_TYPE = 1, 2, 3, 20
_ATTRIBUTE_IS_INT = 2  # AttributeProto.AttributeType.INT
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2
_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_}
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


@dataclass(frozen=True)
class Node:
    """One operation of the graph."""

    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, float | int] = field(default_factory=dict)


@dataclass(frozen=True)
class OnnxGraph:
    """An ONNX model's weights by name and its nodes in the file's (topological) order."""

    tensors: dict[str, np.ndarray]
    nodes: tuple[Node, ...]


def read_onnx(path: str | Path) -> OnnxGraph:
    """The weights and nodes of the ONNX model at ``path``; :class:`~mnemo.errors.ConfigError` when it is not one
    this reader understands (weights kept outside the file, or in a layout other than raw bytes)."""
    try:
        data = map_file(path)
        graph = next(value for number, value, _ in message_fields(data) if number == MODEL_GRAPH)
        tensors: dict[str, np.ndarray] = {}
        nodes = []
        for number, value, _ in message_fields(graph):
            if number == GRAPH_NODE:
                nodes.append(read_node(value))
            elif number == GRAPH_INITIALIZER:
                name, tensor = read_tensor(value)
                tensors[name] = tensor
    except (OSError, StopIteration, IndexError, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not an ONNX model this reader understands ({type(exc).__name__}: {exc})") from None
    return OnnxGraph(tensors, tuple(nodes))


def map_file(path: str | Path) -> memoryview:
    """The bytes of the file at ``path``, memory-mapped read-only."""
    with open(path, "rb") as handle:
        return memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


class Field(NamedTuple):
    """One field of a protocol-buffers message: its number, its value (length-delimited values as views,
    varints as ints, fixed-width values as their bytes) and its whole encoding, key included."""

    number: int
    value: memoryview | int
    encoded: memoryview


def message_fields(data: memoryview) -> list[Field]:
    """The fields of one message, in the order they are written."""
    found: list[Field] = []
    at, end = 0, len(data)
    while at < end:
        start = at
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: memoryview | int
        if wire == _VARINT:
            value, at = _varint(data, at)
        elif wire in (_BYTES, _FIXED64, _FIXED32):
            if wire == _BYTES:
                length, at = _varint(data, at)
            else:
                length = 8 if wire == _FIXED64 else 4
            if at + length > end:
                raise ValueError(f"field {number} runs past the end")
            value, at = data[at : at + length], at + length
        else:
            raise ValueError(f"wire type {wire} of field {number}")
        found.append(Field(number, value, data[start:at]))
    return found


def _text(value: memoryview | int) -> str:
    return bytes(value).decode() if isinstance(value, memoryview) else str(value)


def read_node(data: memoryview) -> Node:
    inputs, outputs, op_type, attributes = [], [], "", {}
    for number, value, _ in message_fields(data):
        if number == _NODE_INPUT:
            inputs.append(_text(value))
        elif number == _NODE_OUTPUT:
            outputs.append(_text(value))
        elif number == _NODE_OP_TYPE:
            op_type = _text(value)
        elif number == _NODE_ATTRIBUTE and isinstance(value, memoryview):
            name, scalar = _attribute(value)
            if scalar is not None:
                attributes[name] = scalar
    return Node(op_type, tuple(inputs), tuple(outputs), attributes)


def _attribute(data: memoryview) -> tuple[str, float | int | None]:
    name, scalar = "", None
    for number, value, _ in message_fields(data):
        if number == _ATTRIBUTE_NAME:
            name = _text(value)
        elif number == _ATTRIBUTE_FLOAT and isinstance(value, memoryview):
            scalar = float(np.frombuffer(value, dtype="<f4")[0])
        elif number == _ATTRIBUTE_INT and isinstance(value, int):
            scalar = value - (1 << 64) if value >= 1 << 63 else value  # int64, two's complement
    return name, scalar


def read_tensor(data: memoryview) -> tuple[str, np.ndarray]:
    dims: list[int] = []
    dtype, name, raw = 1, "", None
    for number, value, _ in message_fields(data):
        if number == _TENSOR_DIMS:
            if isinstance(value, int):
                dims.append(value)
            else:  # packed
                at = 0
                while at < len(value):
                    dim, at = _varint(value, at)
                    dims.append(dim)
        elif number == _TENSOR_TYPE and isinstance(value, int):
            dtype = value
        elif number == _TENSOR_NAME:
            name = _text(value)
        elif number == _TENSOR_RAW and isinstance(value, memoryview):
            raw = value
    if raw is None:
        raise ValueError(f"tensor {name!r} has no raw bytes")
    return name, np.frombuffer(raw, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<")).reshape(dims)


# -- writing --------------------------------------------------------------------------------------------


def element_type(dtype: np.dtype | type) -> int:
    """The ``TensorProto`` element type of a NumPy ``dtype`` (one of the types this module reads)."""
    wanted = np.dtype(dtype)
    return next(number for number, known in _DTYPES.items() if np.dtype(known) == wanted)


def encode_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a message, a string, raw bytes), key included."""
    return _encode_varint(number << 3 | _BYTES) + _encode_varint(len(payload)) + payload


def encode_node(
    op_type: str, inputs: Sequence[str], outputs: Sequence[str], attributes: Mapping[str, int], domain: str = ""
) -> bytes:
    """A ``NodeProto`` with integer attributes, named after its first output."""
    return b"".join([
        *(_encode_text(_NODE_INPUT, name) for name in inputs),
        *(_encode_text(_NODE_OUTPUT, name) for name in outputs),
        _encode_text(_NODE_NAME, f"{outputs[0]}_node"),
        _encode_text(_NODE_OP_TYPE, op_type),
        *([_encode_text(_NODE_DOMAIN, domain)] if domain else []),
        *(
            encode_field(_NODE_ATTRIBUTE, _encode_text(_ATTRIBUTE_NAME, name) + _encode_int(_ATTRIBUTE_INT, value)
                         + _encode_int(_ATTRIBUTE_TYPE, _ATTRIBUTE_IS_INT))
            for name, value in attributes.items()
        ),
    ])  # fmt: skip


def encode_tensor(name: str, array: np.ndarray) -> bytes:
    """A ``TensorProto`` holding ``array`` as raw little-endian bytes."""
    dims = b"".join(_encode_int(_TENSOR_DIMS, size) for size in array.shape)
    raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return dims + _encode_int(_TENSOR_TYPE, element_type(array.dtype)) + _encode_text(_TENSOR_NAME, name) + encode_field(
        _TENSOR_RAW, raw
    )


def encode_opset(domain: str, version: int) -> bytes:
    """An ``OperatorSetIdProto``: the operators of ``domain`` at ``version``."""
    return _encode_text(_OPSET_DOMAIN, domain) + _encode_int(_OPSET_VERSION, version)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _encode_int(number: int, value: int) -> bytes:
    return _encode_varint(number << 3 | _VARINT) + _encode_varint(value)


def _encode_text(number: int, text: str) -> bytes:
    return encode_field(number, text.encode("utf-8"))
