"""A BERT encoder's forward pass in NumPy.

Building an onnxruntime session for the int8 MiniLM costs about a quarter of a second, most of it turning the
int8 weights into float32 once; a process that embeds one query and exits pays all of it. Here the same weights,
read in place from the ONNX file (:mod:`mnemo.embeddings.onnx_file`), are turned into float32 in a fraction of
that (the word embeddings, half the model, stay int8: only the rows of the tokens in hand are converted), and a
short text goes through the six layers in a few milliseconds. The arithmetic is the graph's own (weights times
their scales, exact-``erf`` GELU, layer norms with the graph's epsilon), so the hidden states match
onnxruntime's to about 1e-7.

In an ONNX export the weights are found by what the graph does with them, not by their generated names: each
matrix is the one multiplied in just before the bias of its role (``...attention.self.query.bias`` and so on)
is added. A float32 checkpoint (``model.safetensors``) is read by its names; ``bench/embeddings.py`` runs the
fp32 model that way to measure what int8 costs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from mnemo.embeddings.onnx_file import OnnxGraph
from mnemo.errors import ConfigError

_ROLES = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
_LAYER = re.compile(r"(.*)encoder\.layer\.(\d+)\.(.+)\.bias")
_MASKED = np.float32(-3.4028235e38)  # what the graph adds to the scores of padding positions


@dataclass(frozen=True)
class _Layer:
    qkv: np.ndarray  # query, key and value matrices side by side: one product instead of three
    qkv_bias: np.ndarray
    output: np.ndarray
    output_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    intermediate: np.ndarray
    intermediate_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    output_norm: tuple[np.ndarray, np.ndarray]


class BertEncoder:
    """A BERT encoder's forward pass, from an ONNX export (:meth:`from_onnx`) or from a checkpoint's tensors
    (:meth:`from_tensors`)."""

    def __init__(
        self,
        layers: Sequence[_Layer],
        *,
        words: tuple[np.ndarray, np.ndarray | None],
        positions: tuple[np.ndarray, np.ndarray | None],
        token_types: np.ndarray,
        embedding_norm: tuple[np.ndarray, np.ndarray],
        epsilon: float,
        heads: int,
    ) -> None:
        """Embedding tables are ``(rows, scales)``: int8 rows with a float32 scale each, or float32 rows and
        ``None``; only the rows of the tokens in hand are ever converted."""
        self.hidden = int(token_types.shape[1])
        if not layers or self.hidden % heads:
            raise ConfigError(f"{len(layers)} layers of {self.hidden} with {heads} heads is not a BERT encoder")
        self._layers = tuple(layers)
        self._words, self._positions, self._token_types = words, positions, token_types
        self._embedding_norm = embedding_norm
        self._epsilon = np.float32(epsilon)
        self._heads = heads

    @classmethod
    def from_onnx(cls, graph: OnnxGraph, *, heads: int) -> BertEncoder:
        """The encoder of an export whose weights are int8 with per-row or per-column float32 scales (each
        dequantised by a ``Mul(Cast(q), scale)``); :class:`~mnemo.errors.ConfigError` when it is not one."""
        try:
            return cls._from_onnx(graph, heads)
        except (KeyError, ValueError, IndexError) as exc:
            raise ConfigError(f"the ONNX graph is not a BERT encoder this reader understands ({exc})") from None

    @classmethod
    def _from_onnx(cls, graph: OnnxGraph, heads: int) -> BertEncoder:
        tensors = graph.tensors
        # The float32 weight each dequantising Mul(Cast(q), scale) makes, by its output name.
        quantised = {
            node.outputs[0]: (tensors[node.inputs[0][: -len("_f")] + "_q"], tensors[node.inputs[1]])
            for node in graph.nodes
            if node.op_type == "Mul" and node.inputs[0].endswith("_f") and node.inputs[0][:-2] + "_q" in tensors
        }
        added = {node.inputs[0]: node for node in graph.nodes if node.op_type == "Add" and len(node.inputs) == 2}
        matrices: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        indices: set[int] = set()
        prefix = ""
        for node in graph.nodes:
            if node.op_type != "MatMul" or node.inputs[1] not in quantised or node.outputs[0] not in added:
                continue
            bias = added[node.outputs[0]].inputs[1]
            role = _LAYER.fullmatch(bias)
            if role is None:
                continue
            prefix = role.group(1)
            indices.add(int(role.group(2)))
            matrices[bias[: -len(".bias")]] = quantised[node.inputs[1]]
        epsilons = {node.attributes.get("epsilon") for node in graph.nodes if node.op_type == "LayerNormalization"}
        if len(epsilons) != 1 or None in epsilons:
            raise ValueError(f"layer norms with epsilons {epsilons}")
        if indices != set(range(len(indices))):
            raise ValueError(f"encoder layers {sorted(indices)}")
        def dequantised(*names: str) -> np.ndarray:
            # Side by side in int8 first, then one conversion: each float32 byte is written once.
            q = np.concatenate([matrices[name][0] for name in names], axis=1)
            return np.multiply(q, np.concatenate([matrices[name][1] for name in names], axis=1), dtype=np.float32)

        layers = [_layer(dequantised, tensors.__getitem__, f"{prefix}encoder.layer.{i}.") for i in range(len(indices))]
        embeddings = prefix + "embeddings."
        return cls(
            layers,
            words=quantised[embeddings + "word_embeddings.weight"],
            positions=quantised[embeddings + "position_embeddings.weight"],
            token_types=tensors[embeddings + "token_type_embeddings.weight"],
            embedding_norm=(tensors[embeddings + "LayerNorm.weight"], tensors[embeddings + "LayerNorm.bias"]),
            epsilon=float(epsilons.pop()),
            heads=heads,
        )

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, np.ndarray], *, heads: int, epsilon: float = 1e-12) -> BertEncoder:
        """The encoder of a float32 checkpoint with Hugging Face's names (``encoder.layer.0.attention.self.
        query.weight``, matrices stored ``[out, in]``), such as a ``model.safetensors``."""
        count = len({name.split(".")[2] for name in tensors if name.startswith("encoder.layer.")})

        def matrix(*names: str) -> np.ndarray:
            return np.concatenate([tensors[name + ".weight"].T for name in names], axis=1, dtype=np.float32)

        layers = [_layer(matrix, tensors.__getitem__, f"encoder.layer.{i}.") for i in range(count)]
        return cls(
            layers,
            words=(tensors["embeddings.word_embeddings.weight"], None),
            positions=(tensors["embeddings.position_embeddings.weight"], None),
            token_types=tensors["embeddings.token_type_embeddings.weight"],
            embedding_norm=(tensors["embeddings.LayerNorm.weight"], tensors["embeddings.LayerNorm.bias"]),
            epsilon=epsilon,
            heads=heads,
        )

    def state(self) -> dict[str, np.ndarray]:
        """Every array the forward pass uses, by name (``layers.0.qkv``, ``words.rows``, ...): what
        :meth:`from_state` takes back, with the epsilon as a 0-d array. The arrays are the encoder's own,
        not copies."""
        state: dict[str, np.ndarray] = {"epsilon": np.asarray(self._epsilon, dtype=np.float32)}
        for name, (rows, scales) in (("words", self._words), ("positions", self._positions)):
            state[f"{name}.rows"] = rows
            if scales is not None:
                state[f"{name}.scales"] = scales
        state["token_types"] = self._token_types
        state["embedding_norm.weight"], state["embedding_norm.bias"] = self._embedding_norm
        for index, layer in enumerate(self._layers):
            for part in fields(_Layer):
                value = getattr(layer, part.name)
                if isinstance(value, tuple):
                    state[f"layers.{index}.{part.name}.weight"], state[f"layers.{index}.{part.name}.bias"] = value
                else:
                    state[f"layers.{index}.{part.name}"] = value
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], *, heads: int) -> BertEncoder:
        """The encoder whose :meth:`state` ``state`` is, using its arrays as they are (memory-mapped ones
        stay mapped); :class:`~mnemo.errors.ConfigError` when arrays are missing."""
        def part(name: str) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
            return state[name] if name in state else (state[name + ".weight"], state[name + ".bias"])

        try:
            count = len({name.split(".")[1] for name in state if name.startswith("layers.")})
            layers = [_Layer(**{f.name: part(f"layers.{i}.{f.name}") for f in fields(_Layer)}) for i in range(count)]
            return cls(
                layers,
                words=(state["words.rows"], state.get("words.scales")),
                positions=(state["positions.rows"], state.get("positions.scales")),
                token_types=state["token_types"],
                embedding_norm=(state["embedding_norm.weight"], state["embedding_norm.bias"]),
                epsilon=float(state["epsilon"]),
                heads=heads,
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise ConfigError(f"not the state of a BERT encoder ({type(exc).__name__}: {exc})") from None

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The last hidden state, ``(batch, tokens, hidden)`` float32, for token ids and their mask (1 for a
        real token, 0 for padding); every sequence has token type 0."""
        with _one_blas_thread():
            return self._forward(input_ids, attention_mask)

    def _forward(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        batch, tokens = input_ids.shape
        x = _rows(self._words, input_ids) + _rows(self._positions, np.arange(tokens)) + self._token_types[0]
        x = self._norm(x, self._embedding_norm)
        masked = np.where(attention_mask[:, None, None, :] > 0, np.float32(0), _MASKED)
        heads, width = self._heads, self.hidden // self._heads
        # The graph scales queries and keys by width**-0.25 each; once on the product is the same to rounding.
        scale = np.float32(1 / math.sqrt(width))
        for layer in self._layers:
            qkv = x @ layer.qkv + layer.qkv_bias
            q, k, v = (
                qkv[:, :, i * self.hidden : (i + 1) * self.hidden].reshape(batch, tokens, heads, width).transpose(0, 2, 1, 3)
                for i in range(3)
            )
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + masked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, self.hidden)
            x = self._norm(attended @ layer.output + layer.output_bias + x, layer.attention_norm)
            inner = x @ layer.intermediate + layer.intermediate_bias
            inner *= 0.5 * (1.0 + _erf(inner * np.float32(1 / math.sqrt(2))))
            x = self._norm(inner @ layer.down + layer.down_bias + x, layer.output_norm)
        return x

    def _norm(self, x: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        centred = x - x.mean(axis=-1, keepdims=True)
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        return centred / np.sqrt(variance + self._epsilon) * weights[0] + weights[1]


def _layer(matrix: Callable[..., np.ndarray], vector: Callable[[str], np.ndarray], at: str) -> _Layer:
    """Layer ``at`` (a name prefix) from its vectors and its float32 ``[in, out]`` matrices, by Hugging Face's
    names; ``matrix(*names)`` gives the named ones side by side."""
    return _Layer(
        qkv=matrix(*(at + role for role in _ROLES[:3])),
        qkv_bias=np.concatenate([vector(at + role + ".bias") for role in _ROLES[:3]]),
        output=matrix(at + _ROLES[3]),
        output_bias=vector(at + _ROLES[3] + ".bias"),
        attention_norm=(vector(at + "attention.output.LayerNorm.weight"), vector(at + "attention.output.LayerNorm.bias")),
        intermediate=matrix(at + _ROLES[4]),
        intermediate_bias=vector(at + _ROLES[4] + ".bias"),
        down=matrix(at + _ROLES[5]),
        down_bias=vector(at + _ROLES[5] + ".bias"),
        output_norm=(vector(at + "output.LayerNorm.weight"), vector(at + "output.LayerNorm.bias")),
    )


_blas: Any = None


def _one_blas_thread() -> AbstractContextManager[object]:
    """Run NumPy's matrix products on one thread for the duration. With its default thread pool, OpenBLAS
    made a query's 12 x 384 by 384 x 1536 product 8x slower on two busy cores (its threads wait for cores
    the database and the caller hold) and a 1,024-row one no faster; recall p95 on PostgreSQL went from
    ~45 to ~350 ms. The limit holds only while the encoder runs, so the caller's own NumPy work keeps its
    threads."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


def _rows(table: tuple[np.ndarray, np.ndarray | None], ids: np.ndarray) -> np.ndarray:
    rows, scales = table
    return rows[ids].astype(np.float32) if scales is None else rows[ids].astype(np.float32) * scales[ids]


def _erf(x: np.ndarray) -> np.ndarray:
    """``erf`` to within 1.5e-7 (Abramowitz and Stegun 7.1.26), below float32's resolution of GELU's output;
    NumPy has no ``erf`` of its own."""
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.copysign(1.0 - poly.astype(np.float32) * np.exp(-a * a), x).astype(np.float32)
