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

from ...curated.history import HistoryRecord, HistoryReplay
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

# History rows keep what a write changed (mnemo.curated.history): the edits, and the parent record they continue
# from or the entries before in full; rows of the first version keep before and after whole, and still read.
_V2 = """
ALTER TABLE curated_history ALTER COLUMN before DROP NOT NULL, ALTER COLUMN after DROP NOT NULL,
    ADD COLUMN edits TEXT, ADD COLUMN parent TEXT;
"""

MIGRATIONS = [_V1, _V2]
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
        # Inside the document's transaction, under its lock: no other write to this target can come between
        # the rows read here and the one inserted, which commits with the text it explains, or neither does.
        key = self._connection.scope.as_params()
        replay = HistoryReplay()
        for row in self._connection.session.execute(
            f"SELECT {_COLUMNS} FROM curated_history WHERE {_SCOPE} AND target = ? AND seq >= COALESCE("
            f"(SELECT max(seq) FROM curated_history WHERE {_SCOPE} AND target = ? AND before IS NOT NULL), 0)"
            " ORDER BY seq",
            (*key, target, *key, target),
        ).fetchall():
            replay.feed(*_stored(row))
        self._connection.session.execute(_INSERT, _row(key, replay.stored(record)))
        return record

    def records(self, target: str | None = None) -> list[HistoryRecord]:
        where, params = _SCOPE, list(self._connection.scope.as_params())
        if target is not None:
            where += " AND target = ?"
            params.append(target)
        with self._connection.lock:
            rows = self._connection.session.execute(
                f"SELECT {_COLUMNS} FROM curated_history WHERE {where} ORDER BY seq", params
            ).fetchall()
        replay = HistoryReplay()
        return [record for record in (replay.feed(*_stored(row)) for row in rows) if record is not None]

    def get(self, record_id: str) -> HistoryRecord | None:
        return next((r for r in self.records() if r.id == record_id), None)


_COLUMNS = "id, at, target, operation, before, after, origin, edits, parent"
_INSERT = (
    "INSERT INTO curated_history (id, user_id, agent_id, channel_id, target, operation, at, before, after, origin,"
    " edits, parent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _stored(row: Any) -> tuple[dict[str, Any], int]:
    """A history row as :class:`~mnemo.curated.history.HistoryReplay` reads it, and its size."""
    data: dict[str, Any] = {"id": row[0], "time": row[1], "target": row[2], "operation": row[3], "parent": row[8]}
    for name, text in (("before", row[4]), ("after", row[5]), ("origin", row[6]), ("edits", row[7])):
        if text is not None:
            data[name] = json.loads(text)
    return data, _size(row[6], row[7])


def _size(origin: str, edits: str | None) -> int:
    """What a row takes beyond the entries it may hold in full: its origin and edits, as stored."""
    return len(origin) + len(edits or "")


def _row(key: Sequence[str], fields: Mapping[str, Any]) -> tuple[Any, ...]:
    """The ``_INSERT`` parameters for a record stored as ``fields`` in the scope ``key``."""

    def encoded(name: str) -> str | None:
        return json.dumps(fields[name], ensure_ascii=False, default=str) if name in fields else None

    return (
        fields["id"], *key, fields["target"], fields["operation"], fields["time"], encoded("before"), None,
        encoded("origin"), encoded("edits"), fields.get("parent"),
    )  # fmt: skip


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
    replay = HistoryReplay()  # the copy keeps what each write changed, as the store writes its own rows
    rows = []
    for record in records:
        fields = replay.stored(record)
        rows.append(_row(key, fields))
        replay.feed(fields, _size(rows[-1][9], rows[-1][10]))
    executor.executemany(_INSERT + " ON CONFLICT (id) DO NOTHING", rows)
    return len(texts)
