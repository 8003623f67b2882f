"""Homes as other programs and older mnemo versions leave them: Hermes Agent's ``state.db`` and a mnemo 0.1
home whose database is still called ``state.db``."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from mnemo.storage import open_graph


def make_hermes_state_db(path: Path) -> bytes:
    """A stand-in for Hermes Agent's ``state.db`` at ``path``: its own ``sessions`` / ``messages`` tables
    (names mnemo's archive shares), a full-text index, a version table of its own, some rows, in WAL mode,
    checkpointed and closed. Returns its bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        PRAGMA journal_mode = WAL;
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (4);
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
            started_at REAL NOT NULL, ended_at REAL, message_count INTEGER DEFAULT 0
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
            role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
            timestamp REAL NOT NULL, token_count INTEGER
        );
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
        INSERT INTO sessions VALUES ('h-1', 'cli', 'hermes-user', 'hermes-3', 1700000000, 1700000100, 2);
        INSERT INTO messages (session_id, role, content, timestamp) VALUES
            ('h-1', 'user', 'hermes remembers the kiwi project', 1700000001),
            ('h-1', 'assistant', 'Noted: the kiwi project ships in May.', 1700000002);
        INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
        """
    )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.read_bytes()


def digest(path: Path) -> str:
    """The file's SHA-256, to show it unchanged."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_mnemo_01_home(home: Path) -> Path:
    """A home as mnemo 0.1 left it: ``state.db`` with the archive at schema 4 (before scopes) and the graph,
    holding one session ("old", about the quokka migration) and one memory (the quokka service)."""
    from mnemo import _db
    from mnemo.archive import schema as archive_schema

    home.mkdir(parents=True, exist_ok=True)
    conn = _db.connect(home / "state.db")
    _db.migrate(conn, archive_schema.COMPONENT, archive_schema.MIGRATIONS[:4])
    conn.execute("INSERT INTO sessions (id, source, started_at, message_count) VALUES ('old', 'cli', 1700000000, 1)")
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES"
        " ('old', 'user', 'the quokka migration is done', 1700000001)"
    )
    with open_graph(conn) as graph:
        graph.remember("The quokka service moved to Frankfurt")
    conn.close()
    return home
