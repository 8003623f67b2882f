"""Curated memory in PostgreSQL (``curated_backend = "postgres"``): ``MEMORY.md`` and ``USER.md`` as rows, so
every host sharing the database shares one curated pair per home scope (see
:attr:`mnemo.config.Settings.curated_scope`).

:class:`~mnemo.curated.MemoryStore` keeps its exact semantics (frozen snapshot, limits, substring and id
edits, refusal, history); only where the text lives changes. A document's :meth:`~PostgresDocument.locked`
block is one transaction holding an advisory lock on that scope and target: the store re-reads the row inside
it, the history record and the new text are written in it, and the commit makes both durable at once. Two
hosts editing the same target run one after the other, each seeing the other's write, so neither loses an
update. A row that is not valid text can never occur (the column is ``text``), so the file backend's "cannot
read it" refusal has no counterpart here; text edited into a shape a rewrite would change is saved to
``curated_backups`` before a replace or remove is refused, as the file backend saves a ``.bak`` copy.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ...curated.history import HistoryRecord
from ...curated.storage import FILENAMES, CuratedStorage
from ...database import table_owner
from ...scope import Scope
from .connection import Executor, PostgresDatabase, Session, redact

COMPONENT = "curated"

_V1 = """
CREATE TABLE curated_documents (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    target TEXT NOT NULL CHECK (target IN ('memory', 'user')),
    text TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (user_id, agent_id, channel_id, target)
);
CREATE TABLE curated_history (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    target TEXT NOT NULL,
    operation TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    origin TEXT NOT NULL
);
CREATE INDEX curated_history_scope ON curated_history (user_id, agent_id, channel_id, target, seq);
CREATE TABLE curated_backups (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    target TEXT NOT NULL,
    saved_at DOUBLE PRECISION NOT NULL,
    text TEXT NOT NULL
);
"""

MIGRATIONS = [_V1]
_SCOPE = "user_id = ? AND agent_id = ? AND channel_id = ?"


class _Connection:
    """The storage's one connection, shared by both documents and the history, and a lock that keeps their
    use to one thread at a time (a store serialises its own edits; this covers reads beside them)."""

    def __init__(self, url: str, scope: Scope) -> None:
        self.url, self.scope = url, scope
        self.database = PostgresDatabase.shared(url)
        try:
            self.database.migrate(COMPONENT, MIGRATIONS, lambda t: table_owner(t) is not None)
            self.session: Session = self.database.session()
        except BaseException:
            self.database.release()
            raise
        self.lock = threading.RLock()
        self._closed = False

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
            try:
                self.session.close()
            finally:
                self.database.release()


class PostgresDocument:
    """One target's text in ``curated_documents`` (a :class:`~mnemo.curated.storage.Document`)."""

    def __init__(self, connection: _Connection, target: str) -> None:
        self._connection = connection
        self.target = target
        scope = connection.scope
        self.path = f"{redact(connection.url)} curated_documents[{scope.user_id or '-'}]/{FILENAMES[target]}"

    def _key(self) -> tuple[str, ...]:
        return (*self._connection.scope.as_params(), self.target)

    def read_bytes(self) -> bytes | None:
        with self._connection.lock:
            row = self._connection.session.execute(
                f"SELECT text FROM curated_documents WHERE {_SCOPE} AND target = ?", self._key()
            ).fetchone()
        return None if row is None else row[0].encode("utf-8")

    def read_text(self) -> str:
        raw = self.read_bytes()
        return "" if raw is None else raw.decode("utf-8")

    @contextmanager
    def locked(self) -> Iterator[None]:
        lock = "mnemo:curated:" + "\x1f".join(self._key())
        with self._connection.lock, self._connection.session.transaction([lock]):
            yield

    def write_text(self, text: str) -> None:
        self._connection.session.execute(
            "INSERT INTO curated_documents (user_id, agent_id, channel_id, target, text, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, agent_id, channel_id, target)"
            " DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
            (*self._key(), text, time.time()),
        )

    def backup(self, raw: bytes) -> str:
        text = raw.decode("utf-8")
        session = self._connection.session
        row = session.execute(
            f"SELECT seq FROM curated_backups WHERE {_SCOPE} AND target = ? AND text = ?", (*self._key(), text)
        ).fetchone()
        if row is None:  # a retried refusal reuses the copy it saved
            row = session.execute(
                "INSERT INTO curated_backups (user_id, agent_id, channel_id, target, saved_at, text)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
                (*self._key(), time.time(), text),
            ).fetchone()
        return f"{redact(self._connection.url)} curated_backups seq {row[0]}"


