"""The local MiniLM embedder: contract, semantics, determinism and thread safety, on the real model."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mnemo import AgentMemory
from mnemo.embeddings import Embedder, MiniLMEmbedder, preload
from mnemo.errors import ConfigError, InvalidArgument
from mnemo.providers import GraphProvider
from support.forking import in_forked_child

TEXTS = [
    "I adopted a dog named Biscuit last spring.",
    "My sister lives in Lisbon and works as an architect.",
    "Remember to renew the car insurance before June.",
    "The quarterly report is due on Friday.",
    "",
    "Ünïcödé, emoji 🎉 and 中文 all go through.",
]


def test_satisfies_the_embedder_protocol(embedder: MiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384
    assert "all-MiniLM-L6-v2" in embedder.name


def test_returns_one_float32_unit_row_per_text(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    assert vectors.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_an_empty_matrix(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_paraphrases_score_higher_than_unrelated_sentences(embedder: MiniLMEmbedder) -> None:
    triples = [
        ("The cat is sleeping on the sofa.", "A kitten naps on the couch.", "Interest rates rose again."),
        ("I moved to Berlin last year.", "Last year I relocated to Berlin.", "My favourite dessert is pie."),
        ("How do I reset my password?", "I forgot my password, how do I change it?", "The train leaves at noon."),
    ]
    for anchor, paraphrase, unrelated in triples:
        a, p, u = embedder.embed([anchor, paraphrase, unrelated])
        assert a @ p > 0.6
        assert a @ p > a @ u + 0.3


def test_same_text_always_gives_the_same_vector(embedder: MiniLMEmbedder) -> None:
    np.testing.assert_array_equal(embedder.embed(TEXTS), embedder.embed(TEXTS))


def test_vector_does_not_depend_on_batch_neighbours_or_order(embedder: MiniLMEmbedder) -> None:
    together = embedder.embed(TEXTS)
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
    reversed_rows = embedder.embed(TEXTS[::-1])[::-1]
    np.testing.assert_allclose(together, alone, atol=1e-4)
    np.testing.assert_allclose(together, reversed_rows, atol=1e-4)


def test_small_batches_give_the_same_vectors(embedder: MiniLMEmbedder) -> None:
    np.testing.assert_allclose(MiniLMEmbedder(batch_size=2).embed(TEXTS), embedder.embed(TEXTS), atol=1e-4)


def test_text_longer_than_the_model_window_is_truncated(embedder: MiniLMEmbedder) -> None:
    long_text = "The meeting moved to Thursday. " * 300
    vector = embedder.embed([long_text])
    assert vector.shape == (1, 384)
    assert np.isfinite(vector).all()


def test_concurrent_calls_from_four_threads_match_sequential_results() -> None:
    shared = MiniLMEmbedder()  # fresh, so the threads also race on the lazy model load
    expected = MiniLMEmbedder().embed(TEXTS)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(worker: int) -> None:
        try:
            barrier.wait()
            for _ in range(3):
                results[worker] = shared.embed(TEXTS)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for vectors in results.values():
        np.testing.assert_allclose(vectors, expected, atol=1e-5)


def test_a_bare_string_is_rejected(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(InvalidArgument, match="texts"):
        embedder.embed("hello")  # type: ignore[arg-type]


def test_non_string_items_are_rejected_by_position(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(InvalidArgument, match=r"texts\[1\]"):
        embedder.embed(["fine", 42])  # type: ignore[list-item]


@pytest.mark.parametrize("field", ["batch_size", "threads"])
def test_nonpositive_settings_are_rejected(field: str) -> None:
    with pytest.raises(InvalidArgument, match=field):
        MiniLMEmbedder(**{field: 0})


def _wait_loaded(model: MiniLMEmbedder, seconds: float = 60.0) -> bool:
    # A preload ends with the int8 query session: waiting for it leaves no load running into the next test.
    deadline = time.monotonic() + seconds
    while model._query_session is None and not model._query_session_failed and time.monotonic() < deadline:
        time.sleep(0.02)
    return model._encoder is not None and model._session is not None


def test_preload_loads_the_model_in_the_background_not_on_the_caller_thread() -> None:
    model = MiniLMEmbedder()
    loaded_on = []
    load = model._load_session

    def recorded():  # noqa: ANN202 - returns whatever the loader does
        loaded_on.append(threading.current_thread().name)
        return load()

    model._load_session = recorded  # type: ignore[method-assign]
    model.preload()
    assert _wait_loaded(model)
    assert loaded_on == ["mnemo-model-preload"]
    built_in_place = MiniLMEmbedder()
    built_in_place._load_session()  # the same runtime, its session built by the caller instead
    reference = built_in_place.embed(["the same vectors either way"])
    assert np.array_equal(model.embed(["the same vectors either way"]), reference)


def test_preload_twice_starts_one_load() -> None:
    model = MiniLMEmbedder()
    model.preload()
    model.preload()
    assert [t.name for t in threading.enumerate()].count("mnemo-model-preload") <= 1
    assert _wait_loaded(model)


def test_preload_of_an_embedder_without_it_does_nothing() -> None:
    preload(None)
    preload(object())  # type: ignore[arg-type]


def test_an_agent_session_loads_the_model_before_the_first_recall(tmp_path) -> None:
    with AgentMemory.open("warm", tmp_path, archive_enabled=False) as memory:
        graph = next(p for p in memory.registry.providers if isinstance(p, GraphProvider))
        assert _wait_loaded(graph.graph.embedder)


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.15, 0.2, 0.3])
def test_a_process_that_exits_while_the_model_preloads_exits_cleanly(delay: float) -> None:
    # Exiting while onnxruntime builds the session on another thread aborts the process (SIGABRT) unless
    # exit waits for the load; the delays put the exit at different points of the load.
    code = f"import time\nfrom mnemo.embeddings import MiniLMEmbedder\nMiniLMEmbedder().preload()\ntime.sleep({delay})\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "terminate" not in done.stderr, done.stderr


LONG = "The deploy runbook: drain the node, cordon it, roll the release, watch the error budget. " * 20


def test_a_query_is_embedded_without_building_an_onnxruntime_session() -> None:
    model = MiniLMEmbedder()
    model.embed(["where does the staging database live?"])
    assert model._encoder is not None and model._session is None


def test_once_onnxruntime_has_a_session_queries_go_through_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    model = MiniLMEmbedder()
    model.preload()
    assert _wait_loaded(model)
    monkeypatch.setattr(model, "_quick", lambda: pytest.fail("the NumPy encoder ran after the session was built"))
    assert model.embed(["where does the staging database live?"]).shape == (1, 384)


BATCH = [f"note number {n} about the garden" for n in range(200)]


def test_a_large_batch_goes_through_onnxruntime() -> None:
    model = MiniLMEmbedder()
    model.embed(BATCH)
    assert model._session is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_can_free_an_embedder_whose_session_the_parent_built() -> None:
    # The parent's garbage, collected in the child: what happens to a pre-forking server's worker.
    class Holder:
        pass

    holder = Holder()
    holder.model, holder.itself = MiniLMEmbedder(), holder
    holder.model.embed(BATCH)
    del holder

    def child_collects() -> bool:
        gc.collect()
        return True

    assert in_forked_child(child_collects)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_embeds_a_large_batch_as_its_parent_did() -> None:
    model = MiniLMEmbedder()
    expected = model.embed(BATCH)

    def child_embeds() -> bool:
        return bool(np.allclose(model.embed(BATCH), expected, atol=1e-6))

    assert in_forked_child(child_embeds)
    assert np.allclose(model.embed(BATCH), expected, atol=1e-6)


@pytest.mark.parametrize("texts", [TEXTS, [LONG], [LONG, "short", ""]], ids=["mixed", "truncated", "padded"])
def test_both_runtimes_give_the_same_vectors(texts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    model = MiniLMEmbedder()
    quick = model.embed(texts)
    monkeypatch.setattr("mnemo.embeddings.minilm.QUICK_TOKENS", 0)
    assert model._session is None
    through_onnxruntime = model.embed(texts)
    assert np.abs(quick - through_onnxruntime).max() < 1e-5
    assert (quick * through_onnxruntime).sum(axis=1).min() > 0.99999


def test_a_model_the_numpy_reader_cannot_read_is_embedded_by_onnxruntime(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    def unreadable(path):
        raise ConfigError(f"{path} is not an ONNX model this reader understands")

    monkeypatch.setenv("MNEMO_CACHE_DIR", str(tmp_path))  # no cached weights to fall back on
    monkeypatch.setattr("mnemo.embeddings.weights_cache.read_onnx", unreadable)
    model = MiniLMEmbedder()
    with caplog.at_level("WARNING", logger="mnemo.embeddings"):
        vectors = model.embed(["still embedded"])
    assert model._session is not None and "onnxruntime" in caplog.text
    assert np.allclose(vectors, MiniLMEmbedder().embed(["still embedded"]), atol=1e-5)
