"""Copying a home's session archive and memory graph into PostgreSQL: every scope, every row, verified.

Message ids are kept (other records name messages by id: the graph's links to what a memory was said in),
so the target must not already hold *different* messages under the same ids; it may hold the same ones,
which is what makes a copy resumable: an interrupted run is simply run again, every row already there is
skipped, and the rest is copied. Rows are read from the SQLite file through a read-only connection (it is
never written) and written in batches, each its own transaction.

At the end both sides are compared: the number of sessions and messages, and a SHA-256 over every copied
field of every message in id order, computed the same way from each database. Message vectors are not
copied: they are derived, and the PostgreSQL archive computes its own when it has an embedder.

The graph is copied the same way (:func:`migrate_graph`): memories keep their ids and are inserted in their
``seq`` order (PostgreSQL numbers them anew, in the same order), then edges, vectors (so nothing needs
embedding again), the extraction records and links to archived messages, the markers that make one-time
imports run once, and the maintenance log; a scope's maintenance state keeps when its last pass ran, with
its cursors reset (they were SQLite's numbers: the next pass walks the scope once more, changing nothing
twice). The check at the end is a SHA-256 over every field of every memory in id order, and the counts of
edges and vectors.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from ... import _db
from ...database import table_owner
from ...scope import Scope
from . import archive_schema, graph_schema
from .connection import Executor, PostgresDatabase, redact
from .vectors import vector_text

BATCH = 2_000

_SESSION_FIELDS = (
    "id", "source", "title", "model", "started_at", "ended_at", "message_count", "tool_call_count", "metadata",
    "user_id", "agent_id", "channel_id",
)  # fmt: skip
_MESSAGE_FIELDS = (
    "id", "session_id", "role", "content", "parts", "tool_name", "tool_calls", "tool_text", "tool_call_id", "extra",
    "created_at", "has_cjk",
)  # fmt: skip


class MigrationConflict(_db.DatabaseError):
    """The target database holds other data under ids the copy needs; nothing more is written."""


@dataclass(frozen=True)
class MigrationReport:
    """What a copy did: rows added this run, rows found already there, and the verified totals."""

    target: str
    sessions_copied: int
    sessions_present: int
    messages_copied: int
    messages_present: int
    sessions: int
    messages: int
    sha256: str


def count_messages(source: Path) -> int:
    """How many messages the SQLite archive at ``source`` holds (for a progress bar)."""
    return _count(source, "messages")


def migrate_archive(source: Path, url: str, *, progress: Callable[[int], None] | None = None) -> MigrationReport:
    """Copy the archive in the SQLite file ``source`` (all scopes) into the PostgreSQL database at ``url``,
    resuming where an earlier copy stopped, and verify the result; ``progress(n)`` after each batch of
    messages. Raises :class:`MigrationConflict` when the target holds different rows under the same ids."""
    database = PostgresDatabase.shared(url)
    try:
        database.migrate(archive_schema.COMPONENT, archive_schema.MIGRATIONS, lambda t: table_owner(t) is not None)
        with _read_only(source) as conn:
            if not _archived(conn):
                return _report(url, 0, 0, 0, 0, 0, 0, _digest([]))
            sessions = conn.execute(f"SELECT {', '.join(_SESSION_FIELDS)}, parent_session_id FROM sessions ORDER BY rowid").fetchall()
            copied_sessions = database.write(lambda ex: _copy_sessions(ex, sessions))
            copied, present = _in_batches(
                conn, f"SELECT id, {', '.join(_MESSAGE_FIELDS)} FROM messages WHERE id > ? ORDER BY id LIMIT ?",
                lambda rows: database.write(lambda ex: _copy_messages(ex, rows)), progress,
            )  # fmt: skip
            database.write(_advance_ids)
            expected = _digest(conn.execute(f"SELECT {', '.join(_MESSAGE_FIELDS)} FROM messages ORDER BY id"))
            ids = [s[0] for s in sessions]
        with database.read() as executor:
            found_sessions = executor.execute("SELECT count(*) FROM sessions WHERE id = ANY(?)", (ids,)).fetchone()[0]
            actual = _digest(executor.stream(
                f"SELECT {', '.join(_MESSAGE_FIELDS)} FROM messages WHERE session_id = ANY(?) ORDER BY id", (ids,)
            ))  # fmt: skip
            found_messages = executor.execute("SELECT count(*) FROM messages WHERE session_id = ANY(?)", (ids,)).fetchone()[0]
        if actual != expected or found_sessions != len(sessions):
            raise _db.DatabaseError(
                f"the copy in {redact(url)} does not match the source after copying ({found_sessions} of"
                f" {len(sessions)} sessions, message checksum {actual[:12]} vs {expected[:12]}); run again to resume"
            )
        return _report(url, copied_sessions, len(sessions) - copied_sessions, copied, present, found_sessions,
                       found_messages, actual)  # fmt: skip
    finally:
        database.release()


_MEMORY_FIELDS = (
    "id", "content", "type", "importance", "created_at", "updated_at", "last_accessed_at", "access_count", "source",
    "subject", "user_id", "agent_id", "channel_id", "forgotten", "pinned", "base_importance", "decayed_at",
    "origin", "origin_detail",
)  # fmt: skip
# Rows copied as they are, skipped when already there (what makes a rerun resume): table, columns, conflict.
_KEYED = (
    ("graph_associations", ("source_id", "target_id", "relation", "weight", "created_at", "origin")),
    ("graph_meta", ("key", "value")),
    ("graph_extracted", ("user_id", "agent_id", "channel_id", "message_key", "session_id", "message_id", "memories",
                         "extracted_at")),
    ("graph_memory_messages", ("memory_id", "session_id", "message_id")),
    ("graph_review", ("id", "user_id", "agent_id", "channel_id", "kind", "payload", "digest", "origin", "origin_detail",
                      "findings", "created_at", "expires_at", "state", "decided_at", "outcome")),
)  # fmt: skip


@dataclass(frozen=True)
class GraphMigrationReport:
    """What a graph copy did, and the verified totals."""

    target: str
    memories_copied: int
    memories_present: int
    memories: int
    associations: int
    vectors: int
    sha256: str


def count_memories(source: Path) -> int:
    """How many memories the SQLite graph at ``source`` holds (for a progress bar)."""
    return _count(source, "graph_memories")


def migrate_curated(directory: Path, url: str, scope: Scope) -> int:
    """Copy the curated pair in ``directory`` (``MEMORY.md``, ``USER.md``, their history) into ``scope`` of the
    database at ``url`` (read as the store reads them, the files left as they are); a scope that already
    holds a pair there is left alone. Returns how many documents were written."""
    from ...curated.history import CuratedHistory
    from ...curated.storage import file_storage
    from .curated import COMPONENT, MIGRATIONS, copy_curated

    files = file_storage(directory)
    texts = {target: document.read_text() for target, document in files.documents.items() if document.read_bytes() is not None}
    records = CuratedHistory(directory).records()
    database = PostgresDatabase.shared(url)
    try:
        database.migrate(COMPONENT, MIGRATIONS, lambda t: table_owner(t) is not None)
        return database.write(lambda ex: copy_curated(ex, scope, texts, records)) if texts else 0
    finally:
        database.release()


def _in_batches(
    conn: sqlite3.Connection,
    select: str,
    copy: Callable[[list[tuple[Any, ...]]], int],
    progress: Callable[[int], None] | None,
) -> tuple[int, int]:
    """Copy the rows ``select`` reads (its first column the key it walks, left out of what ``copy`` gets) in
    batches of ``BATCH``; returns how many were copied and how many were there already."""
    copied = present = 0
    last = 0
    while rows := conn.execute(select, (last, BATCH)).fetchall():
        added = copy([tuple(row[1:]) for row in rows])
        copied += added
        present += len(rows) - added
        last = rows[-1][0]
        if progress is not None:
            progress(len(rows))
    return copied, present


def _count(source: Path, table: str) -> int:
    with _read_only(source) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] if _has(conn, table) else 0


def migrate_graph(source: Path, url: str, *, progress: Callable[[int], None] | None = None) -> GraphMigrationReport:
    """Copy the memory graph in the SQLite file ``source`` (all scopes) into the PostgreSQL database at ``url``,
    resuming where an earlier copy stopped, and verify it; ``progress(n)`` after each batch of memories.
    Raises :class:`MigrationConflict` when the target holds a different memory under one of the ids."""
    database = PostgresDatabase.shared(url)
    try:
        database.migrate(graph_schema.COMPONENT, graph_schema.MIGRATIONS, lambda t: table_owner(t) is not None)
        with _read_only(source) as conn:
            if not _has(conn, "graph_memories"):
                return GraphMigrationReport(redact(url), 0, 0, 0, 0, 0, _digest([]))
            copied, present = _in_batches(
                conn, f"SELECT seq, {', '.join(_MEMORY_FIELDS)} FROM graph_memories WHERE seq > ? ORDER BY seq LIMIT ?",
                lambda rows: database.write(lambda ex: _copy_memories(ex, rows)), progress,
            )  # fmt: skip
            for table, fields in _KEYED:
                _copy_keyed(conn, database, table, fields)
            _copy_vectors(conn, database)
            _copy_maintenance(conn, database)
            expected = _graph_totals(conn.execute)
            ids = [row[0] for row in conn.execute("SELECT id FROM graph_memories")]
        with database.read() as executor:
            actual = _graph_totals(executor.execute, ids)
        if actual != expected:
            raise _db.DatabaseError(
                f"the graph copy in {redact(url)} does not match the source ({actual[0]} of {expected[0]} memories,"
                f" {actual[1]} of {expected[1]} edges, {actual[2]} of {expected[2]} vectors, checksum"
                f" {actual[3][:12]} vs {expected[3][:12]}); run again to resume"
            )
        return GraphMigrationReport(redact(url), copied, present, *actual)
    finally:
        database.release()


def _copy_memories(executor: Executor, rows: Sequence[tuple[Any, ...]]) -> int:
    there = {row[0]: tuple(row[1:]) for row in executor.execute(
        "SELECT id, content, user_id, agent_id, channel_id FROM graph_memories WHERE id = ANY(?)", ([r[0] for r in rows],)
    ).fetchall()}  # fmt: skip
    fresh = []
    for row in rows:
        found = there.get(row[0])
        if found is None:
            fresh.append(row)
        elif found != (row[1], *row[10:13]):
            raise MigrationConflict(
                f"the target already holds a different memory with id {row[0]!r}; copy into an empty database"
                " (or one holding only an earlier copy of this home)"
            )
    if fresh:
        executor.executemany(
            f"INSERT INTO graph_memories ({', '.join(_MEMORY_FIELDS)}) VALUES ({', '.join('?' * len(_MEMORY_FIELDS))})",
            fresh,
        )
    return len(fresh)


def _copy_keyed(conn: sqlite3.Connection, database: PostgresDatabase, table: str, fields: Sequence[str]) -> None:
    columns = ", ".join(fields)
    cursor = conn.execute(f"SELECT {columns} FROM {table}")
    while rows := cursor.fetchmany(BATCH):
        database.write(lambda ex, rows=rows: ex.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(fields))}) ON CONFLICT DO NOTHING", rows
        ))  # fmt: skip


def _copy_vectors(conn: sqlite3.Connection, database: PostgresDatabase) -> None:
    from .graph import PostgresGraphVectors

    vectors = PostgresGraphVectors()
    models = conn.execute("SELECT DISTINCT model, dim FROM graph_vectors").fetchall()
    cursor = conn.execute(
        "SELECT v.memory_id, v.model, v.dim, v.vector, m.user_id, m.agent_id, m.channel_id FROM graph_vectors v"
        " JOIN graph_memories m ON m.id = v.memory_id ORDER BY v.seq"
    )

    def index(executor: Executor) -> None:
        for model, dim in models:
            vectors.ensure_index(executor, model, dim)

    database.write(index)
    while rows := cursor.fetchmany(BATCH):
        values = [
            (r[0], r[1], r[2], vector_text(np.frombuffer(r[3], dtype=np.float32)), *r[4:7]) for r in rows
        ]  # fmt: skip
        database.write(lambda ex, values=values: ex.executemany(
            "INSERT INTO graph_vectors (memory_id, model, dim, vector, user_id, agent_id, channel_id)"
            " VALUES (?, ?, ?, CAST(? AS vector), ?, ?, ?) ON CONFLICT (memory_id) DO NOTHING", values
        ))  # fmt: skip


def _copy_maintenance(conn: sqlite3.Connection, database: PostgresDatabase) -> None:
    states = conn.execute("SELECT user_id, agent_id, channel_id, last_pass_at FROM graph_maintenance").fetchall()
    log = conn.execute("SELECT at, memory_id, action, other_id, detail FROM graph_maintenance_log ORDER BY seq").fetchall()

    def copy(executor: Executor) -> None:
        executor.executemany(
            "INSERT INTO graph_maintenance (user_id, agent_id, channel_id, last_pass_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            states,
        )
        executor.executemany(
            "INSERT INTO graph_maintenance_log (at, memory_id, action, other_id, detail) SELECT ?, ?, ?, ?, ?"
            " WHERE NOT EXISTS (SELECT 1 FROM graph_maintenance_log WHERE at = ? AND memory_id = ? AND action = ?)",
            [(*row, *row[:3]) for row in log],
        )

    database.write(copy)


def _graph_totals(execute: Callable[..., Any], ids: list[str] | None = None) -> tuple[Any, ...]:
    """Memories, edges and vectors (of the memories ``ids`` only, when given: the target may hold more), and
    the checksum of every memory field in id order."""
    where = ""
    params: tuple[Any, ...] = ()
    if ids is not None:
        where, params = " WHERE m.id = ANY(?)", (ids,)
    edges = execute(
        f"SELECT count(*) FROM graph_associations a JOIN graph_memories m ON m.id = a.source_id{where}", params
    ).fetchone()[0]
    vectors = execute(f"SELECT count(*) FROM graph_vectors v JOIN graph_memories m ON m.id = v.memory_id{where}", params).fetchone()[0]
    rows = execute(f"SELECT {', '.join('m.' + f for f in _MEMORY_FIELDS)} FROM graph_memories m{where}", params).fetchall()
    # Sorted here: the two engines may collate text differently.
    return len(rows), edges, vectors, _digest(sorted(rows, key=lambda row: row[0]))


def _has(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _report(url: str, *numbers_and_digest: Any) -> MigrationReport:
    return MigrationReport(redact(url), *numbers_and_digest)


@contextmanager
def _read_only(source: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the source file: the copy never writes to it."""
    problem = _db.file_problem(source)
    if problem is not None:
        raise _db.DatabaseError(f"{source} {problem.text}; nothing copied")
    # With no write-ahead log beside it no process has the file open, and reading it as immutable keeps
    # SQLite from creating one: the copy leaves no file behind.
    immutable = "" if Path(f"{source}-wal").exists() else "&immutable=1"
    conn = _db.open_connection(source, f"file:{quote(str(source))}?mode=ro{immutable}", uri=True)
    try:
        yield conn
    finally:
        conn.close()


