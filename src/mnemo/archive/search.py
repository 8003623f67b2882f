"""Full-text search over archived messages: strict query first, ranked-OR fallback, CJK through the
trigram index (or a substring scan for very short CJK queries), filters, sorting, snippets.

Everything here reads; the store owns writes and locking. Queries are always built from
:func:`mnemo.retrieval.parse_query`, so no text a user or model types reaches ``MATCH`` verbatim.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..errors import InvalidArgument
from ..retrieval import cjk_ngrams, has_cjk, parse_query, term_phrases
from .records import HIDDEN_SOURCES

HIGHLIGHT = ("**", "**")
SORTS = ("relevance", "newest", "oldest")
# bm25 column weights: content, tool name, tool-call text. A word in the prose matters more than
# the same word inside a JSON argument.
_BM25 = "bm25(messages_fts, 1.0, 0.6, 0.4)"
_SNIPPET_TOKENS = 16
# Ranking cost grows with the number of matching rows (bm25 reads every match's positions), so a
# query whose terms are common everywhere is ranked within a bounded candidate set: globally over
# its rarer terms, and over every term within the most recent stretch of the archive. This many
# matches per term is the budget; below it, ranking is exact and global.
MATCH_BUDGET = 1000
# In a conversation the words of a question and of its answer are often in adjacent messages, so a
# message's relevance borrows from its neighbours': its own bm25 plus these fractions of the bm25 of
# the candidates one and two messages away in the same session. Ranked over this many candidates.
NEIGHBOUR_WEIGHTS = {1: 0.3, 2: 0.1}
_CANDIDATES = 100
_LIKE_SNIPPET_CHARS = 40


@dataclass(frozen=True)
class Filters:
    """Which messages a search may return."""

    roles: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    include_hidden: bool = False
    since: float | None = None
    until: float | None = None
    exclude_sessions: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()

    def sql(self, time_column: str = "m.created_at") -> tuple[str, list[object]]:
        """A ``WHERE`` fragment over ``m`` (messages) and ``s`` (sessions) and its parameters;
        ``since``/``until`` apply to ``time_column``."""
        clauses: list[str] = []
        params: list[object] = []

        def among(column: str, values: Sequence[str], negate: bool = False) -> None:
            marks = ",".join("?" * len(values))
            clauses.append(f"{column} {'NOT ' if negate else ''}IN ({marks})")
            params.extend(values)

        if self.roles:
            among("m.role", self.roles)
        if self.sources:
            among("s.source", self.sources)
        elif not self.include_hidden:
            among("s.source", sorted(HIDDEN_SOURCES), negate=True)
        if self.since is not None:
            clauses.append(f"{time_column} >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append(f"{time_column} < ?")
            params.append(self.until)
        if self.exclude_sessions:
            among("m.session_id", self.exclude_sessions, negate=True)
        if self.sessions:
            among("m.session_id", self.sessions)
        return (" AND ".join(clauses) or "1"), params


@dataclass(frozen=True)
class Match:
    """A matching message id with its score (lower is better) and highlighted snippet.

    ``table`` and ``fts_query`` say which index matched, so the snippet can be computed later and
    only for the matches actually returned.
    """

    message_id: int
    score: float
    snippet: str | None = None
    table: str = ""
    fts_query: str = ""


def _order(sort: str, score: str) -> str:
    if sort == "newest":
        return "m.created_at DESC, m.id DESC"
    if sort == "oldest":
        return "m.created_at ASC, m.id ASC"
    return f"{score}, m.id DESC"


def _fts_matches(
    conn: sqlite3.Connection, table: str, score: str, fts_query: str, filters: Filters, sort: str, limit: int,
    extra_where: str = "", extra_params: Sequence[object] = (), min_rowid: int | None = None,
) -> list[tuple[int, float]]:
    where, params = filters.sql()
    if min_rowid is not None:
        extra_where += f" AND {table}.rowid >= ?"
        extra_params = (*extra_params, min_rowid)
    rows = conn.execute(
        f"SELECT m.id, {score} AS score FROM {table} JOIN messages m ON m.id = {table}.rowid "
        f"JOIN sessions s ON s.id = m.session_id WHERE {table} MATCH ? AND {where}{extra_where} "
        f"ORDER BY {_order(sort, 'score')} LIMIT ?",
        (fts_query, *params, *extra_params, limit),
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def _snippets(conn: sqlite3.Connection, table: str, fts_query: str, ids: Iterable[int]) -> dict[int, str]:
    # Snippets are computed only for the rows being returned, not for every match that was ranked.
    ids = list(ids)
    if not ids:
        return {}
    column = -1 if table == "messages_fts" else 0
    rows = conn.execute(
        f"SELECT rowid, snippet({table}, {column}, ?, ?, '…', {_SNIPPET_TOKENS}) FROM {table} "
        f"WHERE {table} MATCH ? AND rowid IN ({','.join('?' * len(ids))})",
        (*HIGHLIGHT, fts_query, *ids),
    ).fetchall()
    return {row[0]: row[1] for row in rows}


def _like_snippet(text: str, needles: Sequence[str]) -> str:
    positions = [(text.find(n), n) for n in needles if n and text.find(n) >= 0]
    if not positions:
        return text[: 2 * _LIKE_SNIPPET_CHARS]
    start, needle = min(positions)
    left = max(0, start - _LIKE_SNIPPET_CHARS)
    right = min(len(text), start + len(needle) + _LIKE_SNIPPET_CHARS)
    return (
        ("…" if left else "")
        + text[left:start]
        + HIGHLIGHT[0] + needle + HIGHLIGHT[1]
        + text[start + len(needle) : right]
        + ("…" if right < len(text) else "")
    )


def _like_escape(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Searcher:
    """Runs searches on one connection; the caller holds the connection's lock."""

    def __init__(self, conn: sqlite3.Connection, *, trigram: bool) -> None:
        self._conn = conn
        self._trigram = trigram

    def find(self, query: str, *, limit: int, filters: Filters, sort: str = "relevance") -> list[Match]:
        """Up to ``limit`` matching messages, best first (or by time when ``sort`` says so)."""
        if sort not in SORTS:
            raise InvalidArgument("sort", f"must be one of {', '.join(SORTS)}")
        parsed = parse_query(query)
        if parsed.empty or limit <= 0:
            return []
        if parsed.cjk:
            return self._find_cjk(list(parsed.pieces), parsed.explicit, limit, filters, sort)
        if parsed.explicit:
            return self._run_fts(parsed.strict, limit, filters, sort)
        pool = max(limit, _CANDIDATES) if sort == "relevance" else limit
        found = self._rank(self._bounded(list(parsed.phrases), " ", pool, filters, sort), sort)[:limit]
        if len(found) < limit and parsed.terms:
            fallback = term_phrases(parsed.terms)
            if fallback and (fallback != list(parsed.phrases) or len(fallback) > 1):
                extra = self._rank(self._bounded(fallback, " OR ", pool, filters, sort), sort)
                found = _merge(found, extra, limit)
        return found

    def _rank(self, matches: list[Match], sort: str) -> list[Match]:
        """Re-rank relevance results with their neighbours' scores (see ``NEIGHBOUR_WEIGHTS``)."""
        if sort != "relevance" or len(matches) < 2:
            return matches
        ids = [m.message_id for m in matches]
        owner = dict(self._conn.execute(
            f"SELECT id, session_id FROM messages WHERE id IN ({','.join('?' * len(ids))})", ids
        ).fetchall())
        own = {m.message_id: -m.score for m in matches}  # bm25 is negative: larger is better here
        def smoothed(match: Match) -> float:
            mid = match.message_id
            total = own[mid]
            for distance, weight in NEIGHBOUR_WEIGHTS.items():
                for other in (mid - distance, mid + distance):
                    if other in own and owner.get(other) == owner.get(mid):
                        total += weight * own[other]
            return total
        rescored = [replace(m, score=-smoothed(m)) for m in matches]
        return sorted(rescored, key=lambda m: (m.score, -m.message_id))

    def _run_fts(self, fts_query: str, limit: int, filters: Filters, sort: str, min_rowid: int | None = None) -> list[Match]:
        ranked = _fts_matches(self._conn, "messages_fts", _BM25, fts_query, filters, sort, limit, min_rowid=min_rowid)
        return [Match(mid, score, None, "messages_fts", fts_query) for mid, score in ranked]

    def _probe(self, phrase: str) -> int | None:
        """None when ``phrase`` matches fewer rows than the budget, else the rowid above which its
        ``MATCH_BUDGET`` most recent matches lie (an index-only walk, cheap and bounded)."""
        rows = self._conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
            (phrase, MATCH_BUDGET),
        ).fetchall()
        return rows[-1][0] if len(rows) >= MATCH_BUDGET else None

    def _bounded(self, phrases: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        """Run ``phrases`` joined by ``joiner`` (implicit AND or OR) within the match budget."""
        if not phrases:
            return []
        full = joiner.join(phrases)
        probes = {phrase: self._probe(phrase) for phrase in phrases}
        common = {p: start for p, start in probes.items() if start is not None}
        if joiner == " " and len(common) < len(phrases):
            return self._run_fts(full, limit, filters, sort)  # an AND is no bigger than its rarest term
        if not common:
            return self._run_fts(full, limit, filters, sort)
        rare = [p for p in phrases if p not in common]
        # Within [start, newest] every common term has at most MATCH_BUDGET matches.
        start = min(common.values()) if joiner == " " else max(common.values())
        for _ in range(3):
            found = self._run_fts(full, limit, filters, sort, min_rowid=start)
            if rare:
                found = _best(found, self._run_fts(" OR ".join(rare), limit, filters, sort), limit, sort)
            if len(found) >= limit or start <= 1:
                return found
            start //= 4  # filters left too few in the window: widen it towards the oldest rows
        return self._run_fts(full, limit, filters, sort)

    def with_snippets(self, matches: Sequence[Match]) -> list[Match]:
        """``matches`` with their highlighted snippets filled in."""
        pending: dict[tuple[str, str], list[int]] = {}
        for match in matches:
            if match.snippet is None:
                pending.setdefault((match.table, match.fts_query), []).append(match.message_id)
        found: dict[tuple[str, str, int], str] = {}
        for (table, fts_query), ids in pending.items():
            for mid, text in _snippets(self._conn, table, fts_query, ids).items():
                found[(table, fts_query, mid)] = text
        return [
            m if m.snippet is not None else replace(m, snippet=found.get((m.table, m.fts_query, m.message_id), ""))
            for m in matches
        ]

    # -- CJK --------------------------------------------------------------------------------------

    def _find_cjk(self, pieces: list[str], explicit: bool, limit: int, filters: Filters, sort: str) -> list[Match]:
        long_terms = [p for p in pieces if len(p) >= 3] if self._trigram else []
        short_terms = [p for p in pieces if p not in long_terms]
        found = self._cjk_all(long_terms, short_terms, limit, filters, sort)
        if len(found) < limit and not explicit:
            grams = [g for p in long_terms for g in (cjk_ngrams(p) if has_cjk(p) else [p])]
            if len(grams) > 1 or short_terms:
                found = _merge(found, self._cjk_any(grams, short_terms, limit, filters, sort), limit)
        return found

    def _cjk_all(self, long_terms: list[str], short_terms: list[str], limit: int, filters: Filters, sort: str) -> list[Match]:
        likes = "".join(" AND m.content LIKE ? ESCAPE '\\'" for _ in short_terms)
        like_params = [_like_escape(t) for t in short_terms]
        if long_terms:
            fts_query = " AND ".join(_trigram_quote(t) for t in long_terms)
            ranked = _fts_matches(
                self._conn, "messages_cjk", "bm25(messages_cjk)", fts_query, filters, sort, limit, likes, like_params
            )
            return [Match(mid, score, None, "messages_cjk", fts_query) for mid, score in ranked]
        return self._like(short_terms, " AND ", limit, filters, sort)

    def _cjk_any(self, grams: list[str], short_terms: list[str], limit: int, filters: Filters, sort: str) -> list[Match]:
        found: list[Match] = []
        if grams:
            fts_query = " OR ".join(dict.fromkeys(_trigram_quote(g) for g in grams))
            ranked = _fts_matches(self._conn, "messages_cjk", "bm25(messages_cjk)", fts_query, filters, sort, limit)
            found = [Match(mid, score, None, "messages_cjk", fts_query) for mid, score in ranked]
        if short_terms and len(found) < limit:
            found = _merge(found, self._like(short_terms, " OR ", limit, filters, sort), limit)
        return found

    def _like(self, terms: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        # Substring scan over CJK-bearing rows only (a partial index keeps the scan small).
        where, params = filters.sql()
        likes = joiner.join("m.content LIKE ? ESCAPE '\\'" for _ in terms)
        rows = self._conn.execute(
            f"SELECT m.id, m.content FROM messages m JOIN sessions s ON s.id = m.session_id "
            f"WHERE m.has_cjk = 1 AND ({likes}) AND {where} "
            f"ORDER BY {_order('oldest' if sort == 'oldest' else 'newest', '0')} LIMIT ?",
            (*(_like_escape(t) for t in terms), *params, limit),
        ).fetchall()
        return [Match(row[0], 0.0, _like_snippet(row[1], terms)) for row in rows]


def _trigram_quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _best(first: list[Match], second: list[Match], limit: int, sort: str) -> list[Match]:
    """Union of two rankings of the same query family, best score (or time order) first.

    bm25 takes its statistics from the whole index, so a score over a subset of the query's terms is
    a lower bound of the full score and the two lists can be compared directly."""
    best: dict[int, Match] = {}
    for match in (*first, *second):
        if match.message_id not in best or match.score < best[match.message_id].score:
            best[match.message_id] = match
    ordered = sorted(best.values(), key=lambda m: (m.score, -m.message_id))
    if sort == "newest":
        ordered.sort(key=lambda m: -m.message_id)
    elif sort == "oldest":
        ordered.sort(key=lambda m: m.message_id)
    return ordered[:limit]


def _merge(first: list[Match], second: list[Match], limit: int) -> list[Match]:
    """Strict hits keep their lead; fallback hits fill the remaining places."""
    seen = {m.message_id for m in first}
    merged = list(first)
    for match in second:
        if len(merged) >= limit:
            break
        if match.message_id not in seen:
            seen.add(match.message_id)
            merged.append(match)
    return merged
