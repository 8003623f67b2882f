"""The session archive's tables, versioned through :func:`mnemo._db.migrate` (component ``archive``).

Messages are indexed twice where it matters: ``messages_fts`` (porter + unicode61, every message:
content, tool name and tool-call text) and ``messages_cjk`` (trigram, only messages containing CJK
text, which unicode61 cannot split into words). Both are external-content FTS5 tables kept in sync
by triggers, so ``rebuild`` can always regenerate them from ``messages``.
"""

from __future__ import annotations

import sqlite3

COMPONENT = "archive"

_V1 = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL DEFAULT 'cli',
    title TEXT,
    model TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    metadata TEXT
);
CREATE INDEX IF NOT EXISTS sessions_started ON sessions(started_at);
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent_session_id);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    parts TEXT,
    tool_name TEXT,
    tool_calls TEXT,
    tool_text TEXT,
    tool_call_id TEXT,
    extra TEXT,
    created_at REAL NOT NULL,
    has_cjk INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id);
CREATE INDEX IF NOT EXISTS messages_cjk_rows ON messages(id) WHERE has_cjk = 1;
"""


def _fts(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5("
        "content, tool_name, tool_text, content='messages', content_rowid='id', "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIEW IF NOT EXISTS messages_cjk_source AS SELECT id, content FROM messages WHERE has_cjk = 1")
    cjk_tokenizer = "trigram" if trigram_available(conn) else "unicode61"
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS messages_cjk USING fts5("
        f"content, content='messages_cjk_source', content_rowid='id', tokenize='{cjk_tokenizer}')"
    )


_TRIGGERS = """
    CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content, tool_name, tool_text)
        VALUES (new.id, new.content, new.tool_name, new.tool_text);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_text)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_text);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_text)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_text);
        INSERT INTO messages_fts(rowid, content, tool_name, tool_text)
        VALUES (new.id, new.content, new.tool_name, new.tool_text);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_cjk_insert AFTER INSERT ON messages WHEN new.has_cjk = 1 BEGIN
        INSERT INTO messages_cjk(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_cjk_delete AFTER DELETE ON messages WHEN old.has_cjk = 1 BEGIN
        INSERT INTO messages_cjk(messages_cjk, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_cjk_update_old AFTER UPDATE ON messages WHEN old.has_cjk = 1 BEGIN
        INSERT INTO messages_cjk(messages_cjk, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_cjk_update_new AFTER UPDATE ON messages WHEN new.has_cjk = 1 BEGIN
        INSERT INTO messages_cjk(rowid, content) VALUES (new.id, new.content);
    END;
    """

# Vectors of messages for the hybrid search's vector channel (only when the archive is given an embedder).
# ``seq`` only grows, so an in-memory index catches up by reading newer rows; model and dimension are stored
# so a change of model re-embeds instead of mixing vector spaces.
_VECTORS = """
    CREATE TABLE IF NOT EXISTS message_vectors (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        message_id INTEGER NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL
    );
    """

# Scopes (see mnemo.scope): every session belongs to one (user, agent, channel) triple, and every read
# is confined to the reader's. Sessions archived before scopes existed belong to the empty scope.
# Deliberately no index on the scope: given one, SQLite drove searches from all of a scope's sessions
# instead of from the few matched messages (100k messages: p50 10 ms -> 400 ms); checked per session row
# reached by its primary key, the scope costs nothing measurable.
_SCOPES = """
    ALTER TABLE sessions ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE sessions ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE sessions ADD COLUMN channel_id TEXT NOT NULL DEFAULT '';
    """

MIGRATIONS = [_V1, _fts, _TRIGGERS, _VECTORS, _SCOPES]

FTS_TABLES = ("messages_fts", "messages_cjk")


def trigram_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite build has FTS5's trigram tokenizer (3.34+); probed, not assumed."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._mnemo_trigram_probe USING fts5(x, tokenize='trigram')")
    except sqlite3.OperationalError:
        return False
    conn.execute("DROP TABLE temp._mnemo_trigram_probe")
    return True


def cjk_tokenizer(conn: sqlite3.Connection) -> str:
    """The tokenizer the CJK index was created with (``trigram`` or the ``unicode61`` fallback)."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_cjk'").fetchone()
    return "trigram" if row and "trigram" in row[0] else "unicode61"
