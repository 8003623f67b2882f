"""How rare a word is, on PostgreSQL, where other scopes share the archive: its bounded probes read only the
reader's matches, so a word another user writes past the probe's budget is still counted among the reader's own
messages; what a word too common to probe weighs is the table's share, counted against the reader's messages."""

from __future__ import annotations

from mnemo.archive.search import MATCH_BUDGET
from mnemo.backends.postgres.search import PostgresSearcher
from mnemo.scope import Scope
from mnemo.storage import open_archive


def _conversation(archive, texts: list[str]) -> list[int]:
    return archive.append_many(archive.start_session(), [{"role": "user", "content": text} for text in texts])


def _bob_writes(postgres_url, texts: list[str]) -> None:
    with open_archive(postgres_url, scope=Scope("bob")) as bob:
        _conversation(bob, texts)


def test_a_word_another_scope_writes_past_the_probes_budget_is_counted_among_the_readers_messages(postgres_url):
    _bob_writes(postgres_url, [f"walrus sighting {n}" for n in range(MATCH_BUDGET + 100)])
    with open_archive(postgres_url, scope=Scope("alice")) as alice:
        _conversation(alice, ["walrus notes", "tangerine notes", "tangerine again", "ferry notes"])
        with alice._reading() as conn:
            searcher = PostgresSearcher(conn, alice._terms, scope=alice.scope)
            assert searcher._frequency('"walrus"') == (1.0, None)
        assert alice.search_messages("walrus or tangerine", limit=1)[0].message.content == "walrus notes"


def test_session_evidence_counts_the_readers_sessions_and_messages(postgres_url):
    _bob_writes(postgres_url, [f"note {n}" for n in range(30)])
    with open_archive(postgres_url, scope=Scope("alice")) as alice:
        _conversation(alice, ["one", "two", "three"])
        _conversation(alice, ["four"])
        with alice._reading() as conn:
            assert PostgresSearcher(conn, alice._terms, scope=alice.scope)._totals() == (2, 4)


def test_a_word_too_common_to_probe_weighs_the_tables_share_of_the_readers_messages(postgres_url):
    common = 3 * MATCH_BUDGET
    _bob_writes(postgres_url, [f"deploy step {n}" for n in range(common)])
    with open_archive(postgres_url, scope=Scope("alice")) as alice:
        _conversation(alice, ["deploy notes", "kayak notes"])
        with alice._reading() as conn:
            conn.execute("ANALYZE messages")
            searcher = PostgresSearcher(conn, alice._terms, scope=alice.scope)
            count, _ = searcher._frequency('"deploy"')
            assert searcher._probe('"deploy"') == []  # the statistics spared the probe
            assert abs(count - 2 * (common + 1) / (common + 2)) <= 0.1  # nearly every message: both of alice's