def _archived(conn: sqlite3.Connection) -> bool:
    return _has(conn, "messages")


def _copy_sessions(executor: Executor, sessions: Sequence[Sequence[Any]]) -> int:
    """Insert the sessions not there yet (parents linked afterwards, so order does not matter); refuse a
    session id the target gives to another scope."""
    existing = {row[0]: tuple(row[1:]) for row in executor.execute(
        "SELECT id, user_id, agent_id, channel_id FROM sessions WHERE id = ANY(?)", ([s[0] for s in sessions],)
    ).fetchall()}  # fmt: skip
    fresh = []
    for session in sessions:
        scope = tuple(session[9:12])
        if session[0] in existing:
            if existing[session[0]] != scope:
                raise MigrationConflict(f"session {session[0]!r} already exists in the target under another scope; nothing more copied")
            continue
        fresh.append(session)
    if fresh:
        columns = ", ".join(_SESSION_FIELDS)
        executor.executemany(
            f"INSERT INTO sessions ({columns}) VALUES ({', '.join('?' * len(_SESSION_FIELDS))})",
            [tuple(s[: len(_SESSION_FIELDS)]) for s in fresh],
        )
    linked = [(s[-1], s[0]) for s in sessions if s[-1] is not None]
    if linked:
        executor.executemany("UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL", linked)
    return len(fresh)


