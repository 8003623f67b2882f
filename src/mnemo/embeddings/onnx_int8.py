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

from collections import Counter
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


def int8_products(path: str | Path, block_size: int = BLOCK_SIZE) -> bytes | None:
    """The ONNX model at ``path`` with every product by a dequantized int8 weight done by ``MatMulNBits``;
    ``None`` when it has no such product. Raises ``ValueError`` (and the reader's errors) for a file it
    cannot rewrite."""
    model = message_fields(map_file(path))
    graph_field = next(field for field in model if field.number == MODEL_GRAPH)
    graph = message_fields(graph_field.value)  # type: ignore[arg-type]
    nodes = [read_node(field.value) for field in graph if field.number == GRAPH_NODE]  # type: ignore[arg-type]
    tensors = dict(read_tensor(field.value) for field in graph if field.number == GRAPH_INITIALIZER)  # type: ignore[arg-type]
    chains = _chains(nodes, tensors, block_size)
    if not chains:
        return None
    replaced = {id(chain.product): chain for chain in chains}
    dropped_nodes = {id(node) for chain in chains for node in (chain.cast, chain.scaling)}
    dropped_tensors = {name for chain in chains for name in (chain.cast.inputs[0], _scale_name(chain))}
    taken = set(tensors) | {name for node in nodes for name in node.outputs}
    parts: list[bytes] = []
    node_at = iter(nodes)
    for field in graph:
        if field.number == GRAPH_NODE:
            node = next(node_at)
            if id(node) in replaced:
                parts.append(_bytes_field(GRAPH_NODE, _product_node(replaced[id(node)], block_size)))
            elif id(node) not in dropped_nodes:
                parts.append(bytes(field.encoded))
        elif field.number == GRAPH_INITIALIZER:
            name, _ = read_tensor(field.value)  # type: ignore[arg-type]
            if name not in dropped_tensors:
                parts.append(bytes(field.encoded))
        else:
            parts.append(bytes(field.encoded))
    for chain in chains:
        weights, scales = _blocks(tensors[chain.cast.inputs[0]], tensors[_scale_name(chain)], block_size)
        for name, array, kind in ((chain.weights, weights, _TENSOR_UINT8), (chain.scales, scales, _TENSOR_FLOAT)):
            if name in taken:
                raise ValueError(f"the graph already has a value named {name!r}")
            parts.append(_bytes_field(GRAPH_INITIALIZER, _tensor(name, array, kind)))
    out = [bytes(field.encoded) if field.number != MODEL_GRAPH else _bytes_field(MODEL_GRAPH, b"".join(parts)) for field in model]
    out.append(_bytes_field(_MODEL_OPSET_IMPORT, _text_field(_OPSET_DOMAIN, _MICROSOFT) + _int_field(_OPSET_VERSION, 1)))
    return b"".join(out)


class _Chain:
    """``product`` multiplies by the weight that ``scaling`` makes of ``cast``'s int8 initializer."""

    def __init__(self, product: Node, scaling: Node, cast: Node, shape: tuple[int, int]) -> None:
        self.product, self.scaling, self.cast = product, scaling, cast
        self.k, self.n = shape
        self.weights = f"{product.inputs[1]}_int8"
        self.scales = f"{product.inputs[1]}_int8_scale"


def _scale_name(chain: _Chain) -> str:
    return next(name for name in chain.scaling.inputs if name != chain.cast.outputs[0])


def _chains(nodes: list[Node], tensors: dict[str, np.ndarray], block_size: int) -> list[_Chain]:
    """The ``MatMul(x, Cast(int8 weight) * column scales)`` chains whose intermediate values nothing else reads."""
    producer = {name: node for node in nodes for name in node.outputs}
    readers = Counter(name for node in nodes for name in node.inputs)
    found = []
    for node in nodes:
        if node.op_type != "MatMul" or len(node.inputs) != 2:
            continue
        scaling = producer.get(node.inputs[1])
        if scaling is None or scaling.op_type != "Mul" or readers[node.inputs[1]] != 1:
            continue
        cast = next((producer[name] for name in scaling.inputs if name in producer and producer[name].op_type == "Cast"), None)
        if cast is None or readers[cast.outputs[0]] != 1 or readers[cast.inputs[0]] != 1:
            continue
        weight = tensors.get(cast.inputs[0])
        scale = tensors.get(next((name for name in scaling.inputs if name != cast.outputs[0]), ""))
        if weight is None or scale is None or weight.dtype != np.int8 or weight.ndim != 2 or scale.dtype != np.float32:
            continue
        k, n = weight.shape
        if k % block_size or scale.size != n or scale.shape[-1] != n:
            continue
        chain = _Chain(node, scaling, cast, (k, n))
        if readers[_scale_name(chain)] == 1:
            found.append(chain)
    return found


def _blocks(weight: np.ndarray, scale: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``MatMulNBits``' layout of an int8 ``(K, N)`` weight with a scale per column: each column's values in
    blocks of ``block_size``, stored with the 8-bit zero point 128, and one scale per block."""
    k, n = weight.shape
    stored = (weight.T.astype(np.int16) + 128).astype(np.uint8).reshape(n, k // block_size, block_size)
    scales = np.repeat(scale.reshape(n, 1), k // block_size, axis=1).reshape(-1).astype("<f4")
    return stored, scales


def _product_node(chain: _Chain, block_size: int) -> bytes:
    attributes = {"K": chain.k, "N": chain.n, "bits": 8, "block_size": block_size, "accuracy_level": _INT8_ACCURACY}
    return b"".join([
        *(_text_field(_NODE_INPUT, name) for name in (chain.product.inputs[0], chain.weights, chain.scales)),
        *(_text_field(_NODE_OUTPUT, name) for name in chain.product.outputs),
        _text_field(_NODE_NAME, f"{chain.weights}_product"),
        _text_field(_NODE_OP_TYPE, "MatMulNBits"),
        _text_field(_NODE_DOMAIN, _MICROSOFT),
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