class PostgresHistory:
    """The history of one scope's pair in ``curated_history`` (a :class:`~mnemo.curated.storage.History`)."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    def append(
        self, target: str, operation: str, before: Sequence[str], after: Sequence[str], origin: Mapping[str, Any] | None
    ) -> HistoryRecord:
        record = HistoryRecord(
            "h" + secrets.token_hex(4), time.time(), target, operation, tuple(before), tuple(after), dict(origin or {})
        )
        # Inside the document's transaction: the record commits with the text it explains, or neither does.
        self._connection.session.execute(
            "INSERT INTO curated_history (id, user_id, agent_id, channel_id, target, operation, at, before, after, origin)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, *self._connection.scope.as_params(), target, operation, record.time,
             json.dumps(record.before, ensure_ascii=False), json.dumps(record.after, ensure_ascii=False),
             json.dumps(record.origin, ensure_ascii=False, default=str)),
        )  # fmt: skip
        return record

    def records(self, target: str | None = None) -> list[HistoryRecord]:
        where, params = _SCOPE, list(self._connection.scope.as_params())
        if target is not None:
            where += " AND target = ?"
            params.append(target)
        with self._connection.lock:
            rows = self._connection.session.execute(
                f"SELECT id, at, target, operation, before, after, origin FROM curated_history WHERE {where} ORDER BY seq",
                params,
            ).fetchall()
        return [_record(row) for row in rows]

    def get(self, record_id: str) -> HistoryRecord | None:
        with self._connection.lock:
            row = self._connection.session.execute(
                f"SELECT id, at, target, operation, before, after, origin FROM curated_history WHERE {_SCOPE} AND id = ?",
                (*self._connection.scope.as_params(), record_id),
            ).fetchone()
        return None if row is None else _record(row)


def _record(row: Any) -> HistoryRecord:
    return HistoryRecord(
        row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), tuple(json.loads(row[5])), json.loads(row[6])
    )


def postgres_storage(url: str, scope: Scope) -> CuratedStorage:
    """The curated pair of ``scope`` in the PostgreSQL database at ``url`` (its tables made on first use)."""
    connection = _Connection(url, scope)
    documents = {target: PostgresDocument(connection, target) for target in FILENAMES}
    return CuratedStorage(documents, PostgresHistory(connection), connection.close)


def copy_curated(executor: Executor, scope: Scope, texts: Mapping[str, str], records: Sequence[HistoryRecord]) -> int:
    """Put a home's curated pair and its history into ``scope`` of the database, unless that scope already
    holds a pair (a rerun, or another host's): returns how many documents were written."""
    key = scope.as_params()
    if executor.execute(f"SELECT 1 FROM curated_documents WHERE {_SCOPE} LIMIT 1", key).fetchone() is not None:
        return 0
    now = time.time()
    executor.executemany(
        "INSERT INTO curated_documents (user_id, agent_id, channel_id, target, text, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [(*key, target, text, now) for target, text in texts.items()],
    )
    executor.executemany(
        "INSERT INTO curated_history (id, user_id, agent_id, channel_id, target, operation, at, before, after, origin)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        [
            (r.id, *key, r.target, r.operation, r.time, json.dumps(r.before, ensure_ascii=False),
             json.dumps(r.after, ensure_ascii=False), json.dumps(dict(r.origin), ensure_ascii=False, default=str))
            for r in records
        ],
    )  # fmt: skip
    return len(texts)
