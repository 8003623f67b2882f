"""Vectors are derived, deferred, batched, and never mixed across models."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from mnemo.storage import open_graph

from ._support import ConceptEmbedder, count_rows


def _models(db_path):
    with open_graph(db_path) as graph:
        return sorted(tuple(row) for row in graph._conn.execute("SELECT model, dim, COUNT(*) FROM graph_vectors GROUP BY model, dim"))


def test_a_write_is_searchable_before_it_is_embedded(db_path):
    embedder = ConceptEmbedder()
    with open_graph(db_path, embedder=embedder) as graph:
        memory = graph.remember("Espresso machine descaling is due")
        assert embedder.calls == []  # remember did not wait for the model
        assert count_rows(graph, "graph_vectors") == 0
    with open_graph(db_path) as plain:
        assert [r.memory.id for r in plain.recall("descaling")] == [memory.id]


def test_pending_memories_are_embedded_in_batches_with_the_model_name_and_dim(db_path):
    embedder = ConceptEmbedder()
    with open_graph(db_path, embedder=embedder) as graph:
        for i in range(10):
            graph.remember(f"note {i} about a dog")
        assert graph.stats()["pending_embeddings"] == 10
        assert graph.embed_pending(batch_size=4) == 10
        assert embedder.calls == [4, 4, 2]
        assert graph.stats()["pending_embeddings"] == 0
        assert graph.embed_pending() == 0
    assert _models(db_path) == [("concepts-v1", 8, 10)]


def test_vectors_are_stored_as_float32_blobs_in_sqlite(sqlite_path):
    embedder = ConceptEmbedder()
    with open_graph(sqlite_path, embedder=embedder) as graph:
        memory = graph.remember("A dog in Paris")
        graph.flush()
    conn = sqlite3.connect(sqlite_path)
    blob = conn.execute("SELECT vector FROM graph_vectors WHERE memory_id = ?", (memory.id,)).fetchone()[0]
    conn.close()
    np.testing.assert_array_equal(np.frombuffer(blob, dtype=np.float32), embedder.embed(["A dog in Paris"])[0])


def test_recall_embeds_pending_memories_first(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder()) as graph:
        pet = graph.remember("The hound sleeps all day")
        assert [r.memory.id for r in graph.recall("puppy")] == [pet.id]
        assert graph.stats()["pending_embeddings"] == 0


def test_changing_the_model_re_embeds_instead_of_mixing_spaces(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder("concepts-v1", 8)) as graph:
        for text in ("A puppy at home", "Coffee at nine", "Trip to France"):
            graph.remember(text)
        graph.flush()
    assert _models(db_path) == [("concepts-v1", 8, 3)]
    replacement = ConceptEmbedder("concepts-v2", 6)
    with open_graph(db_path, embedder=replacement) as graph:
        assert graph.stats()["pending_embeddings"] == 3
        results = graph.recall("latte")
        assert [r.memory.content for r in results] == ["Coffee at nine"]
        assert sum(replacement.calls) == 4  # three memories re-embedded, plus the query
    assert _models(db_path) == [("concepts-v2", 6, 3)]


def test_vectors_of_another_model_are_ignored_until_re_embedded(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder("concepts-v1", 8)) as graph:
        graph.remember("Drives an automobile")
        graph.flush()
    # Re-embedding deferred entirely: the old model's vectors must not answer in the new space.
    with open_graph(db_path, embedder=ConceptEmbedder("concepts-v2", 8), embed_per_recall=0) as graph:
        assert graph.recall("vehicle") == []
        graph.embed_pending()
        assert [r.memory.content for r in graph.recall("vehicle")] == ["Drives an automobile"]


def test_vectors_embedded_by_another_connection_are_found_at_the_next_recall(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder()) as reader, open_graph(db_path, embedder=ConceptEmbedder()) as writer:
        first = reader.remember("Our puppy chews shoes")
        assert [r.memory.id for r in reader.recall("canine")] == [first.id]
        second = writer.remember("The neighbour's hound barks at night")
        writer.flush()
        assert {r.memory.id for r in reader.recall("canine", touch=False)} == {first.id, second.id}


def test_a_forgotten_memory_is_not_found_through_its_vector(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder()) as graph:
        pet = graph.remember("Our puppy chews shoes")
        assert graph.recall("canine")
        graph.forget(pet.id)
        assert graph.recall("canine") == []


def test_an_embedder_returning_the_wrong_shape_is_an_error_and_stores_nothing(db_path):
    class Broken(ConceptEmbedder):
        def embed(self, texts):
            return np.zeros((len(texts), 3), dtype=np.float32)

    with open_graph(db_path, embedder=Broken()) as graph:
        graph.remember("anything")
        with pytest.raises(ValueError, match="shape"):
            graph.embed_pending()
        assert count_rows(graph, "graph_vectors") == 0


def test_the_local_minilm_model_finds_a_paraphrase(db_path):
    embeddings = pytest.importorskip("mnemo.embeddings")
    with open_graph(db_path, embedder=embeddings.MiniLMEmbedder()) as graph:
        pet = graph.remember("We adopted a small dog from the shelter")
        graph.remember("Quarterly taxes are due in April")
        results = graph.recall("new family pet puppy")
    assert results[0].memory.id == pet.id
    assert "vector" in results[0].channels


def test_with_nothing_written_since_the_last_check_a_recall_looks_for_no_pending_memory(db_path, monkeypatch):
    with open_graph(db_path, embedder=ConceptEmbedder()) as graph:
        graph.remember("Our puppy chews shoes")
        graph.flush()  # everything embedded, up to the table's latest memory

        def no_scan():
            raise AssertionError("looked for pending memories although nothing was written")

        monkeypatch.setattr(graph._engine, "snapshot", no_scan)
        assert graph.embed_pending() == 0
        assert graph.recall("canine", touch=False)


def test_a_memory_written_by_another_connection_is_embedded_after_a_quiet_check(db_path):
    with open_graph(db_path, embedder=ConceptEmbedder()) as reader, open_graph(db_path) as writer:
        reader.remember("Our puppy chews shoes")
        reader.flush()
        assert reader.embed_pending() == 0  # settled
        late = writer.remember("The neighbour's hound barks at night")  # no embedder: left pending
        assert reader.embed_pending() == 1
        assert late.id in {r.memory.id for r in reader.recall("canine", touch=False) if "vector" in r.channels}
