"""Full-text search over archived messages: strict query first, ranked-OR fallback, CJK through the
trigram index (or a substring scan for very short CJK queries), filters, sorting, snippets.

Ranking is bm25 while every term is rarer than ``MATCH_BUDGET`` matches; with common terms it is an
IDF sum computed from bounded index probes, so a query costs about the same at a million messages as
at ten thousand. Those scores, and cosine similarities when the archive has an embedder, are ranked by
the retrieval engine shared with the memory graph (:class:`mnemo.retrieval.Fusion`): weighted channels,
relevance borrowed from neighbouring messages of the same session (more by the reply to a question, less
by the question), a boost for the best sessions and for sessions whose messages together hold the query's
rarer words, and one for the messages of a participant (their ``name``) the query mentions and for those
written in a period it names.

Everything here reads; the store owns writes and locking. Queries are always built from
:func:`mnemo.retrieval.parse_query`, so no text a user or model types reaches ``MATCH`` verbatim.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any, Protocol

from ..errors import InvalidArgument
from ..retrieval import (
    STOP_WORDS,
    Fusion,
    Placement,
    asks_question,
    bm25_idf,
    cjk_ngrams,
    has_cjk,
    parse_query,
    term_phrases,
)
from ..retrieval.dates import mentioned_periods
from ..retrieval.fusion import FTS, VECTOR
from ..retrieval.names import names_mentioned
from ..retrieval.passages import WORD, stem
from ..scope import Scope
from .records import HIDDEN_SOURCES, SPOKEN_ROLES


class VectorChannel(Protocol):
    """An engine's message vectors: the ``k`` messages nearest to ``query`` as ``(id, cosine)``, best first,
    among those with one of ``roles`` (any role when empty)."""

    def search(self, conn: Any, query: str, k: int, roles: Collection[str] = ()) -> list[tuple[int, float]]: ...


HIGHLIGHT = ("**", "**")
SORTS = ("relevance", "newest", "oldest")
# bm25 column weights: content, tool name, tool-call text. A word in the prose matters more than
# the same word inside a JSON argument.
_BM25 = "bm25(messages_fts, 1.0, 0.6, 0.4)"
_SNIPPET_TOKENS = 16
# A term with at least this many matches is "common": bm25 would cost a walk over its whole doclist,
# so queries with common terms are scored from bounded probes instead (see Searcher._bounded).
MATCH_BUDGET = 500
# Relevance ranking (channels, neighbouring messages, session evidence) over this many candidates.
FUSION = Fusion()
# For results shown beside the messages around them (``session_search``): lifting a message for its
# neighbour's relevance spends a place on what is shown next to that neighbour anyway. Grouped search,
# any / all evidence: LoCoMo dev 0.813 / 0.686 -> 0.818 / 0.693, BEAM dev 0.832 / 0.447 -> 0.883 / 0.480.
FUSION_SHOWN_IN_CONTEXT = replace(FUSION, neighbours=())
_CANDIDATES = 100
# The best results whose replies join the ranking though no channel found them, where they ask a question (the
# reply may answer it in words of its own). LoCoMo dev per turn any / all 0.800 / 0.680 -> 0.814 / 0.693.
LENDERS = 10  # 5 and 20 reached the same within two questions
# A spoken message, as neighbours are counted: what a user or the assistant said, not tool traffic (a turn
# that called tools sits between its question and its reply) nor an empty message.
_SPOKEN = f"t.role IN ({', '.join(repr(role) for role in SPOKEN_ROLES)}) AND t.content <> ''"


def nearest_spoken(session: str, message: str, side: str, count: int) -> str:
    """SQL both engines run (on their index of messages by session and id): the ids of the ``count`` spoken
    messages of ``session`` nearest to ``message`` on ``side`` (``"before"`` or ``"after"``), nearest first;
    ``session`` and ``message`` are SQL expressions (a column, a ``?``)."""
    compare, direction = ("<", "DESC") if side == "before" else (">", "ASC")
    return (
        f"SELECT t.id FROM messages t WHERE t.session_id = {session} AND t.id {compare} {message} AND {_SPOKEN}"
        f" ORDER BY t.id {direction} LIMIT {int(count)}"
    )


# Okapi BM25 constants for scoring a whole session as one document (FTS5's own are the same).
SESSION_K1 = 1.2
SESSION_B = 0.75
# Matches counted per query for the session scores, each a row lookup (~10 µs at a million messages).
# Below MATCH_BUDGET, so a probe cut short is never counted; on LoCoMo 50 scored within 0.002 of 500.
SESSION_TEXT_MATCHES = 100
# Whether a message asks is read from its end; a long tool output need not be loaded whole for that.
ASKS_TAIL = 500
_LIKE_SNIPPET_CHARS = 40


def scope_clause(alias: str) -> str:
    """The condition that the row ``alias`` (a session, or a message carrying its session's scope) belongs to a
    scope, with the scope's three ids as parameters (:meth:`Scope.as_params`)."""
    return f"{alias}.user_id = ? AND {alias}.agent_id = ? AND {alias}.channel_id = ?"


SESSION_SCOPE_CLAUSE = scope_clause("s")


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
    # (session id, message id): that session's messages after this id are left out, being still in the
    # model's context (what compression removed, up to the id, is fair game again).
    in_context: tuple[str, int] | None = None
    scope: Scope = field(default_factory=Scope)

    def sql(self, time_column: str = "m.created_at", *, sessions: str = "s") -> tuple[str, list[object]]:
        """A ``WHERE`` fragment over ``m`` (messages) and ``sessions``, the alias whose scope and source columns
        are read (``"m"`` where messages carry their session's), and its parameters; ``since``/``until`` apply
        to ``time_column``."""
        # The scope comes first and is never optional: no search can reach another scope's sessions.
        clauses: list[str] = [scope_clause(sessions)]
        params: list[object] = list(self.scope.as_params())

        def among(column: str, values: Sequence[str], negate: bool = False) -> None:
            marks = ",".join("?" * len(values))
            clauses.append(f"{column} {'NOT ' if negate else ''}IN ({marks})")
            params.extend(values)

        if self.roles:
            among("m.role", self.roles)
        if self.sources:
            among(f"{sessions}.source", self.sources)
        elif not self.include_hidden:
            among(f"{sessions}.source", sorted(HIDDEN_SOURCES), negate=True)
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
        if self.in_context is not None:
            clauses.append("NOT (m.session_id = ? AND m.id > ?)")
            params.extend(self.in_context)
        return " AND ".join(clauses), params


@dataclass(frozen=True)
class Match:
    """A matching message id with its score (lower is better) and highlighted snippet.

    ``table`` and ``fts_query`` say which index matched, so the snippet can be computed later and
    only for the matches actually returned. ``similarity`` is the cosine of the message's embedding and
    the query's when the vector channel proposed it.
    """

    message_id: int
    score: float
    snippet: str | None = None
    table: str = ""
    fts_query: str = ""
    similarity: float | None = None


def order_clause(sort: str, score: str) -> str:
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
        f"ORDER BY {order_clause(sort, 'score')} LIMIT ?",
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


_PHRASE_RE = re.compile(r'"((?:[^"]|"")*)"(\*?)')


def _query_words(fts_query: str) -> tuple[set[str], tuple[str, ...]]:
    exact: set[str] = set()
    prefixes: list[str] = []
    for body, star in _PHRASE_RE.findall(fts_query):
        words = WORD.findall(body.replace('""', '"'))
        for index, word in enumerate(words):
            if star and index == len(words) - 1:
                prefixes.append(word.lower())
            else:
                exact.add(stem(word))
    return exact, tuple(prefixes)


def highlight(text: str, fts_query: str, *, tokens: int = _SNIPPET_TOKENS) -> str:
    """A window of about ``tokens`` words of ``text`` around its densest run of query words, with those
    words marked. Computed in Python: asking FTS5 for snippets re-evaluates the query per row."""
    exact, prefixes = _query_words(fts_query)
    spans = [m.span() for m in WORD.finditer(text)]
    if not spans:
        return text[: 2 * _LIKE_SNIPPET_CHARS]

    def hit(span: tuple[int, int]) -> bool:
        word = text[span[0] : span[1]].lower()
        return stem(word) in exact or (bool(prefixes) and word.startswith(prefixes))

    marks = [hit(span) for span in spans]
    best = 0
    count = best_count = sum(marks[:tokens])
    for start in range(1, max(1, len(spans) - tokens + 1)):  # slide the window one word at a time
        count += marks[start + tokens - 1] - marks[start - 1]
        if count > best_count:
            best, best_count = start, count
    chosen = range(best, min(len(spans), best + tokens))
    pieces: list[str] = ["…" if best > 0 else text[: spans[0][0]]]
    for position in chosen:
        begin, end = spans[position]
        word = text[begin:end]
        pieces.append(HIGHLIGHT[0] + word + HIGHLIGHT[1] if marks[position] else word)
        after = spans[position + 1][0] if position + 1 < len(spans) else len(text)
        if position + 1 < chosen.stop or position + 1 == len(spans):
            pieces.append(text[end:after])
    if chosen.stop < len(spans):
        pieces.append("…")
    return "".join(pieces).strip()


def like_snippet(text: str, needles: Sequence[str]) -> str:
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


def like_pattern(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class BaseSearcher(ABC):
    """Runs searches on one connection (the caller holds it): the query plan and the ranking, the same on
    every engine. Each engine supplies how a phrase query is matched and scored (:meth:`_bounded`,
    :meth:`_run_fts`, :meth:`_probe`), CJK search, and the few columns ranking reads (:meth:`_rank_rows`)."""

    def __init__(self, conn: Any, *, vectors: VectorChannel | None = None) -> None:
        self._conn = conn
        self._vectors = vectors
        self._probes: dict[str, list[int]] = {}  # the strict query and its fallback share terms
        self._session_texts: dict[tuple[str, ...], dict[str, float]] = {}  # and so do their two rankings

    @abstractmethod
    def _run_fts(self, fts_query: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        """Messages matching ``fts_query`` (mnemo's FTS5-syntax query), ranked by the engine's text score."""

    @abstractmethod
    def _bounded(self, phrases: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        """``phrases`` joined by ``joiner`` (implicit AND or OR), matched and scored within a bounded cost."""

    @abstractmethod
    def _probe(self, phrase: str) -> list[int]:
        """The ids of ``phrase``'s most recent matches, newest first, at most ``MATCH_BUDGET``; an engine that
        knows without looking that ``phrase`` has more may return none (its matches are then never counted)."""

    def _counted(self, phrase: str) -> list[int]:
        """The matches of ``phrase`` that count as the searched scope's, for session evidence: its probe."""
        return self._probe(phrase)

    @abstractmethod
    def _find_cjk(self, pieces: list[str], explicit: bool, limit: int, filters: Filters, sort: str) -> list[Match]:
        """Search for text with CJK characters, which has no spaces between its words."""

    @abstractmethod
    def _rank_rows(self, ids: Sequence[int]) -> list[RankRow]:
        """``(id, session_id, end of content, participant name, created_at)`` of the messages ``ids``."""

    def _turns(self, ids: Collection[int]) -> dict[int, Turns]:
        """The spoken turns (see :func:`nearest_spoken`) just before and after each of the messages ``ids`` in its session,
        ``None`` at its ends."""
        if not ids:
            return {}
        rows = self._conn.execute(
            f"SELECT m.id, ({nearest_spoken('m.session_id', 'm.id', 'before', 1)}),"
            f" ({nearest_spoken('m.session_id', 'm.id', 'after', 1)}) FROM messages m WHERE m.id IN ({','.join('?' * len(ids))})",
            list(ids),
        ).fetchall()
        return {mid: (before, after) for mid, before, after in rows}

    def _table_snippets(self, table: str, fts_query: str, ids: list[int]) -> dict[int, str]:
        """Snippets the engine's own index makes, for matches not from the main full-text index."""
        return {}

    def find(
        self, query: str, *, limit: int, filters: Filters, sort: str = "relevance", fusion: Fusion = FUSION
    ) -> list[Match]:
        """Up to ``limit`` matching messages, best first (or by time when ``sort`` says so), ranked by ``fusion``."""
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
        fallback = term_phrases(parsed.terms)
        strict = self._bounded(list(parsed.phrases), " ", pool, filters, sort)
        found = self._rank(strict, sort, query, fallback, filters, fusion=fusion)[:limit]
        if len(found) < limit:
            # Strict hits keep their lead; the loose channels (OR of terms, vectors) and the replies to their
            # best questions fill the rest.
            loose: list[Match] = []
            if fallback and (fallback != list(parsed.phrases) or len(fallback) > 1):
                loose = self._bounded(fallback, " OR ", pool, filters, sort)
            similar = self._similar(query, " OR ".join(fallback) or parsed.strict, pool, filters, sort)
            if loose or similar:
                found = merge_matches(found, self._rank(loose, sort, query, fallback, filters, similar, fusion, lend=True), limit)
        return found

    def _similar(self, query: str, fts_query: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        """The vector channel: messages whose embedding is closest to the query's, filtered."""
        if self._vectors is None or sort != "relevance":
            return []
        # Scores follow the Match convention (lower is better): the negated cosine.
        # The roles are searched for, not filtered afterwards: a tool-using agent's tool output, near what the
        # user said in words and meaning, would otherwise take the places of the messages recall asks for.
        hits = [(mid, -cosine) for mid, cosine in self._vectors.search(self._conn, query, limit, filters.roles)
                if cosine > FUSION.vector_floor]  # fmt: skip
        return self._filtered(hits, fts_query, limit, filters, "relevance") if hits else []

    def _rank(
        self,
        matches: list[Match],
        sort: str,
        query: str,
        phrases: Sequence[str],
        filters: Filters,
        similar: Sequence[Match] = (),
        fusion: Fusion = FUSION,
        *,
        lend: bool = False,
    ) -> list[Match]:
        """Relevance results ranked by the shared engine: full-text scores (``matches``), cosine similarities
        (``similar``), neighbouring messages, questions and their replies, session evidence (including each
        session's full-text score for the topic words ``phrases``), and the messages of participants the
        ``query`` names. With ``lend``, the replies to the best ``LENDERS`` results that ask a question join them
        if they pass ``filters``, ranked by what they borrow (see :class:`~mnemo.retrieval.Fusion`). Time-sorted
        results are left as they are."""
        # The vector channel's score is the negated cosine. Each result is built once, at the end, with the
        # similarity the vector channel found for it: a turn ranks a few hundred candidates.
        cosines = {m.message_id: -m.score for m in similar}
        if sort != "relevance" or len(matches) + len(similar) < 2:
            shown = {m.message_id for m in matches}
            return [_with_similarity(m, cosines) for m in (*matches, *(m for m in similar if m.message_id not in shown))]
        by_id = {m.message_id: m for m in similar}
        by_id.update({m.message_id: m for m in matches})
        raw = {FTS: {m.message_id: -m.score for m in matches}}  # bm25 is negative: larger is better here
        if similar:
            raw[VECTOR] = {m.message_id: -m.score for m in similar}
        group_text = self._session_text(phrases)
        periods = mentioned_periods(query, time.time())
        links: dict[int, Turns] = {}

        def ranked_over(rows: list[RankRow], borrowers: Collection[int] = ()) -> list[tuple[int, float]]:
            # Only messages that share their session with another candidate have neighbours to count.
            links.update(self._turns([mid for mid in _sharing_a_session(rows) if mid not in links]))
            named = names_mentioned(query, {row[3] for row in rows if isinstance(row[3], str) and row[3]})
            return fusion.rank(
                raw, _turn_placements(rows, links, len(fusion.neighbours)), group_text=group_text,
                focus={row[0] for row in rows if row[3] in named},
                timely={row[0] for row in rows if periods.contains(row[4])} if periods else set(),
                borrowers=borrowers,
            )  # fmt: skip

        rows = self._rank_rows(list(by_id))
        ranked = ranked_over(rows)
        found = dict(by_id)
        if lend and fusion.neighbours:
            # Where neighbours are shown beside each result (grouped search), the turn after it needs no place.
            replies = {m.message_id: m for m in self._replies(ranked[:LENDERS], rows, links, by_id, " OR ".join(phrases), filters)}
            if replies:
                found.update(replies)
                ranked = ranked_over(rows + self._rank_rows(list(replies)), replies.keys())
        kept = {mid for mid, _ in ranked}
        # A candidate without positive relevance (a zero-scored AND window) still follows the ranked ones.
        results = []
        for mid, relevance in ranked:
            m = found[mid]
            results.append(Match(mid, -relevance, m.snippet, m.table, m.fts_query, cosines.get(mid, m.similarity)))
        results.extend(_with_similarity(m, cosines) for m in by_id.values() if m.message_id not in kept)
        return results

    def _replies(
        self,
        best: Sequence[tuple[int, float]],
        rows: Sequence[RankRow],
        links: dict[int, Turns],
        have: Collection[int],
        fts_query: str,
        filters: Filters,
    ) -> list[Match]:
        """The spoken turns just after those of the ``best`` results that ask a question, where they are not
        candidates yet and pass ``filters``: the reply is what answers. Lending every best result its next
        turn, or its turn before too, reached one LoCoMo dev question more per turn for many more turns of
        chatter ("remind me, please") in recall. ``links`` (see :meth:`_turns`) gains the askers' turns."""
        tails = {row[0]: row[2] for row in rows}
        askers = [mid for mid, _ in best if asks_question(tails[mid])]
        links.update(self._turns([mid for mid in askers if mid not in links]))
        wanted = sorted({links.get(mid, _NO_TURNS)[1] for mid in askers} - {None} - set(have))
        return self._filtered([(mid, 0.0) for mid in wanted], fts_query, len(wanted), filters, "relevance") if wanted else []

    def _session_text(self, phrases: Sequence[str]) -> dict[str, float]:
        """BM25 of each session taken as one document: a term's frequency is how many of the session's
        messages hold it, and a session is as long as its message count. This finds the session that
        talks about a topic across several messages even where no single message names all of it.

        Counted from the bounded probes, rarest term first, for at most ``SESSION_TEXT_MATCHES`` matches
        in all: each counted match costs a row lookup, and the terms left out are the common ones, which
        say least about which session is meant.
        """
        key = tuple(phrases)
        if key not in self._session_texts:
            self._session_texts[key] = self._count_sessions(phrases)
        return self._session_texts[key]

    def _count_sessions(self, phrases: Sequence[str]) -> dict[str, float]:
        counted: list[list[int]] = []
        budget = SESSION_TEXT_MATCHES
        for rows in sorted((rows for rows in map(self._counted, phrases) if rows), key=len):
            if len(rows) > budget:
                break
            counted.append(rows)
            budget -= len(rows)
        sessions, messages = self._totals()
        if not counted or sessions < 2:
            return {}  # nothing counted, or one session: nothing to tell apart
        owner = self._by_id("SELECT id, session_id FROM messages", {rowid for rows in counted for rowid in rows})
        holders = [Counter(owner[rowid] for rowid in rows if rowid in owner) for rows in counted]
        sizes = self._by_id("SELECT id, message_count FROM sessions", {s for held in holders for s in held})
        average = max(1.0, messages / sessions)
        scores: dict[str, float] = {}
        for held in holders:
            idf = math.log(1.0 + (sessions - len(held) + 0.5) / (len(held) + 0.5))
            for session, hits in held.items():
                norm = SESSION_K1 * (1.0 - SESSION_B + SESSION_B * sizes.get(session, hits) / average)
                scores[session] = scores.get(session, 0.0) + idf * hits * (SESSION_K1 + 1.0) / (hits + norm)
        return scores

    def _totals(self) -> tuple[int, int]:
        """How many sessions and messages the archive holds. The largest message id stands for the message
        count: exact unless messages were deleted, and found in O(log n) where counting would scan."""
        return self._conn.execute("SELECT (SELECT count(*) FROM sessions), (SELECT max(id) FROM messages)").fetchone()

    def _by_id(self, select: str, ids: Iterable[object]) -> dict:
        """``{id: value}`` from ``select`` (two columns, the first ``id``) for the rows with these ``ids``
        (at most ``SESSION_TEXT_MATCHES``, well under SQLite's bound-parameter limit)."""
        ids = list(ids)
        return dict(self._conn.execute(f"{select} WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall())

    def _filtered(
        self, ranked: list[tuple[int, float]], fts_query: str, limit: int, filters: Filters, sort: str
    ) -> list[Match]:
        """The first ``limit`` of ``ranked`` (rowid, score) that pass ``filters``, in ``sort`` order."""
        if sort == "newest":
            ranked = sorted(ranked, key=lambda item: -item[0])
        elif sort == "oldest":
            ranked = sorted(ranked, key=lambda item: item[0])
        if limit <= 0:
            return []
        where, params = filters.sql()
        kept: list[Match] = []
        chunk = max(4 * limit, 200)
        for offset in range(0, len(ranked), chunk):
            part = ranked[offset : offset + chunk]
            allowed = {row[0] for row in self._conn.execute(
                f"SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id"
                f" WHERE m.id IN ({','.join('?' * len(part))}) AND {where}",
                (*map(itemgetter(0), part), *params),
            ).fetchall()}
            for rowid, score in part:
                if rowid in allowed:
                    kept.append(Match(rowid, score, None, "messages_fts", fts_query))
                    if len(kept) == limit:
                        return kept
        return kept

    def with_snippets(self, matches: Sequence[Match]) -> list[Match]:
        """``matches`` with their highlighted snippets filled in."""
        pending: dict[tuple[str, str], list[int]] = {}
        for match in matches:
            if match.snippet is None:
                pending.setdefault((match.table, match.fts_query), []).append(match.message_id)
        found: dict[tuple[str, str, int], str] = {}
        for (table, fts_query), ids in pending.items():
            if table == "messages_fts":
                texts = self._conn.execute(
                    f"SELECT id, content, tool_name, tool_text FROM messages WHERE id IN ({','.join('?' * len(ids))})", ids
                ).fetchall()
                for mid, content, tool_name, tool_text in texts:
                    # The match may be in the tool name or call rather than the prose.
                    candidates = [t for t in (content, tool_text, tool_name) if t]
                    snippets = [highlight(t, fts_query) for t in candidates] or [""]
                    found[(table, fts_query, mid)] = max(snippets, key=lambda x: x.count(HIGHLIGHT[0]))
            else:
                for mid, text in self._table_snippets(table, fts_query, ids).items():
                    found[(table, fts_query, mid)] = text
        return [
            m if m.snippet is not None else replace(m, snippet=found.get((m.table, m.fts_query, m.message_id), ""))
            for m in matches
        ]


class OtherScopes:
    """Whether sessions of scopes other than ``scope`` are in an archive's database, kept across its searches.

    Asking the whole sessions table each search cost 7 ms at 100,000 sessions of one scope, so only sessions added
    since the last look are looked at (a session's scope never changes), and once another scope is seen the answer
    stays yes. A session that takes the row of the newest one after that was deleted goes unseen until the next
    one: until then ranking counts words over the whole table, which is where it stood before it counted them per
    scope. The caller serialises use of ``conn``."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope
        self._looked_upto = 0
        self._seen = False

    def present(self, conn: sqlite3.Connection) -> bool:
        """Whether another scope's session has been seen, after a look at the sessions added since the last."""
        if not self._seen:
            newest = conn.execute("SELECT COALESCE(max(rowid), 0) FROM sessions").fetchone()[0]
            if newest > self._looked_upto:
                self._seen = bool(conn.execute(
                    f"SELECT EXISTS (SELECT 1 FROM sessions s WHERE s.rowid > ? AND NOT ({SESSION_SCOPE_CLAUSE}))",
                    (self._looked_upto, *self._scope.as_params()),
                ).fetchone()[0])  # fmt: skip
                self._looked_upto = newest
        return self._seen


class Searcher(BaseSearcher):
    """Search on SQLite: FTS5 bm25 over ``messages_fts``, bounded probes for common terms, and the trigram
    index ``messages_cjk`` for CJK text.

    FTS5 counts words over its whole table. Where other scopes' sessions share the database, ranking takes
    how rare a word is from ``scope``'s own messages instead (:meth:`_bm25`, :meth:`_counted`, :meth:`_totals`),
    so a word another user writes all the time still tells this user's messages apart. What stays table-wide:
    the average message length bm25 compares with, and the weight of words too common to count exactly
    (``MATCH_BUDGET``). LoCoMo dev, five users in one home, per turn any / all: 0.784 / 0.666 -> 0.811 / 0.687,
    what each user gets in a home of its own (0.812 / 0.687).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        trigram: bool,
        scope: Scope,
        shared: bool,
        vectors: VectorChannel | None = None,
    ) -> None:
        """``shared`` says whether other scopes' sessions are in the database (see :class:`OtherScopes`)."""
        super().__init__(conn, vectors=vectors)
        self._trigram = trigram
        self._scope = scope
        self._others = shared
        self._own: dict[str, list[int]] = {}
        self._scores: dict[str, list[tuple[int, float]]] = {}
        self._sizes: tuple[int, int, int] | None = None

    def _rank_rows(self, ids: Sequence[int]) -> list[RankRow]:
        return self._conn.execute(
            f"SELECT id, session_id, substr(content, -{ASKS_TAIL}), json_extract(extra, '$.name'), created_at"
            f" FROM messages WHERE id IN ({','.join('?' * len(ids))})",
            list(ids),
        ).fetchall()

    def _table_snippets(self, table: str, fts_query: str, ids: list[int]) -> dict[int, str]:
        return _snippets(self._conn, table, fts_query, ids)

    def _run_fts(self, fts_query: str, limit: int, filters: Filters, sort: str, min_rowid: int | None = None) -> list[Match]:
        ranked = _fts_matches(self._conn, "messages_fts", _BM25, fts_query, filters, sort, limit, min_rowid=min_rowid)
        return [Match(mid, score, None, "messages_fts", fts_query) for mid, score in ranked]

    def _probe(self, phrase: str) -> list[int]:
        """The rowids of ``phrase``'s most recent matches, newest first, at most ``MATCH_BUDGET``
        (an index-only walk from the end: cheap and bounded whatever the archive's size)."""
        if phrase not in self._probes:
            rows = self._conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                (phrase, MATCH_BUDGET),
            ).fetchall()
            self._probes[phrase] = [row[0] for row in rows]
        return self._probes[phrase]

    def _shared(self) -> bool:
        return self._others

    def _counted(self, phrase: str) -> list[int]:
        """The scope's matches among ``phrase``'s probe."""
        rows = self._probe(phrase)
        if not rows or not self._shared():
            return rows
        if len(rows) < MATCH_BUDGET:
            return [rowid for rowid, _ in self._own_scores(phrase)]
        if phrase not in self._own:
            held = {row[0] for row in self._conn.execute(
                f"SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id"
                f" WHERE m.id IN ({','.join('?' * len(rows))}) AND {SESSION_SCOPE_CLAUSE}",
                (*rows, *self._scope.as_params()),
            )}  # fmt: skip
            self._own[phrase] = [rowid for rowid in rows if rowid in held]
        return self._own[phrase]

    def _own_scores(self, phrase: str) -> list[tuple[int, float]]:
        """The scope's matches of a rare ``phrase`` (fewer than ``MATCH_BUDGET`` in the table), each with the
        bm25 of ``phrase`` alone. The strict query and its fallback share phrases, so each is read once."""
        if phrase not in self._scores:
            self._scores[phrase] = self._conn.execute(
                f"SELECT messages_fts.rowid, {_BM25} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
                f" JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ? AND {SESSION_SCOPE_CLAUSE}",
                (phrase, *self._scope.as_params()),
            ).fetchall()
        return self._scores[phrase]

    def _scope_sizes(self) -> tuple[int, int, int]:
        """The scope's sessions and messages (a scan of the sessions, which have no scope index), and the table's
        messages (its largest id, as :meth:`_totals` counts them); read once per search."""
        if self._sizes is None:
            self._sizes = self._conn.execute(
                "SELECT count(*), COALESCE(sum(s.message_count), 0), (SELECT COALESCE(max(id), 0) FROM messages)"
                f" FROM sessions s WHERE {SESSION_SCOPE_CLAUSE}",
                self._scope.as_params(),
            ).fetchone()
        return self._sizes

    def _totals(self) -> tuple[int, int]:
        if not self._shared():
            return super()._totals()
        sessions, messages, _ = self._scope_sizes()
        return sessions, messages

    def _bm25(self, phrases: list[str], full: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        """``full`` (``phrases`` joined) ranked by bm25; where other scopes share the table, with each phrase's
        part of the score reweighted from FTS5's table-wide IDF to the IDF among the scope's own messages.

        FTS5's bm25 of a query is the sum of its phrases' scores, each the phrase's IDF times a part that
        depends only on the message; so each phrase is scored alone and scaled by ``own IDF / table IDF``. The
        caller checked that a phrase is rare, so its matches are counted exactly; a common one (a stop word
        of an AND) keeps its table-wide weight, and is scored only where the rare ones match.
        """
        if sort != "relevance" or not self._shared():
            return self._run_fts(full, limit, filters, sort)
        matched = [mid for mid, _ in _fts_matches(self._conn, "messages_fts", "0", full, filters, "newest", -1)]
        if not matched:
            return []
        scores = dict.fromkeys(matched, 0.0)
        _, own, table = self._scope_sizes()
        for phrase in phrases:
            probe = self._probe(phrase)
            if len(probe) < MATCH_BUDGET:
                rows = self._own_scores(phrase)
                weight = bm25_idf(own, len(rows)) / bm25_idf(table, len(probe))
            else:  # fewer matches than MATCH_BUDGET: an AND is no bigger than its rarest phrase
                weight, rows = 1.0, self._conn.execute(
                    f"SELECT rowid, {_BM25} FROM messages_fts WHERE messages_fts MATCH ?"
                    f" AND rowid IN ({','.join('?' * len(matched))})",
                    (phrase, *matched),
                ).fetchall()
            for rowid, score in rows:
                if rowid in scores:
                    scores[rowid] += weight * score
        ranked = sorted(scores.items(), key=lambda item: (item[1], -item[0]))[:limit]
        return [Match(mid, score, None, "messages_fts", full) for mid, score in ranked]

    def _bounded(self, phrases: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        """Run ``phrases`` joined by ``joiner`` (implicit AND or OR) within the match budget.

        FTS5's bm25 first counts every row holding each phrase, a walk over whole doclists that costs
        tens of milliseconds for a word found in a million messages. So bm25 is used when every term
        is rarer than ``MATCH_BUDGET`` (always, on small archives); otherwise rows are scored from
        the probes alone: each phrase a row holds adds that phrase's IDF, with common phrases looked
        at only in the recent stretch where each has at most ``MATCH_BUDGET`` matches.
        """
        if not phrases:
            return []
        full = joiner.join(phrases)
        if joiner == " ":
            # An AND is no bigger than its rarest term: one rare term makes bm25 cheap. Stop words
            # are common everywhere, so only topic words are probed (the first word if none).
            topical = [p for p in phrases if p.strip('"*').lower() not in STOP_WORDS] or phrases[:1]
            starts = []
            for phrase in topical:
                rows = self._probe(phrase)
                if len(rows) < MATCH_BUDGET:
                    return self._bm25(phrases, full, limit, filters, sort)
                starts.append(rows[-1])
            window = self._conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid >= ? ORDER BY rowid DESC",
                (full, max(starts)),
            ).fetchall()
            return self._filtered([(row[0], 0.0) for row in window], full, limit, filters, sort)
        probes = {phrase: self._probe(phrase) for phrase in phrases}
        if all(len(rows) < MATCH_BUDGET for rows in probes.values()):
            return self._bm25(phrases, full, limit, filters, sort)
        newest = max(rows[0] for rows in probes.values() if rows)
        start = max(rows[-1] for rows in probes.values() if len(rows) >= MATCH_BUDGET)
        scores: dict[int, float] = {}
        for rows in probes.values():
            if len(rows) < MATCH_BUDGET:
                frequency, counted = len(rows), rows
            else:  # extrapolate the document frequency from the density of recent matches
                frequency = MATCH_BUDGET * newest / max(1, newest - rows[-1] + 1)
                counted = [rowid for rowid in rows if rowid >= start]
            idf = bm25_idf(newest, frequency)
            for rowid in counted:
                scores[rowid] = scores.get(rowid, 0.0) - idf
        # Best score first, the newer message first on ties: sorted by id (newest first), then stably by score.
        ranked = sorted(sorted(scores.items(), reverse=True), key=itemgetter(1))
        return self._filtered(ranked, full, limit, filters, sort)

    # -- CJK --------------------------------------------------------------------------------------

    def _find_cjk(self, pieces: list[str], explicit: bool, limit: int, filters: Filters, sort: str) -> list[Match]:
        long_terms = [p for p in pieces if len(p) >= 3] if self._trigram else []
        short_terms = [p for p in pieces if p not in long_terms]
        found = self._cjk_all(long_terms, short_terms, limit, filters, sort)
        if len(found) < limit and not explicit:
            grams = [g for p in long_terms for g in (cjk_ngrams(p) if has_cjk(p) else [p])]
            if len(grams) > 1 or short_terms:
                found = merge_matches(found, self._cjk_any(grams, short_terms, limit, filters, sort), limit)
        return found

    def _cjk_all(self, long_terms: list[str], short_terms: list[str], limit: int, filters: Filters, sort: str) -> list[Match]:
        likes = "".join(" AND m.content LIKE ? ESCAPE '\\'" for _ in short_terms)
        like_params = [like_pattern(t) for t in short_terms]
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
            found = merge_matches(found, self._like(short_terms, " OR ", limit, filters, sort), limit)
        return found

    def _like(self, terms: list[str], joiner: str, limit: int, filters: Filters, sort: str) -> list[Match]:
        # Substring scan over CJK-bearing rows only (a partial index keeps the scan small).
        where, params = filters.sql()
        likes = joiner.join("m.content LIKE ? ESCAPE '\\'" for _ in terms)
        rows = self._conn.execute(
            f"SELECT m.id, m.content FROM messages m JOIN sessions s ON s.id = m.session_id "
            f"WHERE m.has_cjk = 1 AND ({likes}) AND {where} "
            f"ORDER BY {order_clause('oldest' if sort == 'oldest' else 'newest', '0')} LIMIT ?",
            (*(like_pattern(t) for t in terms), *params, limit),
        ).fetchall()
        return [Match(row[0], 0.0, like_snippet(row[1], terms)) for row in rows]


def _trigram_quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


RankRow = tuple[int, str, str, object, float]
"""What ranking reads of a message: see :meth:`BaseSearcher._rank_rows`."""
Turns = tuple[int | None, int | None]
"""A message's spoken turns before and after it: see :meth:`BaseSearcher._turns`."""
# What a message deleted since it was found (by another process, mid-search) has: no turns to count.
_NO_TURNS: Turns = (None, None)


def _sharing_a_session(rows: Iterable[RankRow]) -> list[int]:
    """The messages of ``rows`` whose session holds another of them."""
    sessions = Counter(row[1] for row in rows)
    return [row[0] for row in rows if sessions[row[1]] > 1]


def _turn_placements(rows: Iterable[RankRow], links: Mapping[int, Turns], reach: int) -> dict[int, Placement]:
    """Each message's place in its session, counted in spoken turns (``links``, for every message that shares
    its session with another): two messages are one apart when one is the other's turn before, two apart when
    one turn lies between them (seen from both sides), and beyond ``reach`` when neither. Tool traffic between
    a question and its reply, and other sessions' messages written in between, do not push them apart."""
    sessions: dict[str, list[RankRow]] = {}
    for row in rows:
        sessions.setdefault(row[1], []).append(row)
    placements: dict[int, Placement] = {}
    for session, members in sessions.items():
        if len(members) == 1:
            mid, _, tail, *_ = members[0]
            placements[mid] = Placement(session, 0, asks_question(tail))
            continue
        members.sort(key=itemgetter(0))
        position: dict[int, int] = {}
        followed: dict[int, int] = {}  # the turn after a member -> that member
        last = -(reach + 1)
        for mid, _, tail, *_ in members:
            before, after = links.get(mid, _NO_TURNS)
            if before in position:
                at = position[before] + 1
            elif before in followed:
                at = position[followed[before]] + 2
            else:
                at = last + reach + 1
            last = position[mid] = max(at, last + 1)
            if after is not None:
                followed[after] = mid
            placements[mid] = Placement(session, last, asks_question(tail))
    return placements


def _with_similarity(match: Match, cosines: Mapping[int, float]) -> Match:
    cosine = cosines.get(match.message_id)
    return match if cosine is None else replace(match, similarity=cosine)


def merge_matches(first: list[Match], second: list[Match], limit: int) -> list[Match]:
    """Strict hits keep their lead (and take the similarity the vector channel found for them); fallback hits
    fill the remaining places."""
    cosines = {m.message_id: m.similarity for m in second if m.similarity is not None}
    merged = [replace(m, similarity=cosines[m.message_id]) if m.message_id in cosines else m for m in first]
    seen = {m.message_id for m in first}
    for match in second:
        if len(merged) >= limit:
            break
        if match.message_id not in seen:
            seen.add(match.message_id)
            merged.append(match)
    return merged
