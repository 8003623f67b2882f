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
    VectorChannel,
    like_pattern,
    like_snippet,
    merge_matches,
    order_clause,
)
from ...retrieval import bm25_idf, cjk_ngrams, has_cjk
from .connection import Executor
from .text_search import K1, ONE_OCCURRENCE, B, TermStatistics

# Messages carry their session's scope and source (see mnemo.backends.postgres.archive_schema): no join to filter them.
_MATCHES = "FROM messages m"
# A word the statistics count at this many times the probe's budget is estimated instead of probed.
_KNOWN_COMMON = 2


class PostgresSearcher(BaseSearcher):
    """Runs searches on one PostgreSQL connection, with what the archive's process keeps about its messages
    (``terms``)."""

    def __init__(self, conn: Executor, terms: TermStatistics, *, vectors: VectorChannel | None = None) -> None:
        super().__init__(conn, vectors=vectors)
        self._terms = terms
        self._newest: int | None = None

    def _tsquery(self, fts_query: str) -> str:
        """``fts_query`` as ``tsquery`` text; ``""`` when nothing in it is searchable (only stop words)."""
        return self._terms.tsquery(self._conn, fts_query)

    def _newest_id(self) -> int:
        """The largest message id, standing for the number of messages: exact unless some were deleted."""
        if self._newest is None:
            self._newest = self._conn.execute("SELECT COALESCE(max(id), 0) FROM messages").fetchone()[0]
        return self._newest

    def _totals(self) -> tuple[int, int]:
        # Sessions are counted like messages, by their largest sequence number, instead of by a scan.
        sessions = self._conn.execute("SELECT COALESCE(max(seq), 0) FROM sessions").fetchone()[0]
        return sessions, self._newest_id()

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

    def _known_common(self, tsquery: str) -> float | None:
        """How many messages hold ``tsquery`` when the column's statistics say it is well past the probe's
        budget: such a word is not probed (its newest ``MATCH_BUDGET`` matches lie among thousands of rows
        that would each be read), and its count and recent stretch are estimated from its share of rows. Words
        near the budget are probed, so the cut between counted and estimated stays where SQLite puts it."""
        share = self._terms.share(self._conn, tsquery)
        estimate = None if share is None else share * self._newest_id()
        return estimate if estimate is not None and estimate >= _KNOWN_COMMON * MATCH_BUDGET else None

    def _probe(self, phrase: str) -> list[int]:
        if phrase not in self._probes:
            tsquery = self._tsquery(phrase)
            rows = self._conn.execute(
                "SELECT id FROM messages WHERE search @@ CAST(? AS tsquery) ORDER BY id DESC LIMIT ?",
                (tsquery, MATCH_BUDGET),
            ).fetchall() if tsquery and self._known_common(tsquery) is None else []  # fmt: skip
            self._probes[phrase] = [row[0] for row in rows]
        return self._probes[phrase]

    def _frequency(self, phrase: str) -> tuple[float, int | None]:
        """How many messages hold ``phrase`` (exact below ``MATCH_BUDGET``, else estimated), and the first id
        of the recent stretch holding its newest ``MATCH_BUDGET`` matches (``None`` when it has fewer)."""
        newest = self._newest_id()
        estimate = self._known_common(self._tsquery(phrase))
        if estimate is not None:
            return estimate, max(1, int(newest - MATCH_BUDGET * newest / estimate))
        rows = self._probe(phrase)
        if len(rows) < MATCH_BUDGET:
            return float(len(rows)), None
        # Extrapolated from the density of the recent matches.
        return MATCH_BUDGET * newest / max(1, newest - rows[-1] + 1), rows[-1]

    def _bounded(self, phrases: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        compiled = {phrase: query for phrase in phrases if (query := self._tsquery(phrase))}
        if not compiled:
            return []
        found = {phrase: self._frequency(phrase) for phrase in compiled}
        if not any(count for count, _ in found.values()):
            return []
        newest = self._newest_id()
        weights = {phrase: bm25_idf(newest, count) for phrase, (count, _) in found.items()}
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

    def _rank_rows(self, ids: Sequence[int]) -> list[tuple[int, str, str, object, float]]:
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

