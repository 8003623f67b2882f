"""How full text stays bounded on PostgreSQL: common words counted from the column's statistics, and a word
with many matches proposing only its newest ones, in the graph and in the archive."""

from __future__ import annotations

from mnemo.archive import open_archive
from mnemo.archive.search import MATCH_BUDGET
from mnemo.graph import MemoryGraph
from mnemo.postgres import graph as postgres_graph
from mnemo.postgres.search import PostgresSearcher


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


def _archive_of_common_word(postgres_url, count: int):
    archive = open_archive(postgres_url)
    session = archive.start_session()
    ids = archive.append_many(session, [{"role": "user", "content": f"deploy step {n}"} for n in range(count)])
    archive.append(session, {"role": "user", "content": "a single kayak trip"})
    with archive._reading() as conn:
        conn.execute("ANALYZE messages")
    return archive, ids


def test_the_archive_estimates_a_word_the_statistics_call_common_instead_of_probing_it(postgres_url):
    archive, ids = _archive_of_common_word(postgres_url, 3 * MATCH_BUDGET)
    with archive, archive._reading() as conn:
        searcher = PostgresSearcher(conn, archive._terms)
        count, start = searcher._frequency('"deploy"')
        assert abs(count - len(ids)) <= len(ids) * 0.05
        assert abs((ids[-1] + 1 - start) - MATCH_BUDGET) <= MATCH_BUDGET * 0.1  # its newest ~500 matches
        assert searcher._probe('"deploy"') == []
        assert searcher._frequency('"kayak"') == (1.0, None)  # rare: probed and counted exactly


def test_a_search_for_a_common_word_finds_its_newest_matches_and_a_rare_word_its_old_one(postgres_url):
    archive, ids = _archive_of_common_word(postgres_url, 3 * MATCH_BUDGET)
    with archive:
        newest = archive.search_messages("deploy", limit=5, sort="newest")
        assert [hit.message.id for hit in newest] == ids[-1:-6:-1]
        assert all(hit.message.id >= ids[-MATCH_BUDGET - 100] for hit in archive.search_messages("deploy", limit=5))
        [kayak] = archive.search_messages("kayak trip")
        assert kayak.message.content == "a single kayak trip"
