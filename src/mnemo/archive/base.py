"""What every session archive does, whichever database holds it: :class:`Archive`.

The archive's behaviour (validation, scopes, lineage, grouping search hits by conversation, context around
a hit) is written once here against a few primitives each engine supplies: a read connection, a retried
write transaction, the batch insert of messages, and a searcher. SQLite (:class:`~mnemo.backends.sqlite.archive.SessionArchive`)
and PostgreSQL (:class:`~mnemo.backends.postgres.PostgresArchive`) implement those; statements shared by both use
``?`` placeholders and portable SQL.

Every read is confined to the archive's :class:`~mnemo.scope.Scope`: a session id, a message id or a lineage
from another scope behaves exactly like one that does not exist.
"""

from __future__ import annotations

import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..errors import InvalidArgument, MnemoError, excerpt
from ..scope import Scope
from .locate import locate_messages
from .records import (
    MessageRow,
    SessionInfo,
    StoredMessage,
    message_row,
    to_timestamp,
    tool_call_names,
)
from .search import SESSION_SCOPE_CLAUSE, Filters
from .searching import (
    MESSAGE_COLUMNS,
    MESSAGES_IN_SESSIONS,
    ArchiveSearch,
    check_limit,
    name_filter,
)

if TYPE_CHECKING:
    from .search import BaseSearcher

T = TypeVar("T")

SCOPED = SESSION_SCOPE_CLAUSE.replace("s.", "")


