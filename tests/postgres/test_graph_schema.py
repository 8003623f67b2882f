"""The graph's PostgreSQL schema: the per-scope tallies of sources and subjects follow every change to the
memories, including changes made outside mnemo, and an upgrade replaces an earlier release's trigger."""

from __future__ import annotations

import psycopg

from mnemo.storage import open_graph


def _tallies(url: str) -> dict[tuple[str, str], int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT field, value, memories FROM mnemo.graph_tallies").fetchall()
    return {(field, value): memories for field, value, memories in rows}


def _fill(url: str) -> str:
    """Two memories of one source about one subject; returns the id of the first."""
    with open_graph(url) as graph:
        first = graph.remember("Ana moved to Lisbon", source="chat-1", subject="Ana")
        graph.remember("Ana adopted a greyhound", source="chat-1", subject="Ana")
    return first.id


def test_tallies_count_the_memories_of_each_source_and_subject(postgres_url):
    _fill(postgres_url)
    assert _tallies(postgres_url) == {("source", "chat-1"): 2, ("subject", "Ana"): 2}


def test_a_change_made_outside_mnemo_keeps_the_tallies_in_step(postgres_url):
    first = _fill(postgres_url)
    # An operator's fix-up from psql, whose search path does not include mnemo's schema.
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE mnemo.graph_memories SET subject = 'Ana Lima' WHERE id = %s", (first,))
        conn.execute("DELETE FROM mnemo.graph_memories WHERE id <> %s", (first,))
    assert _tallies(postgres_url) == {("source", "chat-1"): 1, ("subject", "Ana Lima"): 1}


def test_an_upgrade_replaces_an_earlier_release_tally_trigger(postgres_url):
    first = _fill(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION mnemo.graph_tally() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN RAISE EXCEPTION 'the earlier release''s trigger ran'; END $$"
        )
        conn.execute("UPDATE mnemo.schema_versions SET version = 2 WHERE component = 'graph'")
    with open_graph(postgres_url) as graph:
        graph.remember("Ana plays the cello", source="chat-2", subject="Ana")
        graph.purge([first])
    assert _tallies(postgres_url) == {("source", "chat-1"): 1, ("source", "chat-2"): 1, ("subject", "Ana"): 2}
