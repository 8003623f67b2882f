"""How the graph's full text stays bounded on PostgreSQL: common words counted from the column's statistics,
and a word with many matches proposing only its newest ones."""

from __future__ import annotations

from mnemo.graph import MemoryGraph
from mnemo.postgres import graph as postgres_graph


def test_a_common_word_is_counted_from_the_column_statistics(postgres_url):
    with MemoryGraph(postgres_url) as graph:
        graph.remember_many({"content": f"the user keeps note {n}"} for n in range(2000))
        graph.remember("a single kayak")
        engine = graph._engine
        graph._conn.execute("ANALYZE graph_memories")
        assert abs(engine.count_matches(graph._conn, '"user"', 5000) - 2000) <= 20
        assert engine.count_matches(graph._conn, '"kayak"', 5000) == 1


def test_a_word_with_many_matches_proposes_its_newest_and_a_rare_word_still_finds_an_old_one(postgres_url, monkeypatch):
    monkeypatch.setattr(postgres_graph, "PHRASE_WINDOW", 20)
    with MemoryGraph(postgres_url) as graph:
        old = graph.remember("an alpha note about the red kayak")
        graph.remember_many({"content": f"alpha note {n}"} for n in range(400))
        found = [r.memory.content for r in graph.recall("alpha", limit=5)]
        assert found and all(int(text.split()[-1]) >= 300 for text in found)  # the newest of the 400
        assert graph.recall("alpha kayak", limit=1)[0].memory.id == old.id
