"""``SessionArchive``: every message of every session in SQLite, searchable in milliseconds.

One archive object owns one connection, guarded by a lock so the provider's hook threads can share
it. Any number of processes may open the same file: writes are immediate transactions with retries
(:mod:`mnemo._db`), so no write is lost and readers never see half a batch.

An archive object serves one :class:`~mnemo.scope.Scope`: the sessions it starts belong to that scope,
and every read (search, listing, reading, scrolling, lineage, deletion) sees only that scope's sessions
and their messages. A session id, a message id or a lineage from another scope behaves exactly like
one that does not exist.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import _db
from ..database import connect_owned
from ..embeddings.vector_file import directory_for
from ..errors import InvalidArgument, MnemoError, excerpt
from ..scope import Scope
from . import schema
from .records import (
    Hit,
    SessionHits,
    SessionInfo,
    StoredMessage,
    message_row,
    require_encodable,
    to_timestamp,
    tool_call_names,
)
from .search import SESSION_SCOPE_CLAUSE, SORTS, Filters, Match, Searcher
from .vectors import MessageVectors

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder
    from .importer import ImportReport

log = logging.getLogger("mnemo.archive")

T = TypeVar("T")

MAX_LIMIT = 100
_HITS_PER_CANDIDATE_SESSION = 20


class SessionNotFound(MnemoError, KeyError):
    """No session has this id."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no session with id {excerpt(session_id)}")

    def __str__(self) -> str:
        return str(self.args[0])


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc).lower()
    return code == getattr(sqlite3, "SQLITE_CORRUPT", 11) or "malformed" in text or "corrupt" in text


