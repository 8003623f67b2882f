"""An int8 ONNX export rewritten so that onnxruntime multiplies in int8, for query embeddings.

The int8 MiniLM stores each weight matrix as int8 values and a scale per column, turned into float32 by a
``Cast`` and a ``Mul`` in the graph. onnxruntime folds those into float32 constants when it builds a
session, so every call multiplies in float32, by 42 MB of weights.

:func:`int8_products` replaces each such chain with onnxruntime's ``MatMulNBits`` operator (8-bit weights,
one scale per block of ``block_size`` values, which here repeats the column's scale): the weights stay int8
(11 MB), and with ``accuracy_level`` 4 the activations are quantized per block too, so the products run on
integer kernels. A query then takes 10-20% less wall time and 15-25% less CPU, at every length
(``bench/embeddings.py``, table 3a'). The result is not the exported graph's arithmetic: the vectors of the
e2e bench's 200 queries keep a cosine of at least 0.9997 to it (mean 0.9999), one-word queries at least
0.999. That is why only queries use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mnemo.embeddings.onnx_file import (
    GRAPH_INITIALIZER,
    GRAPH_NODE,
    MODEL_GRAPH,
    Node,
    map_file,
    message_fields,
    read_node,
    read_tensor,
)

# Blocks of 16 values. Blocks of 32 took 10% less time per query but fell to a cosine of 0.9996 (one word:
# 0.998), and per-turn context then missed evidence for one more BEAM dev question (of 179) and one more
# LoCoMo dev question (of 760); with blocks of 16 it found the same as the exact graph on both.
BLOCK_SIZE = 16
# MatMulNBits quantizes the activations per block and multiplies in int8 from this level on.
_INT8_ACCURACY = 4
_MODEL_OPSET_IMPORT = 8
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP_TYPE, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_ATTRIBUTE_NAME, _ATTRIBUTE_INT, _ATTRIBUTE_TYPE, _ATTRIBUTE_TYPE_INT = 1, 3, 20, 2
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_RAW = 1, 2, 8, 9
_TENSOR_FLOAT, _TENSOR_UINT8 = 1, 2
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2
_VARINT, _BYTES = 0, 2
_MICROSOFT = "com.microsoft"


def int8_lookups(path: str | Path) -> bytes | None:
    """The ONNX model at ``path`` with every lookup into a dequantized int8 table (a ``Gather`` of its rows)
    done in the int8 table, the rows found then scaled: the same numbers, without the float32 copy of the
    table that onnxruntime would otherwise fold and keep (47 MB for MiniLM's word embeddings). ``None`` when
    it has no such lookup. Raises ``ValueError`` (and the reader's errors) for a file it cannot rewrite."""
    return _rewrite(path, None)


def int8_products(path: str | Path, block_size: int = BLOCK_SIZE) -> bytes | None:
    """:func:`int8_lookups`' model with, also, every product by a dequantized int8 weight done by
    ``MatMulNBits`` in blocks of ``block_size``; ``None`` when there is nothing to rewrite."""
    return _rewrite(path, block_size)


class _Dequantized:
    """A value the graph computes as ``Cast(int8 initializer) * scale initializer``, read by ``reader`` alone."""

    def __init__(self, cast: Node, scaling: Node, weight: str, scale: str, reader: Node) -> None:
        self.cast, self.scaling, self.weight, self.scale, self.reader = cast, scaling, weight, scale, reader
        self.value = scaling.outputs[0]


def _rewrite(path: str | Path, block_size: int | None) -> bytes | None:
    model = message_fields(map_file(path))
    graph = message_fields(next(field.value for field in model if field.number == MODEL_GRAPH))  # type: ignore[arg-type]
    nodes = [read_node(field.value) for field in graph if field.number == GRAPH_NODE]  # type: ignore[arg-type]
    tensors = dict(read_tensor(field.value) for field in graph if field.number == GRAPH_INITIALIZER)  # type: ignore[arg-type]
    taken = set(tensors) | {name for node in nodes for name in node.outputs}
    replaced: dict[int, list[bytes]] = {}
    dropped_nodes: set[int] = set()
    dropped_tensors: set[str] = set()
    added: list[bytes] = []
    for found in _dequantized(nodes, tensors):
        weight, scale, reader = tensors[found.weight], tensors[found.scale], found.reader
        if reader.op_type == "Gather" and reader.inputs[0] == found.value and reader.attributes.get("axis", 0) == 0:
            if scale.shape != (weight.shape[0], 1):
                continue
            replaced[id(reader)] = _lookup_nodes(found, _fresh(taken, found.value, 3))
        elif reader.op_type == "MatMul" and reader.inputs[1:] == (found.value,) and block_size is not None:
            k, n = weight.shape
            if k % block_size or scale.size != n or scale.shape[-1] != n:
                continue
            weights_name, scales_name = _fresh(taken, found.value, 2)
            stored, scales = _blocks(weight, scale, block_size)
            added += [_tensor(weights_name, stored, _TENSOR_UINT8), _tensor(scales_name, scales, _TENSOR_FLOAT)]
            attributes = {"K": k, "N": n, "bits": 8, "block_size": block_size, "accuracy_level": _INT8_ACCURACY}
            replaced[id(reader)] = [_node(
                "MatMulNBits", (reader.inputs[0], weights_name, scales_name), reader.outputs, attributes, _MICROSOFT
            )]  # fmt: skip
            dropped_tensors |= {found.weight, found.scale}
        else:
            continue
        dropped_nodes |= {id(found.cast), id(found.scaling)}
    if not replaced:
        return None
    parts: list[bytes] = []
    node_at = iter(nodes)
    for field in graph:
        if field.number == GRAPH_NODE:
            node = next(node_at)
            if id(node) in replaced:
                parts += [_bytes_field(GRAPH_NODE, encoded) for encoded in replaced[id(node)]]
            elif id(node) not in dropped_nodes:
                parts.append(bytes(field.encoded))
        elif field.number != GRAPH_INITIALIZER or read_tensor(field.value)[0] not in dropped_tensors:  # type: ignore[arg-type]
            parts.append(bytes(field.encoded))
    parts += [_bytes_field(GRAPH_INITIALIZER, encoded) for encoded in added]
    out = [bytes(field.encoded) if field.number != MODEL_GRAPH else _bytes_field(MODEL_GRAPH, b"".join(parts)) for field in model]
    if block_size is not None:
        out.append(_bytes_field(_MODEL_OPSET_IMPORT, _text_field(_OPSET_DOMAIN, _MICROSOFT) + _int_field(_OPSET_VERSION, 1)))
    return b"".join(out)


def _dequantized(nodes: list[Node], tensors: dict[str, np.ndarray]) -> list[_Dequantized]:
    """The ``Cast(int8 weight) * float scale`` values of the graph whose every step has one reader."""
    producer = {name: node for node in nodes for name in node.outputs}
    readers: dict[str, list[Node]] = {}
    for node in nodes:
        for name in node.inputs:
            readers.setdefault(name, []).append(node)
    found = []
    for scaling in nodes:
        if scaling.op_type != "Mul" or len(scaling.inputs) != 2 or len(readers.get(scaling.outputs[0], ())) != 1:
            continue
        cast = next((producer[name] for name in scaling.inputs if name in producer and producer[name].op_type == "Cast"), None)
        if cast is None or len(cast.inputs) != 1 or len(readers.get(cast.outputs[0], ())) != 1:
            continue
        scale = next((name for name in scaling.inputs if name != cast.outputs[0]), "")
        weight = cast.inputs[0]
        if weight not in tensors or scale not in tensors or tensors[weight].dtype != np.int8 or tensors[weight].ndim != 2:
            continue
        if tensors[scale].dtype != np.float32 or len(readers[weight]) != 1 or len(readers[scale]) != 1:
            continue
        found.append(_Dequantized(cast, scaling, weight, scale, readers[scaling.outputs[0]][0]))
    return found


def _fresh(taken: set[str], base: str, count: int) -> list[str]:
    """``count`` value names made from ``base`` that the graph does not use yet (then taken)."""
    names = [f"{base}_int8_{index}" for index in range(count)]
    if taken & set(names):
        raise ValueError(f"the graph already has values named like {names[0]!r}")
    taken.update(names)
    return names


def _lookup_nodes(found: _Dequantized, names: list[str]) -> list[bytes]:
    """``Gather(Cast(q) * scale, indices)`` as ``Cast(Gather(q, indices)) * Gather(scale, indices)``: each
    element is still the float of its int8 value times its row's scale, so the result is the same."""
    rows, as_float, scales = names
    indices, (output,) = found.reader.inputs[1], found.reader.outputs
    return [
        _node("Gather", (found.weight, indices), (rows,), {"axis": 0}),
        _node("Cast", (rows,), (as_float,), {"to": _TENSOR_FLOAT}),
        _node("Gather", (found.scale, indices), (scales,), {"axis": 0}),
        _node("Mul", (as_float, scales), (output,), {}),
    ]


def _blocks(weight: np.ndarray, scale: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``MatMulNBits``' layout of an int8 ``(K, N)`` weight with a scale per column: each column's values in
    blocks of ``block_size``, stored with the 8-bit zero point 128, and one scale per block."""
    k, n = weight.shape
    stored = (weight.T.astype(np.int16) + 128).astype(np.uint8).reshape(n, k // block_size, block_size)
    scales = np.repeat(scale.reshape(n, 1), k // block_size, axis=1).reshape(-1).astype("<f4")
    return stored, scales


def _node(
    op_type: str, inputs: Sequence[str], outputs: Sequence[str], attributes: Mapping[str, int], domain: str = ""
) -> bytes:
    """A ``NodeProto`` with integer attributes, named after its first output."""
    return b"".join([
        *(_text_field(_NODE_INPUT, name) for name in inputs),
        *(_text_field(_NODE_OUTPUT, name) for name in outputs),
        _text_field(_NODE_NAME, f"{outputs[0]}_node"),
        _text_field(_NODE_OP_TYPE, op_type),
        *([_text_field(_NODE_DOMAIN, domain)] if domain else []),
        *(
            _bytes_field(_NODE_ATTRIBUTE, _text_field(_ATTRIBUTE_NAME, name) + _int_field(_ATTRIBUTE_INT, value)
                         + _int_field(_ATTRIBUTE_TYPE, _ATTRIBUTE_TYPE_INT))
            for name, value in attributes.items()
        ),
    ])  # fmt: skip


def _tensor(name: str, array: np.ndarray, kind: int) -> bytes:
    dims = b"".join(_int_field(_TENSOR_DIMS, size) for size in array.shape)
    return dims + _int_field(_TENSOR_TYPE, kind) + _text_field(_TENSOR_NAME, name) + _bytes_field(_TENSOR_RAW, array.tobytes())


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3 | _VARINT) + _varint(value)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _BYTES) + _varint(len(payload)) + payload


def _text_field(number: int, text: str) -> bytes:
    return _bytes_field(number, text.encode("utf-8"))
