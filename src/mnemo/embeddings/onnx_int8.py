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

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mnemo.embeddings.onnx_file import (
    GRAPH_INITIALIZER,
    GRAPH_NODE,
    MODEL_GRAPH,
    MODEL_OPSET_IMPORT,
    Node,
    element_type,
    encode_field,
    encode_node,
    encode_opset,
    encode_tensor,
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


@dataclass(frozen=True, slots=True)
class _Dequantized:
    """A value the graph computes as ``Cast(int8 initializer) * scale initializer``, read by ``reader`` alone."""

    cast: Node
    scaling: Node
    weight: str
    scale: str
    reader: Node

    @property
    def value(self) -> str:
        return self.scaling.outputs[0]


def _rewrite(path: str | Path, block_size: int | None) -> bytes | None:
    model = message_fields(map_file(path))
    graph = message_fields(next(field.value for field in model if field.number == MODEL_GRAPH))  # type: ignore[arg-type]
    nodes = [read_node(field.value) for field in graph if field.number == GRAPH_NODE]  # type: ignore[arg-type]
    initializers = [read_tensor(field.value) for field in graph if field.number == GRAPH_INITIALIZER]  # type: ignore[arg-type]
    tensors = dict(initializers)
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
            added += [encode_tensor(weights_name, stored), encode_tensor(scales_name, scales)]
            attributes = {"K": k, "N": n, "bits": 8, "block_size": block_size, "accuracy_level": _INT8_ACCURACY}
            replaced[id(reader)] = [encode_node(
                "MatMulNBits", (reader.inputs[0], weights_name, scales_name), reader.outputs, attributes, _MICROSOFT
            )]  # fmt: skip
            dropped_tensors |= {found.weight, found.scale}
        else:
            continue
        dropped_nodes |= {id(found.cast), id(found.scaling)}
    if not replaced:
        return None
    parts: list[bytes] = []
    node_at, initializer_at = iter(nodes), iter(initializers)
    for field in graph:
        if field.number == GRAPH_NODE:
            node = next(node_at)
            if id(node) in replaced:
                parts += [encode_field(GRAPH_NODE, encoded) for encoded in replaced[id(node)]]
            elif id(node) not in dropped_nodes:
                parts.append(bytes(field.encoded))
        elif field.number != GRAPH_INITIALIZER or next(initializer_at)[0] not in dropped_tensors:
            parts.append(bytes(field.encoded))
    parts += [encode_field(GRAPH_INITIALIZER, encoded) for encoded in added]
    out = [bytes(field.encoded) if field.number != MODEL_GRAPH else encode_field(MODEL_GRAPH, b"".join(parts)) for field in model]
    if block_size is not None:
        out.append(encode_field(MODEL_OPSET_IMPORT, encode_opset(_MICROSOFT, 1)))
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
        encode_node("Gather", (found.weight, indices), (rows,), {"axis": 0}),
        encode_node("Cast", (rows,), (as_float,), {"to": element_type(np.float32)}),
        encode_node("Gather", (found.scale, indices), (scales,), {"axis": 0}),
        encode_node("Mul", (as_float, scales), (output,), {}),
    ]


def _blocks(weight: np.ndarray, scale: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``MatMulNBits``' layout of an int8 ``(K, N)`` weight with a scale per column: each column's values in
    blocks of ``block_size``, stored with the 8-bit zero point 128, and one scale per block."""
    k, n = weight.shape
    stored = (weight.T.astype(np.int16) + 128).astype(np.uint8).reshape(n, k // block_size, block_size)
    scales = np.repeat(scale.reshape(n, 1), k // block_size, axis=1).reshape(-1).astype("<f4")
    return stored, scales