def _check_limit(value: Any, name: str = "limit", maximum: int = MAX_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidArgument(name, f"must be an integer from 1 to {maximum}")
    return value


def _names(value: str | Iterable[str] | None, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise InvalidArgument(field, "must be a non-empty string or a list of them")
    return tuple(items)


_SCOPED = SESSION_SCOPE_CLAUSE.replace("s.", "")
_MESSAGES_IN_SESSIONS = "messages m JOIN sessions s ON s.id = m.session_id"


class SessionArchive:
    """The archive of sessions and their messages in one SQLite file (normally ``MNEMO_HOME/mnemo.db``),
    seen from one scope."""

    def __init__(self, path: str | Path, *, embedder: Embedder | None = None, scope: Scope | None = None) -> None:
        """``embedder`` adds a vector channel to relevance search (messages are embedded lazily, in bounded
        batches per search, or all at once by :meth:`embed_pending`); without one search is full text only.
        ``scope`` (default: the empty scope) is whose sessions this object writes and reads.

        A file that is not mnemo's, or was written by a newer mnemo, is refused before anything is written
        (:class:`~mnemo.database.ForeignDatabase`, :class:`~mnemo.database.DatabaseTooNew`)."""
        self.path = Path(path)
        self.scope = scope if scope is not None else Scope()
        self._lock = threading.RLock()
        self._vectors = MessageVectors(embedder, directory_for(self.path)) if embedder is not None else None
        self._conn: sqlite3.Connection | None = connect_owned(self.path)
        try:
            _db.migrate(self._conn, schema.COMPONENT, schema.MIGRATIONS)
            self._trigram = schema.cjk_tokenizer(self._conn) == "trigram"
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    @classmethod
    def open(cls, home: str | Path | None = None) -> SessionArchive:
        """The archive in ``home`` (default: ``$MNEMO_HOME`` or ``~/.mnemo``), in the configured scope."""
        from ..config import load_settings

        settings = load_settings(home)
        return cls(settings.database_path, scope=settings.scope)

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._conn is None

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SessionArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes made through this archive into one transaction: all of them land, or none.
        Other threads using the archive wait until it ends."""
        with self._lock, _db.write_transaction(self._db):
            yield

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MnemoError("the session archive is closed")
        return self._conn

    # -- sessions ----------------------------------------------------------------------------------

    def start_session(
        self,
        session_id: str | None = None,
        *,
        source: str = "cli",
        title: str | None = None,
        model: str | None = None,
        parent_session_id: str | None = None,
        started_at: Any = None,
        metadata: Mapping[str, Any] | None = None,
        exist_ok: bool = False,
    ) -> str:
        """Create a session (a fresh id unless given) and return its id.

        With ``exist_ok`` an existing session of that id is continued unchanged; otherwise reusing an id
        is refused. ``parent_session_id`` links a session split off by compression or branching.
        """
        session_id = uuid.uuid4().hex if session_id is None else session_id
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidArgument("session_id", "must be a non-empty string")
        if not isinstance(source, str) or not source.strip():
            raise InvalidArgument("source", "must be a non-empty string")
        started = time.time() if started_at is None else to_timestamp(started_at, "started_at")
        with self._lock, _db.write_transaction(self._db) as conn:
            owner = conn.execute("SELECT user_id, agent_id, channel_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if owner is not None:
                if tuple(owner) != self.scope.as_params():
                    # Continuing it would write into another scope's session; its content stays hidden.
                    raise InvalidArgument("session_id", f"session id {excerpt(session_id)} is taken by another scope")
                if exist_ok:
                    return session_id
                raise InvalidArgument("session_id", f"a session with id {excerpt(session_id)} already exists")
            if parent_session_id is not None and not self._in_scope(conn, parent_session_id):
                raise InvalidArgument("parent_session_id", f"no session with id {excerpt(parent_session_id)}")
            conn.execute(
                "INSERT INTO sessions (id, source, title, model, started_at, parent_session_id, metadata,"
                " user_id, agent_id, channel_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, source, title, model, started, parent_session_id,
                 json.dumps(dict(metadata), ensure_ascii=False, default=str) if metadata else None,
                 *self.scope.as_params()),
            )
        return session_id

    def _in_scope(self, conn: sqlite3.Connection, session_id: str) -> bool:
        return conn.execute(
            f"SELECT 1 FROM sessions WHERE id = ? AND {_SCOPED}", (session_id, *self.scope.as_params())
        ).fetchone() is not None

    def end_session(self, session_id: str, *, ended_at: Any = None, title: str | None = None) -> None:
        """Mark a session ended (and optionally give it a title)."""
        ended = time.time() if ended_at is None else to_timestamp(ended_at, "ended_at")
        with self._lock, _db.write_transaction(self._db) as conn:
            cursor = conn.execute(
                f"UPDATE sessions SET ended_at = ?, title = COALESCE(?, title) WHERE id = ? AND {_SCOPED}",
                (ended, title, session_id, *self.scope.as_params()),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session with this id, or ``None``."""
        with self._lock:
            row = self._db.execute(
                f"SELECT * FROM sessions WHERE id = ? AND {_SCOPED}", (session_id, *self.scope.as_params())
            ).fetchone()
        return SessionInfo.from_row(row) if row else None

    def list_sessions(
        self,
        *,
        limit: int = 20,
        offset: int = 0,
        source: str | Iterable[str] | None = None,
        include_hidden: bool = False,
        since: Any = None,
        until: Any = None,
        order: str = "newest",
        exclude: Iterable[str] = (),
    ) -> list[SessionInfo]:
        """Sessions, newest first by default; subagent/tool sessions only when asked for."""
        _check_limit(limit, maximum=10_000)
        if order not in ("newest", "oldest"):
            raise InvalidArgument("order", "must be 'newest' or 'oldest'")
        filters = Filters(
            sources=_names(source, "source"),
            include_hidden=include_hidden,
            since=None if since is None else to_timestamp(since, "since"),
            until=None if until is None else to_timestamp(until, "until"),
            scope=self.scope,
        )
        where, params = filters.sql(time_column="s.started_at")
        excluded = tuple(exclude)
        if excluded:
            where += f" AND s.id NOT IN ({','.join('?' * len(excluded))})"
            params.extend(excluded)
        direction = "DESC" if order == "newest" else "ASC"
        with self._lock:
            rows = self._db.execute(
                f"SELECT s.* FROM sessions s WHERE {where} ORDER BY s.started_at {direction}, s.rowid {direction}"
                " LIMIT ? OFFSET ?",
                (*params, limit, max(0, int(offset))),
            ).fetchall()
        return [SessionInfo.from_row(row) for row in rows]

    def lineage(self, session_id: str) -> list[str]:
        """Every session in ``session_id``'s lineage: its root and all sessions descended from it."""
        root = self.lineage_root(session_id)
        with self._lock:
            rows = self._db.execute(
                "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree ON s.parent_session_id = tree.id"
                f" WHERE {SESSION_SCOPE_CLAUSE}) SELECT id FROM tree",
                (root, *self.scope.as_params()),
            ).fetchall()
        return [row[0] for row in rows]

    def lineage_root(self, session_id: str) -> str:
        """The first ancestor of ``session_id`` (itself when it has no parent or is unknown)."""
        return self._roots([session_id])[session_id]

    def _roots(self, session_ids: Iterable[str]) -> dict[str, str]:
        wanted = list(set(session_ids))
        if not wanted:
            return {}
        with self._lock:
            # One walk up the parent links for all sessions at once; the depth cap guards against a
            # cycle written by hand into the database.
            rows = self._db.execute(
                "WITH RECURSIVE up(start, id, parent, depth) AS ("
                f" SELECT id, id, parent_session_id, 0 FROM sessions WHERE id IN ({','.join('?' * len(wanted))}) AND {_SCOPED}"
                " UNION ALL SELECT up.start, s.id, s.parent_session_id, up.depth + 1 FROM sessions s"
                f" JOIN up ON s.id = up.parent WHERE up.depth < 1000 AND {SESSION_SCOPE_CLAUSE})"
                " SELECT start, id FROM up ORDER BY depth",
                (*wanted, *self.scope.as_params(), *self.scope.as_params()),
            ).fetchall()
        roots = {session_id: session_id for session_id in wanted}
        for start, ancestor in rows:
            roots[start] = ancestor  # ordered by depth: the last one written is the furthest ancestor
        return roots

    def delete_session(self, session_id: str) -> int:
        """Forget a session: its messages leave the table and the search index in one transaction.

        Sessions split from it are re-attached to its parent so their lineage stays connected.
        Returns the number of messages removed.
        """
        with self._lock:
            with _db.write_transaction(self._db) as conn:
                row = conn.execute(
                    f"SELECT parent_session_id FROM sessions WHERE id = ? AND {_SCOPED}",
                    (session_id, *self.scope.as_params()),
                ).fetchone()
                if row is None:
                    raise SessionNotFound(session_id)
                ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ?", (session_id,))]
                vectors = conn.execute(
                    "SELECT v.seq, v.model, v.dim FROM message_vectors v JOIN messages m ON m.id = v.message_id"
                    " WHERE m.session_id = ?",
                    (session_id,),
                ).fetchall()
                removed = conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,)).rowcount
                conn.execute("UPDATE sessions SET parent_session_id = ? WHERE parent_session_id = ?", (row[0], session_id))
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            if self._vectors is not None:
                self._vectors.forget(self._db, ids, vectors)
        return removed

    # -- messages ----------------------------------------------------------------------------------

    def append(self, session_id: str, message: Mapping[str, Any]) -> int:
        """Store one message (OpenAI/Anthropic style dict); return its id."""
        return self.append_many(session_id, [message])[0]

    def append_many(self, session_id: str, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """Store ``messages`` in order, all or nothing, in one transaction; return their ids.

        Every message is validated before anything is written. A tool result without a tool name
        gets the name of the call it answers when that call is in the same batch.
        """
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise InvalidArgument("messages", "must be a list of message objects")
        now = time.time()
        names: dict[str, str] = {}
        rows = []
        for index, message in enumerate(messages):
            try:
                row = message_row(message, default_time=now, tool_names=names)
            except InvalidArgument as exc:
                raise InvalidArgument(f"messages[{index}].{exc.field.removeprefix('message.')}", exc.problem) from None
            if isinstance(message, Mapping):
                names.update(tool_call_names(message.get("tool_calls")))
            rows.append(row)
        if not rows:
            return []
        with self._lock, _db.write_transaction(self._db) as conn:
            if not self._in_scope(conn, session_id):
                raise SessionNotFound(session_id)
            first = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0] + 1
            # One INSERT ... SELECT for the whole batch: the FTS triggers then run inside a single
            # statement, so FTS5 flushes its pending terms once per batch instead of once per row
            # (several times faster than executemany).
            payload = json.dumps(
                [
                    [first + i, session_id, r.role, r.content, r.parts, r.tool_name, r.tool_calls, r.tool_text,
                     r.tool_call_id, r.extra, r.created_at, r.has_cjk]
                    for i, r in enumerate(rows)
                ],
                ensure_ascii=False,
            )
            try:
                payload.encode("utf-8")
            except UnicodeEncodeError:
                # Rare: find the message and field at fault only when the batch as a whole fails.
                for index, row in enumerate(rows):
                    try:
                        require_encodable(row)
                    except InvalidArgument as exc:
                        raise InvalidArgument(f"messages[{index}].{exc.field.removeprefix('message.')}", exc.problem) from None
                raise InvalidArgument("session_id", "contains invalid Unicode") from None
            columns = ", ".join(f"json_extract(value, '$[{n}]')" for n in range(12))
            conn.execute(
                "INSERT INTO messages (id, session_id, role, content, parts, tool_name, tool_calls, tool_text,"
                f" tool_call_id, extra, created_at, has_cjk) SELECT {columns} FROM json_each(?) ORDER BY key",
                (payload,),
            )
            conn.execute(
                "UPDATE sessions SET message_count = message_count + ?, tool_call_count = tool_call_count + ?"
                " WHERE id = ?",
                (len(rows), sum(r.tool_call_count for r in rows), session_id),
            )
        return list(range(first, first + len(rows)))

    def messages(
        self,
        session_id: str,
        *,
        after_id: int | None = None,
        before_id: int | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[StoredMessage]:
        """A session's messages in order (ids strictly between ``after_id`` and ``before_id``).

        With ``limit`` and ``newest_first`` the *last* ``limit`` messages are returned, still in order.
        """
        clauses, params = ["m.session_id = ?", SESSION_SCOPE_CLAUSE], [session_id, *self.scope.as_params()]
        if after_id is not None:
            clauses.append("m.id > ?")
            params.append(after_id)
        if before_id is not None:
            clauses.append("m.id < ?")
            params.append(before_id)
        direction = "DESC" if newest_first else "ASC"
        sql = f"SELECT m.* FROM {_MESSAGES_IN_SESSIONS} WHERE {' AND '.join(clauses)} ORDER BY m.id {direction}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        found = [StoredMessage.from_row(row) for row in rows]
        return found[::-1] if newest_first else found

    def get_message(self, message_id: int) -> StoredMessage | None:
        """One message by id, or ``None``."""
        with self._lock:
            row = self._db.execute(
                f"SELECT m.* FROM {_MESSAGES_IN_SESSIONS} WHERE m.id = ? AND {SESSION_SCOPE_CLAUSE}",
                (message_id, *self.scope.as_params()),
            ).fetchone()
        return StoredMessage.from_row(row) if row else None

    def window(self, message_id: int, *, before: int = 5, after: int = 5) -> list[StoredMessage]:
        """The message ``message_id`` with up to ``before``/``after`` neighbours from its session."""
        centre = self.get_message(message_id)
        if centre is None:
            return []
        earlier = self.messages(centre.session_id, before_id=message_id, limit=before, newest_first=True) if before else []
        later = self.messages(centre.session_id, after_id=message_id, limit=after) if after else []
        return [*earlier, centre, *later]

    def count_messages(self) -> int:
        """How many messages this scope's sessions hold."""
        with self._lock:
            return self._db.execute(
                f"SELECT COUNT(*) FROM {_MESSAGES_IN_SESSIONS} WHERE {SESSION_SCOPE_CLAUSE}", self.scope.as_params()
            ).fetchone()[0]

    def import_jsonl(self, path: str | Path, *, source: str = "import") -> ImportReport:
        """Import OpenAI-style message lists from a JSONL file; report the sessions added and skipped.

        See :func:`mnemo.archive.importer.import_jsonl`.
        """
        from .importer import import_jsonl

        return import_jsonl(self, path, source=source)

    # -- search ------------------------------------------------------------------------------------

    def _filters(
        self,
        role: str | Iterable[str] | None,
        source: str | Iterable[str] | None,
        include_hidden: bool,
        since: Any,
        until: Any,
        exclude_session: str | None,
        session_id: str | None = None,
    ) -> Filters:
        return Filters(
            roles=_names(role, "role"),
            sources=_names(source, "source"),
            include_hidden=bool(include_hidden),
            since=None if since is None else to_timestamp(since, "since"),
            until=None if until is None else to_timestamp(until, "until"),
            exclude_sessions=tuple(self.lineage(exclude_session)) if exclude_session else (),
            sessions=(session_id,) if session_id else (),
            scope=self.scope,
        )

    def _read_index(self, work: Callable[[Searcher], T]) -> T:
        # A damaged full-text index must not make search fail: rebuild it from the messages and retry once.
        with self._lock:
            searcher = Searcher(self._db, trigram=self._trigram, vectors=self._vectors)
            try:
                return work(searcher)
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc):
                    raise _db.DatabaseError(f"search failed: {exc}") from exc
                log.warning("%s: full-text index damaged (%s); rebuilding it from the messages", self.path, exc)
                self.rebuild_index()
                return work(searcher)

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed messages that have no vector of the archive's embedder yet (all of them, or at most
        ``limit``), oldest first; returns how many (0 without an embedder)."""
        if self._vectors is None:
            return 0
        with self._lock:
            return self._vectors.embed_pending(self._db, limit)

    def pending_embeddings(self) -> int | None:
        """How many messages still wait for a vector; ``None`` without an embedder."""
        if self._vectors is None:
            return None
        with self._lock:
            return self._vectors.pending(self._db)

    def _find(self, query: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        return self._read_index(lambda searcher: searcher.find(query, limit=limit, filters=filters, sort=sort))

    def _snippets(self, matches: Sequence[Match]) -> list[Match]:
        return self._read_index(lambda searcher: searcher.with_snippets(matches))

    def search_messages(
        self,
        query: str,
        *,
        limit: int = 10,
        role: str | Iterable[str] | None = None,
        source: str | Iterable[str] | None = None,
        include_hidden: bool = False,
        since: Any = None,
        until: Any = None,
        exclude_session: str | None = None,
        session_id: str | None = None,
        sort: str = "relevance",
        context: int = 0,
    ) -> list[Hit]:
        """Matching messages, best first, not grouped: the building block of :meth:`search`."""
        _check_limit(limit, maximum=1000)
        if sort not in SORTS:
            raise InvalidArgument("sort", f"must be one of {', '.join(SORTS)}")
        filters = self._filters(role, source, include_hidden, since, until, exclude_session, session_id)
        return self._hits(self._snippets(self._find(query, limit, filters, sort)), context)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        role: str | Iterable[str] | None = None,
        source: str | Iterable[str] | None = None,
        include_hidden: bool = False,
        since: Any = None,
        until: Any = None,
        exclude_session: str | None = None,
        sort: str = "relevance",
        context: int = 1,
        hits_per_session: int = 3,
    ) -> list[SessionHits]:
        """Search every archived message; results grouped by lineage root, at most ``limit`` groups.

        ``query`` is free text: FTS5 syntax is honoured where it is well-formed and repaired where it is
        not; natural-language questions fall back to a ranked OR of their meaningful terms. Subagent and
        tool sessions are hidden unless ``include_hidden`` or ``source`` names them. ``exclude_session``
        leaves out that session and its whole lineage (the conversation the agent is in).
        """
        _check_limit(limit)
        _check_limit(hits_per_session, "hits_per_session", 50)
        if sort not in SORTS:
            raise InvalidArgument("sort", f"must be one of {', '.join(SORTS)}")
        filters = self._filters(role, source, include_hidden, since, until, exclude_session)
        matches = self._find(query, min(1000, limit * _HITS_PER_CANDIDATE_SESSION), filters, sort)
        with self._lock:
            owners = dict(self._db.execute(
                f"SELECT id, session_id FROM messages WHERE id IN ({','.join('?' * len(matches))})",
                [m.message_id for m in matches],
            ).fetchall()) if matches else {}
        roots = self._roots(owners.values())
        groups: dict[str, list[Match]] = {}
        for match in matches:
            root = roots[owners[match.message_id]]
            if root not in groups and len(groups) >= limit:
                continue
            bucket = groups.setdefault(root, [])
            if len(bucket) < hits_per_session:
                bucket.append(match)
        results = []
        for root, bucket in groups.items():
            info = self.get_session(root)
            hits = self._hits(self._snippets(bucket), context)
            if info is not None and hits:
                results.append(SessionHits(root=info, hits=tuple(hits)))
        return results

    def _hits(self, matches: Sequence[Match], context: int) -> list[Hit]:
        if not matches:
            return []
        sessions: dict[str, SessionInfo] = {}
        hits = []
        for match in matches:
            message = self.get_message(match.message_id)
            if message is None:
                continue
            if message.session_id not in sessions:
                info = self.get_session(message.session_id)
                if info is None:
                    continue
                sessions[message.session_id] = info
            before = self.messages(message.session_id, before_id=message.id, limit=context, newest_first=True) if context else []
            after = self.messages(message.session_id, after_id=message.id, limit=context) if context else []
            hits.append(Hit(message, sessions[message.session_id], match.snippet or "", match.score, tuple(before), tuple(after)))
        return hits

    # -- index health ------------------------------------------------------------------------------

    def check_index(self, *, repair: bool = True) -> bool:
        """Verify the full-text indexes against the messages; rebuild them when damaged (and ``repair``).

        Returns True when the indexes were healthy.
        """
        with self._lock:
            try:
                for table in schema.FTS_TABLES:
                    self._db.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
                return True
            except sqlite3.DatabaseError as exc:
                log.warning("%s: full-text index check failed (%s)", self.path, exc)
                if repair:
                    self.rebuild_index()
                return False

    def rebuild_index(self) -> None:
        """Regenerate both full-text indexes from the messages table, in place and atomically."""
        with self._lock, _db.write_transaction(self._db) as conn:
            for table in schema.FTS_TABLES:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
