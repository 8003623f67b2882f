"""SQLite conventions shared by the session archive and the memory graph.

One database file (``mnemo.db``, see :mod:`mnemo.database`) serves several processes at once (a CLI, a gateway, cron jobs), so
every connection is opened the same way and every write goes through :func:`write_transaction`:
``BEGIN IMMEDIATE`` takes the write lock up front (no deadlock-prone lock upgrades), the busy timeout
absorbs short waits, and jittered retries absorb the rest. Schemas are versioned per component and
migrated forward only.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from .errors import MnemoError

log = logging.getLogger("mnemo.db")

BUSY_TIMEOUT_MS = 5_000
_RETRIES = 8


class DatabaseError(MnemoError):
    """The database could not be opened, migrated or written."""


class DatabaseDamaged(DatabaseError):
    """The database file exists but is not a whole SQLite database; mnemo leaves it untouched."""


SQLITE_HEADER = b"SQLite format 3\x00"
_HEADER_BYTES = 100


class FileProblem(NamedTuple):
    """Why a database file cannot be opened: ``kind`` is one of ``not-a-file``, ``unreadable``,
    ``not-sqlite``, ``truncated``; ``text`` says it in words ("is truncated (...)")."""

    kind: str
    text: str


class Connection(sqlite3.Connection):
    """An SQLite connection that this process counts among the open ones of its file.

    Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's included
    (SQLite's own layer defers such closes; a plain ``open()`` and ``close()`` does not). So the header
    check of :func:`file_problem` reads a file only while no connection of this process has it open:
    once, a header read beside a live connection let two connections of one process write the same
    database unlocked, losing rows and corrupting its full-text index.
    """

    file_key: tuple[int, int] | None = None

    def close(self) -> None:
        _live.discard(self)
        super().close()


_live: weakref.WeakSet[Connection] = weakref.WeakSet()


def open_connection(path: str | Path, target: str | None = None, **kwargs: Any) -> Connection:
    """``sqlite3.connect(target or path, **kwargs)`` as a :class:`Connection` counted as holding the file at
    ``path`` (every connection to a database file is opened here, so :func:`file_problem` knows)."""
    conn = sqlite3.connect(target if target is not None else path, factory=Connection, **kwargs)
    try:
        st = os.stat(path)
        conn.file_key = (st.st_dev, st.st_ino)
    except OSError:
        conn.file_key = None  # no file (yet): nothing a header read could unlock
    _live.add(conn)
    return conn


def _open_here(path: Path) -> bool:
    """Whether a connection of this process has the file at ``path`` open."""
    try:
        st = path.stat()
    except OSError:
        return False
    return any(conn.file_key == (st.st_dev, st.st_ino) for conn in list(_live))


def file_problem(path: str | Path) -> FileProblem | None:
    """Why the file at ``path`` cannot be opened as a database without risk, or None if it can.

    Read from the file's header only (no SQLite connection, nothing written): not a regular file, not
    an SQLite database, or shorter than the size its header records (cut off by a crash or a copy).
    A missing or empty file is fine: SQLite creates the database in it.
    """
    path = Path(path)
    try:
        if not path.exists():
            return None
        if not path.is_file():
            return FileProblem("not-a-file", "is not a regular file")
        if _open_here(path):
            return None  # SQLite has it open and locked in this process; a plain read would drop the locks
        with path.open("rb") as handle:
            header = handle.read(_HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        return FileProblem("unreadable", f"cannot be read ({exc.strerror or exc})")
    if not header:
        return None
    if not header.startswith(SQLITE_HEADER):
        return FileProblem("not-sqlite", "is not an SQLite database")
    if len(header) < _HEADER_BYTES:
        return FileProblem("truncated", f"is truncated ({size} bytes, shorter than the database header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count is valid only when written with the current change counter (SQLite's rule);
    # a pending write-ahead log or journal may still restore the rest, so SQLite decides then.
    counted = pages and header[24:28] == header[92:96]
    pending = any(Path(f"{path}{suffix}").exists() and Path(f"{path}{suffix}").stat().st_size for suffix in ("-wal", "-journal"))
    if counted and not pending and size < pages * page_size:
        return FileProblem("truncated", f"is truncated ({size:,} bytes; its header records {pages * page_size:,})")
    return None


Migration = str | Callable[[sqlite3.Connection], None]


def connect(path: str | Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` with mnemo's settings: WAL (or a logged fallback), foreign keys, busy timeout.

    The connection is in autocommit mode; group writes with :func:`write_transaction`.
    It may be shared between threads, but only under the caller's own lock.
    """
    path = Path(path)
    problem = file_problem(path)
    if problem is not None:
        raise DatabaseDamaged(f"{path} {problem.text}; mnemo left it untouched")
    conn: sqlite3.Connection | None = None
    try:
        if readonly:
            conn = open_connection(path, f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = open_connection(path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if not readonly:
            mode = _journal_mode_wal(conn)
            if str(mode).lower() != "wal":
                # Network and some container filesystems cannot share WAL's memory map; a rollback
                # journal is slower under concurrency but still correct.
                log.warning("%s: WAL unavailable (journal_mode=%s); using a rollback journal", path, mode)
                conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("PRAGMA synchronous = NORMAL" if str(mode).lower() == "wal" else "PRAGMA synchronous = FULL")
    except (sqlite3.DatabaseError, OSError) as exc:
        if conn is not None:
            conn.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise DatabaseError(f"cannot open database {path}: {reason}") from exc
    return conn


_CLOSING_BUSY_MS = 250


def close(conn: sqlite3.Connection) -> None:
    """Fold the write-ahead log into the database file, then close ``conn``.

    SQLite does this only in the last connection to close, and two connections closing at once (the
    archive and the graph of one session) can each see the other still open: then the log kept
    everything written, the database file alone was stale, and a copy of it lost data. A reader in
    another process may keep the log in use; the wait for it is short and a busy log stays as it is.
    """
    try:
        conn.execute(f"PRAGMA busy_timeout = {_CLOSING_BUSY_MS}")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error as exc:
        log.debug("checkpoint on close skipped: %s", exc)
    finally:
        conn.close()


def _journal_mode_wal(conn: sqlite3.Connection) -> str:
    # Two processes opening a database that does not exist yet race to switch it to WAL, and SQLite
    # answers the loser "database is locked" without calling the busy handler: retry like a write.
    for attempt in range(_RETRIES):
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == _RETRIES - 1:
                raise
            time.sleep(random.uniform(0.005, 0.05) * (2**attempt))
    raise AssertionError("unreachable")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, retrying the begin with jittered backoff while another
    process holds the write lock; rolls back on any exception.

    Inside a write transaction already open on ``conn`` (several writes grouped into one), this is a
    savepoint instead: its own work is undone on error, and everything lands with the outer commit.
    """
    if conn.in_transaction:
        conn.execute("SAVEPOINT mnemo_nested")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK TO mnemo_nested")
            conn.execute("RELEASE mnemo_nested")
            raise
        else:
            conn.execute("RELEASE mnemo_nested")
        return
    for attempt in range(_RETRIES):
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == _RETRIES - 1:
                raise DatabaseError(f"cannot start a write: {exc}") from exc
            time.sleep(random.uniform(0.005, 0.05) * (2**attempt))
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


_migrate_lock = threading.Lock()


def migrate(conn: sqlite3.Connection, component: str, migrations: Sequence[Migration]) -> int:
    """Bring ``component``'s schema to ``len(migrations)``, applying only the steps not yet applied.

    Each step runs in its own write transaction together with the version bump, so a crash leaves the
    schema at a whole version. A database newer than this code is refused rather than guessed at.
    Returns the version now in force.
    """
    with _migrate_lock, write_transaction(conn):
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        row = conn.execute("SELECT version FROM schema_versions WHERE component = ?", (component,)).fetchone()
        current = row[0] if row else 0
        if current > len(migrations):
            raise DatabaseError(
                f"{component} schema is at version {current}, newer than this mnemo knows ({len(migrations)})"
            )
        for version in range(current + 1, len(migrations) + 1):
            step = migrations[version - 1]
            if isinstance(step, str):
                for statement in _statements(step):
                    conn.execute(statement)
            else:
                step(conn)
            conn.execute(
                "INSERT INTO schema_versions (component, version) VALUES (?, ?)"
                " ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                (component, version),
            )
        return len(migrations)


def _statements(script: str) -> Iterator[str]:
    # executescript() would COMMIT our transaction, so split the script on complete statements
    # (a trigger body holds semicolons of its own, hence complete_statement rather than split).
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n\t;"):
                yield buffer
            buffer = ""
