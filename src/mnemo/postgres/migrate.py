"""Copying a home's session archive into PostgreSQL: every scope, every session, every message, verified.

Message ids are kept (other records name messages by id: the graph's links to what a memory was said in),
so the target must not already hold *different* messages under the same ids; it may hold the same ones,
which is what makes a copy resumable: an interrupted run is simply run again, every row already there is
skipped, and the rest is copied. Rows are read from the SQLite file through a read-only connection (it is
never written) and written in batches, each its own transaction.

At the end both sides are compared: the number of sessions and messages, and a SHA-256 over every copied
field of every message in id order, computed the same way from each database. Message vectors are not
copied: they are derived, and the PostgreSQL archive computes its own when it has an embedder.
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

from .. import _db
from ..database import table_owner
from . import archive_schema
from .connection import Executor, PostgresDatabase, redact

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
    with _read_only(source) as conn:
        return conn.execute("SELECT count(*) FROM messages").fetchone()[0] if _archived(conn) else 0


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
            copied = present = 0
            last = 0
            while True:
                rows = conn.execute(
                    f"SELECT {', '.join(_MESSAGE_FIELDS)} FROM messages WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH)
                ).fetchall()
                if not rows:
                    break
                added = database.write(lambda ex, rows=rows: _copy_messages(ex, rows))
                copied += added
                present += len(rows) - added
                last = rows[-1][0]
                if progress is not None:
                    progress(len(rows))
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
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").fetchone() is not None


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
