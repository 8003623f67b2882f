"""The in-memory vector index catches up incrementally and stays exact across scopes and processes."""

from __future__ import annotations

import pytest

from mnemo import _db
from mnemo.embeddings.queries import QueryVectors
from mnemo.graph import MemoryGraph, Scope
from mnemo.graph.vectors import VectorCache
from mnemo.storage import open_graph

from ._support import ConceptEmbedder


@pytest.fixture
def db_path(sqlite_path):
    """Vector files and the in-process vector cache are SQLite's (on PostgreSQL, pgvector searches)."""
    return sqlite_path



def _vector_hits(graph: MemoryGraph, query: str) -> set[str]:
    return {r.memory.id for r in graph.recall(query, touch=False) if "vector" in r.channels}


def test_a_new_vector_is_found_after_another_scopes_newer_vectors_were_skipped(db_path):
    alice = Scope(user_id="alice")
    with open_graph(db_path, scope=alice, embedder=ConceptEmbedder()) as graph:
        first = graph.remember("Our puppy chews shoes")
        bob = graph.with_scope(Scope(user_id="bob"))
        bob.remember("Bob's hound sleeps all day")
        bob.flush()
        assert _vector_hits(graph, "canine") == {first.id}
        second = graph.remember("A canine trainer visits on Mondays")
        graph.flush()
        assert _vector_hits(graph, "dog") == {first.id, second.id}


def test_another_process_vectors_for_this_scope_appear_after_its_other_scope_writes(db_path):
    alice, bob = Scope(user_id="alice"), Scope(user_id="bob")
    with (
        open_graph(db_path, scope=alice, embedder=ConceptEmbedder()) as reader,
        open_graph(db_path, scope=alice, embedder=ConceptEmbedder()) as writer,
    ):
        reader.remember("Our puppy chews shoes")
        assert reader.recall("canine")
        other = writer.with_scope(bob)
        other.remember("Bob's hound sleeps all day")
        other.flush()
        assert len(_vector_hits(reader, "canine")) == 1
        late = writer.remember("The hound next door howls")
        writer.flush()
        assert late.id in _vector_hits(reader, "canine")


def _prefetched(cache: VectorCache, conn, embedder: ConceptEmbedder, text: str, k: int = 10):
    probe = QueryVectors().start(embedder, text)
    cache.prefetch(conn, Scope(), embedder, probe, k)
    return probe.result()


def test_a_prefetched_search_returns_what_a_direct_search_finds(db_path):
    embedder = ConceptEmbedder()
    with open_graph(db_path, embedder=embedder) as graph:
        graph.remember("Our puppy chews shoes")
        graph.remember("The hound next door howls")
        graph.remember("Espresso after lunch")
        graph.flush()
    conn = _db.connect(db_path)
    try:
        cache = VectorCache()
        probe = _prefetched(cache, conn, embedder, "canine")
        assert cache.search(conn, Scope(), embedder, probe, 2) == VectorCache().search(conn, Scope(), embedder, probe, 2)
    finally:
        conn.close()


def test_a_prefetched_search_is_not_used_once_new_vectors_arrived(db_path):
    embedder = ConceptEmbedder()
    with open_graph(db_path, embedder=embedder) as graph:
        first = graph.remember("Our puppy chews shoes")
        graph.flush()
        conn = _db.connect(db_path)
        try:
            cache = VectorCache()
            probe = _prefetched(cache, conn, embedder, "canine")
            second = graph.remember("The hound next door howls")
            graph.flush()
            assert {hit for hit, _ in cache.search(conn, Scope(), embedder, probe, 10)} == {first.id, second.id}
        finally:
            conn.close()


def test_a_prefetched_search_for_another_probe_is_not_used(db_path):
    embedder = ConceptEmbedder()
    with open_graph(db_path, embedder=embedder) as graph:
        pet = graph.remember("Our puppy chews shoes")
        car = graph.remember("Drives an automobile")
        graph.flush()
    conn = _db.connect(db_path)
    try:
        cache = VectorCache()
        _prefetched(cache, conn, embedder, "canine")
        other = embedder.embed(["vehicle"])
        assert cache.search(conn, Scope(), embedder, other, 1)[0][0] == car.id != pet.id
    finally:
        conn.close()