class SessionNotFound(MnemoError, KeyError):
    """No session has this id."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no session with id {excerpt(session_id)}")

    def __str__(self) -> str:
        return str(self.args[0])


def validated_rows(messages: Sequence[Mapping[str, Any]]) -> list[MessageRow]:
    """``messages`` as rows to store, every one checked before anything is written; a tool result without a
    tool name gets the name of the call it answers when that call is in the same batch."""
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
    return rows


class Archive(ArchiveSearch, ABC):
    """The archive of sessions and their messages, seen from one scope; see :mod:`mnemo.archive.base`."""

    scope: Scope
    location: str
    """Where the archive lives: a file path or a database URL without its password."""

    # The column that orders sessions started at the same instant (their insertion order).
    _SESSION_ORDER: ClassVar[str]

    # -- primitives each engine supplies -------------------------------------------------------------

    @abstractmethod
    def _write(self, work: Callable[[Any], T]) -> T:
        """Run ``work(connection)`` in one write transaction (joining an open :meth:`transaction`)."""

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]:
        """A connection to read from, for the duration of the ``with`` block; a reading nested in another on
        the same thread gets the same connection."""

    @abstractmethod
    def _insert_messages(self, conn: Any, session_id: str, rows: Sequence[MessageRow]) -> list[int]:
        """Insert ``rows`` into ``session_id`` inside the open write; return their ids in order."""

    @abstractmethod
    def _read_index(self, work: Callable[[BaseSearcher], T]) -> T:
        """Run ``work`` with a searcher on a read connection."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """Group writes made through this archive into one transaction: all of them land, or none."""

    @property
    @abstractmethod
    def closed(self) -> bool:
        """True once :meth:`close` has run."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection(s); idempotent."""

    @abstractmethod
    def embed_pending(self, limit: int | None = None) -> int:
        """Embed messages that have no vector of the archive's embedder yet (all of them, or at most
        ``limit``), oldest first; returns how many (0 without an embedder)."""

    @abstractmethod
    def pending_embeddings(self) -> int | None:
        """How many messages still wait for a vector; ``None`` without an embedder."""

    @abstractmethod
    def check_index(self, *, repair: bool = True) -> bool:
        """Verify the full-text indexes; rebuild them when damaged (and ``repair``). True when healthy."""

    @abstractmethod
    def rebuild_index(self) -> None:
        """Regenerate the full-text indexes from the messages."""

    def _doomed_vectors(self, conn: Any, session_id: str, message_id: int | None = None) -> Any:
        """Inside the delete of a session (or of its message ``message_id``): what :meth:`_forget_vectors`
        needs once it committed."""
        return None

    def _forget_vectors(self, message_ids: list[int], doomed: Any) -> None:
        """After the delete of a session committed: drop derived copies of its messages' vectors."""
        return None

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        encoded = json.dumps(dict(metadata), ensure_ascii=False, default=str) if metadata else None

        def work(conn: Any) -> str:
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
                (session_id, source, title, model, started, parent_session_id, encoded, *self.scope.as_params()),
            )
            return session_id

        return self._write(work)

    def _in_scope(self, conn: Any, session_id: str) -> bool:
        return conn.execute(
            f"SELECT 1 FROM sessions WHERE id = ? AND {SCOPED}", (session_id, *self.scope.as_params())
        ).fetchone() is not None

    def end_session(self, session_id: str, *, ended_at: Any = None, title: str | None = None) -> None:
        """Mark a session ended (and optionally give it a title)."""
        ended = time.time() if ended_at is None else to_timestamp(ended_at, "ended_at")

        def work(conn: Any) -> None:
            cursor = conn.execute(
                f"UPDATE sessions SET ended_at = ?, title = COALESCE(?, title) WHERE id = ? AND {SCOPED}",
                (ended, title, session_id, *self.scope.as_params()),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

        self._write(work)

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session with this id, or ``None``."""
        return self._sessions([session_id]).get(session_id)

    def _sessions(self, session_ids: Iterable[str]) -> dict[str, SessionInfo]:
        """The sessions among ``session_ids`` that exist in this scope, in one query."""
        wanted = list(dict.fromkeys(session_ids))
        if not wanted:
            return {}
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT * FROM sessions WHERE id IN ({','.join('?' * len(wanted))}) AND {SCOPED}",
                (*wanted, *self.scope.as_params()),
            ).fetchall()
        return {info.id: info for info in map(SessionInfo.from_row, rows)}

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
        check_limit(limit, maximum=10_000)
        if order not in ("newest", "oldest"):
            raise InvalidArgument("order", "must be 'newest' or 'oldest'")
        filters = Filters(
            sources=name_filter(source, "source"),
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
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT s.* FROM sessions s WHERE {where}"
                f" ORDER BY s.started_at {direction}, {self._SESSION_ORDER} {direction} LIMIT ? OFFSET ?",
                (*params, limit, max(0, int(offset))),
            ).fetchall()
        return [SessionInfo.from_row(row) for row in rows]

    def lineage(self, session_id: str) -> list[str]:
        """Every session in ``session_id``'s lineage: its root and all sessions descended from it."""
        root = self.lineage_root(session_id)
        with self._reading() as conn:
            rows = conn.execute(
                "WITH RECURSIVE tree(id) AS (SELECT CAST(? AS TEXT) UNION SELECT s.id FROM sessions s"
                f" JOIN tree ON s.parent_session_id = tree.id WHERE {SESSION_SCOPE_CLAUSE}) SELECT id FROM tree",
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
        roots = {session_id: session_id for session_id in wanted}
        with self._reading() as conn:
            parents = {
                row[0]: row[1]
                for row in conn.execute(
                    f"SELECT id, parent_session_id FROM sessions WHERE id IN ({','.join('?' * len(wanted))})"
                    f" AND {SCOPED} AND parent_session_id IS NOT NULL",
                    (*wanted, *self.scope.as_params()),
                ).fetchall()
            }
            if not parents:
                return roots  # the usual case, one indexed look-up: walking up would scan every session
            # One walk up the parent links for the rest at once; the depth cap guards against a cycle written
            # by hand into the database.
            rows = conn.execute(
                "WITH RECURSIVE up(start, id, parent, depth) AS ("
                f" SELECT id, id, parent_session_id, 0 FROM sessions WHERE id IN ({','.join('?' * len(parents))}) AND {SCOPED}"
                " UNION ALL SELECT up.start, s.id, s.parent_session_id, up.depth + 1 FROM sessions s"
                f" JOIN up ON s.id = up.parent WHERE up.depth < 1000 AND {SESSION_SCOPE_CLAUSE})"
                " SELECT start, id FROM up ORDER BY depth",
                (*parents, *self.scope.as_params(), *self.scope.as_params()),
            ).fetchall()
        for start, ancestor in rows:
            roots[start] = ancestor  # ordered by depth: the last one written is the furthest ancestor
        return roots

    def delete_session(self, session_id: str) -> int:
        """Forget a session: its messages leave the table and the search index in one transaction.

        Sessions split from it are re-attached to its parent so their lineage stays connected.
        Returns the number of messages removed.
        """

        def work(conn: Any) -> tuple[int, list[int], Any]:
            row = conn.execute(
                f"SELECT parent_session_id FROM sessions WHERE id = ? AND {SCOPED}", (session_id, *self.scope.as_params())
            ).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ?", (session_id,)).fetchall()]
            doomed = self._doomed_vectors(conn, session_id)
            removed = conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,)).rowcount
            conn.execute("UPDATE sessions SET parent_session_id = ? WHERE parent_session_id = ?", (row[0], session_id))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return removed, ids, doomed

        removed, ids, doomed = self._write(work)
        self._forget_vectors(ids, doomed)
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
        rows = validated_rows(messages)
        if not rows:
            return []

        def work(conn: Any) -> list[int]:
            if not self._in_scope(conn, session_id):
                raise SessionNotFound(session_id)
            ids = self._insert_messages(conn, session_id, rows)
            conn.execute(
                "UPDATE sessions SET message_count = message_count + ?, tool_call_count = tool_call_count + ?"
                " WHERE id = ?",
                (len(rows), sum(r.tool_call_count for r in rows), session_id),
            )
            return ids

        return self._write(work)

    def pop_message(self, session_id: str) -> StoredMessage | None:
        """Remove and return the newest message of a session (a host undoing its last turn), or ``None`` when
        the session has none; the search index and vectors follow, in one transaction."""

        def work(conn: Any) -> tuple[StoredMessage | None, Any]:
            if not self._in_scope(conn, session_id):
                raise SessionNotFound(session_id)
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM {MESSAGES_IN_SESSIONS} WHERE m.session_id = ? AND {SESSION_SCOPE_CLAUSE}"
                " ORDER BY m.id DESC LIMIT 1",
                (session_id, *self.scope.as_params()),
            ).fetchone()
            if row is None:
                return None, None
            message = StoredMessage.from_row(row)
            doomed = self._doomed_vectors(conn, session_id, message.id)
            conn.execute("DELETE FROM messages WHERE id = ?", (message.id,))
            conn.execute(
                "UPDATE sessions SET message_count = message_count - 1, tool_call_count = tool_call_count - ? WHERE id = ?",
                (len(message.tool_calls or ()), session_id),
            )
            return message, doomed

        message, doomed = self._write(work)
        if message is not None:
            self._forget_vectors([message.id], doomed)
        return message

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
        sql = f"SELECT {MESSAGE_COLUMNS} FROM {MESSAGES_IN_SESSIONS} WHERE {' AND '.join(clauses)} ORDER BY m.id {direction}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._reading() as conn:
            rows = conn.execute(sql, params).fetchall()
        found = [StoredMessage.from_row(row) for row in rows]
        return found[::-1] if newest_first else found

    def locate(self, session_id: str, messages: Sequence[Mapping[str, Any]]) -> list[int | None]:
        """The archive id of each of ``messages`` (plain ``{"role", "content"}`` dicts handed around by an
        agent loop) in ``session_id`` or a session it continues, ``None`` where the archive has none (see
        :func:`~mnemo.archive.locate.locate_messages`)."""
        with self._reading() as conn:
            refs = locate_messages(conn, self.scope, session_id, messages)
        return [None if ref is None else ref.message_id for ref in refs]

    def get_message(self, message_id: int) -> StoredMessage | None:
        """One message by id, or ``None``."""
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM {MESSAGES_IN_SESSIONS} WHERE m.id = ? AND {SESSION_SCOPE_CLAUSE}",
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
        with self._reading() as conn:
            return conn.execute(
                f"SELECT COUNT(*) FROM {MESSAGES_IN_SESSIONS} WHERE {SESSION_SCOPE_CLAUSE}", self.scope.as_params()
            ).fetchone()[0]
