"""How full text stays bounded on PostgreSQL: common words counted from the column's statistics, a word with
many matches proposing only its newest ones, in the graph and in the archive; and queries compiled from
phrases PostgreSQL stemmed, each phrase once."""

from __future__ import annotations

import psycopg

from mnemo.archive.search import MATCH_BUDGET
from mnemo.backends.postgres import graph as postgres_graph
from mnemo.backends.postgres.connection import Executor
from mnemo.backends.postgres.search import PostgresSearcher
from mnemo.backends.postgres.text_search import CONFIG, compile_tsquery
from mnemo.storage import open_archive, open_graph


def test_a_common_word_is_counted_from_the_column_statistics(postgres_url):
    with open_graph(postgres_url) as graph:
        graph.remember_many({"content": f"the user keeps note {n}"} for n in range(2000))
        graph.remember("a single kayak")
        engine = graph._engine
        graph._conn.execute("ANALYZE graph_memories")
        user, kayak = engine.count_matches(graph._conn, ['"user"', '"kayak"'], 5000)
        assert abs(user - 2000) <= 20
        assert kayak == 1


def test_a_word_with_many_matches_proposes_its_newest_and_a_rare_word_still_finds_an_old_one(postgres_url, monkeypatch):
    monkeypatch.setattr(postgres_graph, "PHRASE_WINDOW", 20)
    with open_graph(postgres_url) as graph:
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
        searcher = PostgresSearcher(conn, archive._terms, scope=archive.scope)
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


def test_a_query_is_put_together_as_postgresql_combines_its_phrases(postgres_url):
    cases = {
        '"walked" OR "dogs"': "phraseto_tsquery(%(c)s, 'walked') || phraseto_tsquery(%(c)s, 'dogs')",
        '"new york" AND "pizza"': "phraseto_tsquery(%(c)s, 'new york') && phraseto_tsquery(%(c)s, 'pizza')",
        '"cats" NOT "dogs" OR "birds"': "(phraseto_tsquery(%(c)s, 'cats') && !!phraseto_tsquery(%(c)s, 'dogs'))"
        " || phraseto_tsquery(%(c)s, 'birds')",
        '"e-mail" OR "runn"*': "phraseto_tsquery(%(c)s, 'e mail') || to_tsquery(%(c)s, 'runn:*')",
    }
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        open_archive(postgres_url).close()  # creates mnemo's text-search configuration
        executor = Executor(conn)
        for expression, expected in cases.items():
            compiled = compile_tsquery(executor, expression)
            same = conn.execute(
                f"SELECT CAST(%(q)s AS tsquery) = ({expected})", {"q": compiled, "c": CONFIG}
            ).fetchone()[0]
            assert same, (expression, compiled)


def test_phrases_compiled_before_are_not_sent_again(postgres_url):
    class Counting(Executor):
        statements = 0

        def execute(self, sql, params=()):
            Counting.statements += 1
            return super().execute(sql, params)

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        open_archive(postgres_url).close()
        executor, known = Counting(conn), {}
        compile_tsquery(executor, '"walked" OR "dogs" OR "home"', known)
        assert Counting.statements == 1  # three phrases, one round trip
        assert compile_tsquery(executor, '"dogs" AND "walked"', known) == "'dog' & 'walk'"
        assert Counting.statements == 1