def _copy_messages(executor: Executor, rows: Sequence[Sequence[Any]]) -> int:
    ids = [row[0] for row in rows]
    there = {row[0]: row for row in executor.execute(
        f"SELECT {', '.join(_MESSAGE_FIELDS)} FROM messages WHERE id = ANY(?)", (ids,)
    ).fetchall()}  # fmt: skip
    fresh = []
    for row in rows:
        found = there.get(row[0])
        if found is None:
            fresh.append(row)
        elif _fields(found) != _fields(row):
            raise MigrationConflict(
                f"the target already holds a different message with id {row[0]}; copy into an empty database"
                " (or one holding only an earlier copy of this home)"
            )
    if fresh:
        executor.execute(
            "INSERT INTO messages (id, session_id, role, content, parts, tool_name, tool_calls, tool_text,"
            " tool_call_id, extra, created_at, has_cjk) SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[],"
            " ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::float8[], ?::integer[])",
            [list(column) for column in zip(*fresh)],
        )
    return len(fresh)


def _advance_ids(executor: Executor) -> None:
    # Copied rows carried their ids; new messages must be numbered after them.
    executor.execute(
        "SELECT setval(pg_get_serial_sequence('messages', 'id'), GREATEST((SELECT max(id) FROM messages), 1))"
    )


def _fields(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(int(v) if isinstance(v, bool) else v for v in row)


def _digest(rows: Iterable[Sequence[Any]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(_fields(row), ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()
