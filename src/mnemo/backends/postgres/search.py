"""Archive search on PostgreSQL: the shared query plan and ranking of
:class:`~mnemo.archive.search.BaseSearcher`, matched and scored with ``tsvector`` / ``tsquery``.

Queries are compiled to ``tsquery`` by :mod:`mnemo.backends.postgres.text_search`.

PostgreSQL's ``ts_rank`` has no notion of how rare a word is, which is most of what BM25 knows, and the
shared ranking was tuned on BM25 scores. So a query's phrases are scored with BM25 here too: a phrase's term
frequency is its ``ts_rank`` without length normalisation in units of one occurrence in the message text (so
the tool name and the tool-call text count less, as their weights say), saturated with BM25's ``k1`` and
normalised by the message's length against the average of recent messages; its inverse document frequency
is estimated from the same bounded probes the SQLite engine uses, the newest ``MATCH_BUDGET`` matches of each
phrase, except for a word the column's statistics already show to be far commoner than that (its share of
rows, :class:`~mnemo.backends.postgres.text_search.TermStatistics`), which is estimated without walking to its matches.
A common phrase is only looked for among the recent messages where it has that many matches, so a query costs
about the same at a million messages as at ten thousand.

Where other scopes' sessions share the tables (users of one gateway), how rare a word is is counted among the
searched scope's own messages, as on SQLite: probes read only the scope's matches (messages carry their scope, so
this is a filter on the rows the index finds, not a join), and a word's weight is its IDF among the scope's messages
(its sessions' counts). Which words are too common to probe stays a table-wide decision, since that is what a probe
costs: such a word is taken to be as common among the scope's messages as in the whole table. So does the average
length a message's is compared with.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...archive.search import (
    ASKS_TAIL,
    MATCH_BUDGET,
    STOP_WORDS,
    BaseSearcher,
    Filters,
    Match,
    RankRow,
    VectorChannel,
    like_pattern,
    like_snippet,
    merge_matches,
    order_clause,
    scope_clause,
)
from ...retrieval import bm25_idf, cjk_ngrams, has_cjk
from ...scope import Scope
from .connection import Executor
from .text_search import K1, ONE_OCCURRENCE, B, TermStatistics

# Messages carry their session's scope and source (see mnemo.backends.postgres.archive_schema): no join to filter them.
_MATCHES = "FROM messages m"
# A word the statistics count at this many times the probe's budget is estimated instead of probed.
_KNOWN_COMMON = 2
_SCOPED = " AND " + scope_clause("m")
# The sizes a search weighs words by, in one round trip: whether other scopes' sessions are in the table (the first
# or last scope in sessions_scope_started is another: one index step each, where asking for a session on either
# side of the scope let the planner scan the table, 9 ms at 100,000 sessions), the largest message id and session
# number (which stand for the table's counts), and only where other scopes are, the scope's sessions and their
# messages (a walk of the scope's sessions in the same index).
_SIZES = """
WITH o AS MATERIALIZED (
    SELECT (SELECT (user_id, agent_id, channel_id) FROM sessions ORDER BY user_id, agent_id, channel_id LIMIT 1)
            <> (CAST(:user AS text), CAST(:agent AS text), CAST(:channel AS text))
        OR (SELECT (user_id, agent_id, channel_id) FROM sessions ORDER BY user_id DESC, agent_id DESC, channel_id DESC
            LIMIT 1) <> (CAST(:user AS text), CAST(:agent AS text), CAST(:channel AS text)) AS shared
)
SELECT o.shared, (SELECT COALESCE(max(id), 0) FROM messages), (SELECT COALESCE(max(seq), 0) FROM sessions),
    own.sessions, own.messages
FROM o LEFT JOIN LATERAL (SELECT count(*) AS sessions, COALESCE(sum(message_count), 0) AS messages FROM sessions
    WHERE o.shared AND user_id = :user AND agent_id = :agent AND channel_id = :channel) AS own ON true
