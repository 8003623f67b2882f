"""Searching an archive: full-text (and vector) matches filtered by role, source, time and session, ranked or
in time order, grouped by conversation, with the messages around each hit. Written once for every engine
on the primitives :class:`~mnemo.archive.base.Archive` declares (a read connection and a searcher)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InvalidArgument
from ..retrieval.fusion import Fusion
from .records import (
    Hit,
    SessionHits,
    StoredMessage,
    to_timestamp,
)
from .search import FUSION, FUSION_SHOWN_IN_CONTEXT, SESSION_SCOPE_CLAUSE, SORTS, Filters, Match, nearest_spoken

MAX_LIMIT = 100
HITS_PER_CANDIDATE_SESSION = 20
# Neighbour look-ups joined into one query (two each): SQLite allows at most 500 terms in a compound SELECT.
CENTRES_PER_QUERY = 200

MESSAGES_IN_SESSIONS = "messages m JOIN sessions s ON s.id = m.session_id"
MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.role, m.content, m.parts, m.tool_name, m.tool_calls, m.tool_text, m.tool_call_id,"
    " m.extra, m.created_at, m.has_cjk"
)


def _message_id(message: StoredMessage) -> int:
    return message.id


def check_limit(value: Any, name: str = "limit", maximum: int = MAX_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidArgument(name, f"must be an integer from 1 to {maximum}")
    return value


def name_filter(value: str | Iterable[str] | None, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise InvalidArgument(field, "must be a non-empty string or a list of them")
    return tuple(items)


def _in_context(value: Any) -> tuple[str, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, tuple) or len(value) != 2 or not isinstance(value[0], str)
        or isinstance(value[1], bool) or not isinstance(value[1], int)
    ):  # fmt: skip
        raise InvalidArgument("in_context", "must be (session_id, message_id) or None")
    return value


class ArchiveSearch:
    """The search half of :class:`~mnemo.archive.base.Archive`: it uses the archive's scope, sessions and
    read primitives, and adds nothing to store."""

    def _filters(
        self,
        role: str | Iterable[str] | None,
        source: str | Iterable[str] | None,
        include_hidden: bool,
        since: Any,
        until: Any,
        exclude_session: str | None,
        session_id: str | None = None,
        in_context: tuple[str, int] | None = None,
    ) -> Filters:
        return Filters(
            roles=name_filter(role, "role"),
            sources=name_filter(source, "source"),
            include_hidden=bool(include_hidden),
            since=None if since is None else to_timestamp(since, "since"),
            until=None if until is None else to_timestamp(until, "until"),
            exclude_sessions=tuple(self.lineage(exclude_session)) if exclude_session else (),
            sessions=(session_id,) if session_id else (),
            in_context=_in_context(in_context),
            scope=self.scope,
        )

    def _find(self, query: str, limit: int, filters: Filters, sort: str, fusion: Fusion = FUSION) -> list[Match]:
        return self._read_index(
            lambda searcher: searcher.find(query, limit=limit, filters=filters, sort=sort, fusion=fusion)
        )

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
        in_context: tuple[str, int] | None = None,
        snippets: bool = True,
    ) -> list[Hit]:
        """Matching messages, best first, not grouped: the building block of :meth:`search`.

        ``in_context`` is ``(session_id, message_id)``: that session's messages after ``message_id`` are
        left out (what an agent still holds in its context window; ``0`` leaves out the whole session).
        ``snippets=False`` skips the highlighted snippets (each hit's is then ``""``) for a caller that
        shows the messages its own way."""
        check_limit(limit, maximum=1000)
        if sort not in SORTS:
            raise InvalidArgument("sort", f"must be one of {', '.join(SORTS)}")
        filters = self._filters(role, source, include_hidden, since, until, exclude_session, session_id, in_context)
        with self._reading():  # one connection for every step of the search
            found = self._find(query, limit, filters, sort)
            return self._hits(self._snippets(found) if snippets else found, context)

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

        ``query`` is free text: quoted phrases, ``AND`` / ``OR`` / ``NOT`` and a trailing ``*`` are honoured
        where well-formed and repaired where not; natural-language questions fall back to a ranked OR of
        their meaningful terms. Subagent and tool sessions are hidden unless ``include_hidden`` or ``source``
        names them. ``exclude_session`` leaves out that session and its whole lineage (the conversation the
        agent is in).
        """
        check_limit(limit)
        check_limit(hits_per_session, "hits_per_session", 50)
        if sort not in SORTS:
            raise InvalidArgument("sort", f"must be one of {', '.join(SORTS)}")
        filters = self._filters(role, source, include_hidden, since, until, exclude_session)
        with self._reading():  # one connection for every step of the search
            return self._grouped(query, limit, filters, sort, context, hits_per_session)

    def _grouped(
        self, query: str, limit: int, filters: Filters, sort: str, context: int, hits_per_session: int
    ) -> list[SessionHits]:
        fusion = FUSION_SHOWN_IN_CONTEXT if context else FUSION
        matches = self._find(query, min(1000, limit * HITS_PER_CANDIDATE_SESSION), filters, sort, fusion)
        owners: dict[int, str] = {}
        if matches:
            with self._reading() as conn:
                owners = dict(conn.execute(
                    f"SELECT id, session_id FROM messages WHERE id IN ({','.join('?' * len(matches))})",
                    [m.message_id for m in matches],
                ).fetchall())  # fmt: skip
        roots = self._roots(owners.values())
        groups: dict[str, list[Match]] = {}
        for match in matches:
            if match.message_id not in owners:
                continue  # deleted since it was found
            root = roots[owners[match.message_id]]
            if root not in groups and len(groups) >= limit:
                continue
            bucket = groups.setdefault(root, [])
            if len(bucket) < hits_per_session:
                bucket.append(match)
        # Every group's snippets, messages, neighbours and sessions in a few queries, not a few per hit: on a
        # database server each query is a round trip.
        hits = {hit.message.id: hit for hit in self._hits(self._snippets([m for b in groups.values() for m in b]), context)}
        infos = self._sessions(groups)
        results = []
        for root, bucket in groups.items():
            found = tuple(hits[m.message_id] for m in bucket if m.message_id in hits)
            if root in infos and found:
                results.append(SessionHits(root=infos[root], hits=found))
        return results

    def _hits(self, matches: Sequence[Match], context: int) -> list[Hit]:
        if not matches:
            return []
        ids = list(dict.fromkeys(match.message_id for match in matches))
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM {MESSAGES_IN_SESSIONS}"
                f" WHERE m.id IN ({','.join('?' * len(ids))}) AND {SESSION_SCOPE_CLAUSE}",
                (*ids, *self.scope.as_params()),
            ).fetchall()
        centres = {message.id: message for message in map(StoredMessage.from_row, rows)}
        sessions = self._sessions(message.session_id for message in centres.values())
        neighbours = self._neighbours(list(centres.values()), context) if context else {}
        hits = []
        for match in matches:
            message = centres.get(match.message_id)
            if message is None or message.session_id not in sessions:
                continue
            around = neighbours.get(message.session_id, [])
            first, last = (find(around, message.id, key=_message_id) for find in (bisect_left, bisect_right))
            before, after = tuple(around[max(0, first - context) : first]), tuple(around[last : last + context])
            hits.append(Hit(
                message, sessions[message.session_id], match.snippet or "", match.score, before, after, match.similarity
            ))  # fmt: skip
        return hits

    def _neighbours(self, centres: Sequence[StoredMessage], context: int) -> dict[str, list[StoredMessage]]:
        """Up to ``context`` spoken messages (see :func:`~mnemo.archive.search.nearest_spoken`) before and after each of
        ``centres`` in its session, by session, in order: each centre's nearest neighbours are among them,
        whatever the others brought. A tool-using turn's calls and results are left out: the window is the
        conversation around a hit (reading the session shows everything)."""
        by_session: dict[str, dict[int, StoredMessage]] = {}
        with self._reading() as conn:
            for start in range(0, len(centres), CENTRES_PER_QUERY):
                nearest = []
                params: list[Any] = []
                for index, centre in enumerate(centres[start : start + CENTRES_PER_QUERY]):
                    for side in ("before", "after"):
                        nearest.append(f"SELECT id FROM ({nearest_spoken('?', '?', side, context)}) AS n{index}_{side}")
                        params += [centre.session_id, centre.id]
                rows = conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM {MESSAGES_IN_SESSIONS}"
                    f" WHERE m.id IN ({' UNION ALL '.join(nearest)}) AND {SESSION_SCOPE_CLAUSE}",
                    (*params, *self.scope.as_params()),
                ).fetchall()
                for message in map(StoredMessage.from_row, rows):
                    by_session.setdefault(message.session_id, {})[message.id] = message
        return {session: [found[i] for i in sorted(found)] for session, found in by_session.items()}
