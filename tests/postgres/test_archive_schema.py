"""The archive on PostgreSQL: every message carries its session's scope and source, so full-text search
filters on the message alone, an upgraded database fills them in for the messages it already holds, and a
search takes one connection from the pool for all its steps."""

from __future__ import annotations

import psycopg
import pytest

from mnemo.scope import Scope
from mnemo.storage import open_archive

_COPIED = "user_id, agent_id, channel_id, source"


def _messages(url: str) -> dict[str, tuple[str, ...]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT content, {_COPIED} FROM mnemo.messages").fetchall()
    return {content: tuple(rest) for content, *rest in rows}


def _fill(url: str) -> None:
    """Two scopes' sessions, one of them hidden from default searches (a subagent's)."""
    with open_archive(url, scope=Scope("ana")) as ana:
        ana.append(ana.start_session("ana-1"), {"role": "user", "content": "the kestrel nests on the tower"})
        ana.append(
            ana.start_session("ana-2", source="subagent"), {"role": "user", "content": "kestrel survey by a helper"}
        )
    with open_archive(url, scope=Scope("ben", "bot", "slack")) as ben:
        ben.append(
            ben.start_session("ben-1", source="slack"), {"role": "user", "content": "a kestrel hovered over ben"}
        )


def _found(url: str, scope: Scope, **options: object) -> set[str]:
    with open_archive(url, scope=scope) as archive:
        return {hit.message.content for hit in archive.search_messages("kestrel", context=0, **options)}


def test_a_message_carries_its_session_scope_and_source(postgres_url):
    _fill(postgres_url)
    assert _messages(postgres_url) == {
        "the kestrel nests on the tower": ("ana", "", "", "cli"),
        "kestrel survey by a helper": ("ana", "", "", "subagent"),
        "a kestrel hovered over ben": ("ben", "bot", "slack", "slack"),
    }


def test_full_text_search_keeps_to_the_scope_and_hides_helper_sessions(postgres_url):
    _fill(postgres_url)
    assert _found(postgres_url, Scope("ana")) == {"the kestrel nests on the tower"}
    assert _found(postgres_url, Scope("ana"), include_hidden=True) == {
        "the kestrel nests on the tower",
        "kestrel survey by a helper",
    }
    assert _found(postgres_url, Scope("ben", "bot", "slack")) == {"a kestrel hovered over ben"}
    assert _found(postgres_url, Scope("ben")) == set()


def test_an_upgrade_gives_earlier_messages_their_session_scope(postgres_url):
    _fill(postgres_url)
    expected = _messages(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # The database as the release before left it: messages without their session's columns.
        conn.execute("DROP FUNCTION mnemo.message_session() CASCADE")
        conn.execute(
            "ALTER TABLE mnemo.messages DROP COLUMN user_id, DROP COLUMN agent_id, DROP COLUMN channel_id,"
            " DROP COLUMN source"
        )
        conn.execute("UPDATE mnemo.schema_versions SET version = 4 WHERE component = 'archive'")
    assert _found(postgres_url, Scope("ben", "bot", "slack")) == {"a kestrel hovered over ben"}
    assert _messages(postgres_url) == expected
    assert _found(postgres_url, Scope("ana")) == {"the kestrel nests on the tower"}


def test_a_search_reads_through_one_pooled_connection(postgres_url, monkeypatch):
    # Each connection taken from the pool is checked with a round trip; a search has about eight steps.
    _fill(postgres_url)
    with open_archive(postgres_url, scope=Scope("ana")) as archive:
        taken = []
        read = type(archive._db).read
        monkeypatch.setattr(type(archive._db), "read", lambda database: taken.append(1) or read(database))
        assert [group.root.id for group in archive.search("kestrel tower")] == ["ana-1"]
        assert archive.search_messages("kestrel")
        assert len(taken) == 2


def test_a_message_for_a_missing_session_is_refused_by_the_foreign_key(postgres_url):
    _fill(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn, pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute(
            "INSERT INTO mnemo.messages (session_id, role, content, created_at) VALUES ('no-such-session', 'user', 'x', 0)"
        )
