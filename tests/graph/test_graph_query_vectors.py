"""Query vectors are computed ahead of the vector channel and remembered per model and text."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from mnemo.embeddings.queries import PrefetchedEmbedder, QueryVectors
from mnemo.storage import open_graph
from support.forking import in_forked_child

from ._support import ConceptEmbedder


class _Counting(ConceptEmbedder):
    """A ConceptEmbedder that records which texts it embedded, from any thread."""

    def __init__(self, name: str = "concepts-v1") -> None:
        super().__init__(name)
        self.texts: list[str] = []
        self._guard = threading.Lock()

    def embed(self, texts):
        with self._guard:
            self.texts.extend(texts)
        return super().embed(texts)


def test_a_repeated_query_is_embedded_once(db_path):
    embedder = _Counting()
    with open_graph(db_path, embedder=embedder) as graph:
        pet = graph.remember("Our puppy chews shoes")
        first = graph.recall("canine")
        second = graph.recall("canine")
    assert [r.memory.id for r in first] == [r.memory.id for r in second] == [pet.id]
    assert embedder.texts.count("canine") == 1


def test_the_prefetched_vector_is_the_models_vector():
    embedder = ConceptEmbedder()
    vectors = QueryVectors()
    prefetched = PrefetchedEmbedder(embedder, "a french car", vectors.start(embedder, "a french car"))
    assert np.array_equal(prefetched.embed(["a french car"]), embedder.embed(["a french car"]))
    assert np.array_equal(prefetched.embed(["coffee", "dog"]), embedder.embed(["coffee", "dog"]))


def test_callers_cannot_corrupt_the_cached_vector():
    embedder = ConceptEmbedder()
    vectors = QueryVectors()
    text = "a french car"
    PrefetchedEmbedder(embedder, text, vectors.start(embedder, text)).embed([text])[0, 0] = 99.0
    again = PrefetchedEmbedder(embedder, text, vectors.start(embedder, text)).embed([text])
    assert np.array_equal(again, embedder.embed([text]))


def test_vectors_of_different_models_are_kept_apart():
    vectors = QueryVectors()
    old, new = _Counting("concepts-v1"), _Counting("concepts-v2")
    vectors.start(old, "dog").result()
    vectors.start(new, "dog").result()
    assert old.texts == new.texts == ["dog"]


def test_the_least_recently_used_query_is_evicted():
    embedder = _Counting()
    vectors = QueryVectors(size=2)
    for text in ("dog", "car", "dog", "coffee", "dog", "car"):
        vectors.start(embedder, text).result()
    assert embedder.texts == ["dog", "car", "coffee", "car"]


def test_a_failed_embedding_is_not_remembered():
    class Flaky(ConceptEmbedder):
        failures = 1

        def embed(self, texts):
            if self.failures:
                self.failures -= 1
                raise RuntimeError("model not loaded yet")
            return super().embed(texts)

    embedder, vectors = Flaky(), QueryVectors()
    with pytest.raises(RuntimeError):
        vectors.start(embedder, "dog").result()
    assert vectors.start(embedder, "dog").result().shape == (1, embedder.dim)


def test_a_failing_query_embedding_fails_the_recall(db_path):
    class Broken(ConceptEmbedder):
        def embed(self, texts):
            raise RuntimeError("embedding service down")

    with open_graph(db_path, embedder=Broken()) as graph, pytest.raises(RuntimeError):
        graph.recall("canine")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_can_recall_with_vectors_after_the_parent_did(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder()) as graph:
        pet = graph.remember("Our puppy chews shoes")
        assert graph.recall("canine")

    def child_recalls() -> bool:
        with open_graph(db_path, embedder=ConceptEmbedder()) as child:
            return [r.memory.id for r in child.recall("hound")] == [pet.id]

    assert in_forked_child(child_recalls)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_the_parent_holds_the_graph_open_uses_connections_of_its_own(db_path):
    # What a pre-forking server does: open the memory, then fork workers. The parent goes on using its
    # graph afterwards, so the child must neither borrow nor close the parent's connections.
    with open_graph(db_path, embedder=ConceptEmbedder()) as graph:
        pet = graph.remember("Our puppy chews shoes")
        assert graph.recall("canine")

        def child_recalls_and_remembers() -> bool:
            with open_graph(db_path, embedder=ConceptEmbedder()) as child:
                found = [r.memory.id for r in child.recall("hound")]
                child.remember("The kitten sleeps all day")
            return found == [pet.id]

        assert in_forked_child(child_recalls_and_remembers)
        assert [r.memory.content for r in graph.recall("kitten")] == ["The kitten sleeps all day"]
        assert graph.recall("canine")[0].memory.id == pet.id


def test_recalls_from_several_threads_find_what_one_thread_finds(db_path):
    queries = ["canine", "vehicle", "espresso", "france", "germany", "hound", "sedan", "latte"]
    with open_graph(db_path, embedder=ConceptEmbedder()) as graph:
        for text in ("Our puppy chews shoes", "Drives an automobile", "Espresso after lunch",
                     "Paris in spring", "Berlin in winter"):  # fmt: skip
            graph.remember(text)
        expected = {q: [r.memory.id for r in graph.recall(q, touch=False)] for q in queries}
        found: dict[str, list[list[str]]] = {q: [] for q in queries}

        def worker(offset: int) -> None:
            for step in range(len(queries) * 3):
                query = queries[(offset + step) % len(queries)]
                found[query].append([r.memory.id for r in graph.recall(query, touch=False)])

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert all(results == [expected[q]] * len(results) for q, results in found.items())
    assert sum(len(results) for results in found.values()) == 4 * len(queries) * 3