"""


class PostgresSearcher(BaseSearcher):
    """Runs searches on one PostgreSQL connection for ``scope``, with what the archive's process keeps about its
    messages (``terms``)."""

    def __init__(
        self, conn: Executor, terms: TermStatistics, *, scope: Scope, vectors: VectorChannel | None = None
    ) -> None:
        super().__init__(conn, vectors=vectors)
        self._terms = terms
        self._scope = scope
        self._sizes: tuple[bool, int, int, int, int] | None = None

    def _tsquery(self, fts_query: str) -> str:
        """``fts_query`` as ``tsquery`` text; ``""`` when nothing in it is searchable (only stop words)."""
        return self._terms.tsquery(self._conn, fts_query)

    def _read_sizes(self) -> tuple[bool, int, int, int, int]:
        """Whether other scopes share the table, its newest message id and session number, and the scope's
        sessions and messages (zero when it is alone); read once per search."""
        if self._sizes is None:
            user, agent, channel = self._scope.as_params()
            row = self._conn.execute(_SIZES, {"user": user, "agent": agent, "channel": channel}).fetchone()
            self._sizes = (bool(row[0]), int(row[1]), int(row[2]), int(row[3] or 0), int(row[4] or 0))
        return self._sizes

    def _shared(self) -> bool:
        return self._read_sizes()[0]

    def _newest_id(self) -> int:
        """The largest message id: where a message stands among all of them, and the number of messages (exact
        unless some were deleted)."""
        return self._read_sizes()[1]

    def _totals(self) -> tuple[int, int]:
        # Alone, sessions are counted like messages, by their largest sequence number, instead of by a scan.
        shared, newest, numbered, sessions, messages = self._read_sizes()
        return (sessions, messages) if shared else (numbered, newest)

    def _documents(self) -> int:
        """How many messages a word's rarity is counted among: the scope's (the table's, where it is alone)."""
        return self._totals()[1]

    def _run_fts(self, fts_query: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        tsquery = self._tsquery(fts_query)
        if not tsquery:
            return []
        where, params = filters.sql(sessions="m")
        rows = self._conn.execute(
            f"SELECT m.id, -ts_rank(m.search, CAST(? AS tsquery), 1) AS score {_MATCHES}"
            f" WHERE m.search @@ CAST(? AS tsquery) AND {where} ORDER BY {order_clause(sort, 'score')} LIMIT ?",
            (tsquery, tsquery, *params, limit),
        ).fetchall()
        return [Match(row[0], row[1], None, "messages_fts", fts_query) for row in rows]

    def _common_share(self, tsquery: str) -> float | None:
        """Which fraction of the table's messages hold ``tsquery`` when the column's statistics say it is well past
        the probe's budget: such a word is not probed (its newest ``MATCH_BUDGET`` matches lie among thousands of
        rows that would each be read), and its count and recent stretch are estimated from its share of rows.
        Words near the budget are probed, so the cut between counted and estimated stays where SQLite puts it. The
        statistics and the cut are table-wide: they say what a probe would cost."""
        share = self._terms.share(self._conn, tsquery)
        return share if share is not None and share * self._newest_id() >= _KNOWN_COMMON * MATCH_BUDGET else None

    def _probe(self, phrase: str) -> list[int]:
        """The newest ``MATCH_BUDGET`` matches of ``phrase`` among the scope's messages."""
        if phrase not in self._probes:
            tsquery = self._tsquery(phrase)
            # Alone in the table, the scope's columns would be one more check per row, passed by every row.
            scoped, params = (_SCOPED, self._scope.as_params()) if self._shared() else ("", ())
            rows = self._conn.execute(
                f"SELECT m.id FROM messages m WHERE m.search @@ CAST(? AS tsquery){scoped} ORDER BY m.id DESC LIMIT ?",
                (tsquery, *params, MATCH_BUDGET),
            ).fetchall() if tsquery and self._common_share(tsquery) is None else []  # fmt: skip
            self._probes[phrase] = [row[0] for row in rows]
        return self._probes[phrase]

    def _frequency(self, phrase: str) -> tuple[float, int | None]:
        """How many of the scope's messages hold ``phrase`` (exact below ``MATCH_BUDGET``, else estimated), and the
        first id of the recent stretch holding its newest ``MATCH_BUDGET`` matches (``None`` when it has fewer)."""
        newest = self._newest_id()
        share = self._common_share(self._tsquery(phrase))
        if share is not None:
            # Too common to probe: as common among the scope's messages as in the table.
            return share * self._documents(), max(1, int(newest - MATCH_BUDGET / share))
        rows = self._probe(phrase)
        if len(rows) < MATCH_BUDGET:
            return float(len(rows)), None
        # Extrapolated from the density of the recent matches, the scope's messages taken to be spread over the
        # ids as evenly as the table's: MATCH_BUDGET among (stretch / newest) of its messages.
        return MATCH_BUDGET * newest / max(1, newest - rows[-1] + 1), rows[-1]

    def _bounded(self, phrases: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        compiled = {phrase: query for phrase in phrases if (query := self._tsquery(phrase))}
        if not compiled:
            return []
        found = {phrase: self._frequency(phrase) for phrase in compiled}
        if not any(count for count, _ in found.values()):
            return []
        documents = self._documents()
        weights = {phrase: bm25_idf(documents, count) for phrase, (count, _) in found.items()}
        starts = {phrase: start for phrase, (_, start) in found.items() if start is not None}
        window, window_params = "", []
        if joiner == " ":
            # An AND is no bigger than its rarest topic word: one rare word keeps the whole match cheap.
            topical = [p for p in compiled if p.strip('"*').lower() not in STOP_WORDS] or list(compiled)[:1]
            if all(p in starts for p in topical):
                window, window_params = " AND m.id >= ?", [max(starts[p] for p in topical)]
            matched = " & ".join(f"({q})" for q in compiled.values())
        else:
            rare = [compiled[p] for p in compiled if p not in starts]
            if starts:
                start = max(starts.values())
                if rare:
                    window = " AND (m.id >= ? OR m.search @@ CAST(? AS tsquery))"
                    window_params = [start, " | ".join(f"({q})" for q in rare)]
                else:
                    window, window_params = " AND m.id >= ?", [start]
            matched = " | ".join(f"({q})" for q in compiled.values())
        frequencies = ", ".join(f"ts_rank(m.search, CAST(? AS tsquery), 0) / {ONE_OCCURRENCE} AS f{i}" for i in range(len(compiled)))
        norm = f"{K1} * (1 - {B} + {B} * length(m.search) / ?)"
        score = " + ".join(f"? * f{i} * {K1 + 1} / (f{i} + {norm})" for i in range(len(compiled)))
        average = self._terms.average_length(self._conn)
        score_params = [value for phrase in compiled for value in (weights[phrase], average)]
        where, params = filters.sql(sessions="m")
        rows = self._conn.execute(
            f"SELECT m.id, -({score}) AS score {_MATCHES} CROSS JOIN LATERAL (SELECT {frequencies}) AS tf"
            f" WHERE m.search @@ CAST(? AS tsquery){window} AND {where} ORDER BY {order_clause(sort, 'score')} LIMIT ?",
            (*score_params, *compiled.values(), matched, *window_params, *params, limit),
        ).fetchall()
        fts_query = joiner.join(phrases)
        return [Match(row[0], row[1], None, "messages_fts", fts_query) for row in rows]

    def _rank_rows(self, ids: Sequence[int]) -> list[RankRow]:
        return self._conn.execute(
            f"SELECT id, session_id, right(content, {ASKS_TAIL}), CAST(extra AS jsonb) ->> 'name', created_at"
            f" FROM messages WHERE id IN ({','.join('?' * len(ids))})",
            list(ids),
        ).fetchall()

    # -- CJK: substring matches, served by the pg_trgm index ----------------------------------------

    def _find_cjk(self, pieces: list[str], explicit: bool, limit: int, filters: Filters, sort: str) -> list[Match]:
        terms = list(dict.fromkeys(p for p in pieces if p))
        found = self._like(terms, every=True, limit=limit, filters=filters, sort=sort)
        if len(found) < limit and not explicit:
            grams = list(dict.fromkeys(g for t in terms for g in (cjk_ngrams(t) if has_cjk(t) else [t])))
            if len(grams) > 1:
                found = merge_matches(found, self._like(grams, every=False, limit=limit, filters=filters, sort=sort), limit)
        return found

    def _like(self, terms: list[str], *, every: bool, limit: int, filters: Filters, sort: str) -> list[Match]:
        if not terms:
            return []
        where, params = filters.sql(sessions="m")
        likes = ["m.content LIKE ? ESCAPE '\\'" for _ in terms]
        patterns = [like_pattern(t) for t in terms]
        # Relevance for an OR: how many of the pieces a message holds (more pieces, better match).
        held = " + ".join(f"CAST({like} AS integer)" for like in likes)
        rows = self._conn.execute(
            f"SELECT m.id, m.content, -({held}) AS score {_MATCHES} WHERE m.has_cjk = 1"
            f" AND ({(' AND ' if every else ' OR ').join(likes)}) AND {where}"
            f" ORDER BY {order_clause(sort, 'score') if not every else order_clause('oldest' if sort == 'oldest' else 'newest', '0')}"
            " LIMIT ?",
            (*patterns, *patterns, *params, limit),
        ).fetchall()
        return [Match(row[0], float(row[2]), like_snippet(row[1], terms)) for row in rows]

