"""The int8 rewrites of the MiniLM graph (lookups for every session, products for queries): on the real model
and onnxruntime."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mnemo.embeddings import Embedder, MiniLMEmbedder, QueryEmbedder
from mnemo.embeddings.minilm import _model_path
from mnemo.embeddings.onnx_file import read_onnx
from mnemo.embeddings.onnx_int8 import int8_lookups, int8_products
from mnemo.embeddings.onnx_session import open_onnx_session
from mnemo.embeddings.queries import QueryVectors
from mnemo.errors import InvalidArgument
from support.forking import in_forked_child

QUERIES = [
    "where does the staging database live?",
    "what did Caroline say about the adoption agency",
    "docker cache release error",
    "When did Melanie paint a sunrise?",
    "Ünïcödé query with 中文",
    "",
]


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = int8_products(_model_path())
    assert model is not None
    path = tmp_path_factory.mktemp("int8") / "model.onnx"
    path.write_bytes(model)
    return path


def _ready(model: MiniLMEmbedder) -> MiniLMEmbedder:
    model.preload()
    deadline = time.monotonic() + 60
    while model._query_session is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert model._query_session is not None
    return model


def test_every_product_by_an_int8_weight_becomes_an_int8_product(rewritten: Path) -> None:
    before, after = read_onnx(_model_path()), read_onnx(rewritten)
    weights = Counter(node.op_type for node in after.nodes)
    assert weights["MatMulNBits"] == 36  # six layers: query, key, value, output, intermediate, down
    assert weights["MatMul"] == Counter(node.op_type for node in before.nodes)["MatMul"] - 36
    # The embedding tables are looked up, not multiplied: they keep their int8 values and scales.
    int8 = {name for name, t in after.tensors.items() if t.dtype == np.int8}
    assert int8 == {name for name, t in before.tensors.items() if t.dtype == np.int8 and name.startswith("inner.embeddings.")}
    assert int8 and all(np.array_equal(after.tensors[name], before.tensors[name]) for name in int8)


def test_a_rewritten_model_has_nothing_left_to_rewrite(rewritten: Path) -> None:
    assert int8_products(rewritten) is None


def test_the_rewritten_graph_keeps_the_models_vectors_within_a_cosine_of_0999() -> None:
    exact = MiniLMEmbedder()
    expected = exact.embed(QUERIES)
    session = open_onnx_session(int8_products(_model_path()), threads=1)
    fast = MiniLMEmbedder()
    fast._session = session
    found = fast.embed(QUERIES)
    cosines = (found * expected).sum(axis=1)
    assert cosines.min() > 0.999  # one-word and empty queries lose most
    assert np.median(cosines) > 0.9997
    assert not np.array_equal(found, expected)  # it is another arithmetic, not the same graph


def test_table_lookups_read_the_int8_tables_and_give_the_same_vectors_bit_for_bit(tmp_path: Path) -> None:
    model = int8_lookups(_model_path())
    assert model is not None
    (tmp_path / "lookups.onnx").write_bytes(model)
    graph = read_onnx(tmp_path / "lookups.onnx")
    words = "inner.embeddings.word_embeddings.weight_q"
    # The int8 table is looked up directly: no dequantized copy is left for onnxruntime to fold into float32.
    assert [node.op_type for node in graph.nodes if words in node.inputs] == ["Gather"]
    assert graph.tensors[words].dtype == np.int8
    assert Counter(node.op_type for node in graph.nodes)["MatMulNBits"] == 0
    from_file, rewritten = MiniLMEmbedder(), MiniLMEmbedder()
    from_file._session = open_onnx_session(_model_path(), threads=1)
    rewritten._session = open_onnx_session(model, threads=1)
    texts = [*QUERIES, "word " * 300]
    assert np.array_equal(rewritten.embed(texts), from_file.embed(texts))


def test_a_model_whose_lookups_cannot_be_rewritten_runs_as_it_is(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def damaged(path):  # noqa: ANN001, ANN202 - int8_lookups' signature
        raise ValueError("field 5 runs past the end")

    monkeypatch.setattr("mnemo.embeddings.minilm.int8_lookups", damaged)
    model = MiniLMEmbedder()
    with caplog.at_level(logging.INFO, logger="mnemo.embeddings"):
        vectors = model.embed([f"note number {n} about the garden" for n in range(200)])  # onnxruntime's size
    assert model._session is not None and "runs past the end" in caplog.text
    assert vectors.shape == (200, 384)


def test_minilm_is_a_query_embedder() -> None:
    assert isinstance(MiniLMEmbedder(), QueryEmbedder)


def test_a_query_before_the_int8_session_is_built_gets_the_stored_texts_vector() -> None:
    model = MiniLMEmbedder()
    assert np.array_equal(model.embed_query(QUERIES[0]), model.embed([QUERIES[0]])[0])
    assert model._query_session is None


def test_a_query_after_preload_goes_through_the_int8_session(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _ready(MiniLMEmbedder())
    expected = model.embed(QUERIES)
    monkeypatch.setattr(model, "embed", lambda texts: pytest.fail("the exact graph embedded a query"))
    found = np.stack([model.embed_query(text) for text in QUERIES])
    assert found.shape == (len(QUERIES), 384) and found.dtype == np.float32
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    assert (found * expected).sum(axis=1).min() > 0.999


def test_preload_after_a_large_batch_builds_the_int8_session_and_nothing_else() -> None:
    model = MiniLMEmbedder()
    model.embed([f"note number {n} about the garden" for n in range(200)])  # builds the exact session
    _ready(model)
    assert model._encoder is None  # the NumPy encoder, for queries before onnxruntime, is not needed


def test_stored_texts_keep_the_exact_graph_after_preload() -> None:
    model = _ready(MiniLMEmbedder())
    reference = MiniLMEmbedder()
    reference._load_session()
    assert np.array_equal(model.embed(QUERIES), reference.embed(QUERIES))


def test_a_query_that_is_not_a_string_is_rejected() -> None:
    with pytest.raises(InvalidArgument, match="text"):
        MiniLMEmbedder().embed_query(["a list"])  # type: ignore[arg-type]


def test_without_the_int8_session_queries_fall_back_and_say_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unsupported(model, threads):  # noqa: ANN001, ANN202 - open_onnx_session's signature
        if isinstance(model, bytes) and b"MatMulNBits" in model:  # as an onnxruntime without the operator says
            raise RuntimeError("Could not find an implementation for MatMulNBits")
        return real(model, threads)

    real = open_onnx_session
    monkeypatch.setattr("mnemo.embeddings.minilm.open_onnx_session", unsupported)
    model = MiniLMEmbedder()
    with caplog.at_level(logging.INFO, logger="mnemo.embeddings"):
        model.preload()
        deadline = time.monotonic() + 60
        while not model._query_session_failed and time.monotonic() < deadline:
            time.sleep(0.02)
        model._load_query_session()  # asked again: not retried, not logged again
    assert model._query_session is None
    assert caplog.text.count("MatMulNBits") == 1
    assert np.array_equal(model.embed_query(QUERIES[0]), model.embed([QUERIES[0]])[0])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_builds_its_own_int8_session() -> None:
    model = _ready(MiniLMEmbedder())
    expected = model.embed_query(QUERIES[1])

    def child() -> bool:
        if model._query_session is not None:
            return False  # the parent's session, whose threads the child does not have
        return bool(np.allclose(_ready(model).embed_query(QUERIES[1]), expected, atol=1e-6))

    assert in_forked_child(child)


class _Recorded:
    """An embedder with its own query path, recording which path each text took."""

    name, dim = "recorded", 3

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def embed(self, texts):  # noqa: ANN001, ANN201 - the Embedder protocol's signature
        self.calls += [("embed", text) for text in texts]
        return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_query(self, text):  # noqa: ANN001, ANN201 - the QueryEmbedder protocol's signature
        self.calls.append(("embed_query", text))
        return np.array([0.0, 1.0, 0.0], dtype=np.float32)


class _Plain:
    name, dim = "plain", 3

    def embed(self, texts):  # noqa: ANN001, ANN201 - the Embedder protocol's signature
        return np.tile(np.array([0.0, 0.0, 1.0], dtype=np.float32), (len(texts), 1))


def test_recall_embeds_queries_through_embed_query_where_there_is_one() -> None:
    embedder = _Recorded()
    vector = QueryVectors().start(embedder, "a question").result()
    assert embedder.calls == [("embed_query", "a question")]
    assert vector.shape == (1, 3) and vector.tolist() == [[0.0, 1.0, 0.0]]
    assert not vector.flags.writeable


def test_recall_embeds_queries_of_a_plain_embedder_with_embed() -> None:
    embedder: Embedder = _Plain()
    assert not isinstance(embedder, QueryEmbedder)
    assert QueryVectors().start(embedder, "a question").result().tolist() == [[0.0, 0.0, 1.0]]
