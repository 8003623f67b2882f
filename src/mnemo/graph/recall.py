"""Hybrid recall over the memory graph: full text, vectors, context, one hop of graph expansion.

Two channels propose candidates within one scope, ranked by the retrieval engine shared with the session
archive (:class:`mnemo.retrieval.Fusion`):

* ``fts``: BM25 over the memories' text, FTS5 on SQLite or ``tsvector`` on PostgreSQL (see
  :mod:`mnemo.graph.engine`); a natural-language question becomes a ranked OR of its meaningful terms;
* ``vector``: cosine similarity of the query's embedding to the stored ones (only when an embedder is
  set, and only vectors of that same model).

Memories written from the same (non-empty) ``source`` form a context, as turns of one conversation do: a
memory borrows relevance from the ones written just before and after it (by ``seq``; more from a question just
before it), from its source's best match, and from its source's full-text score with the whole source taken as
one document. A query that names a memory's ``subject`` (a speaker, a person) or a period it was written in ("in
May 2023", "last week") puts that memory ahead of its equals. Then the ``graph`` channel: from the best seeds,
one hop along each edge (either direction), scaled by the relation's multiplier and the edge weight. A seed that
is an old version passes its relevance up the ``updates`` edge to its successor, which is how recall comes to
prefer the newest version. Importance and recency come last, as a bounded prior.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..retrieval.dates import mentioned_periods
from ..retrieval.fusion import FTS, VECTOR, Fusion, Placement, asks_question, with_prior
from ..retrieval.names import names_mentioned
from ..retrieval.query import or_query, parse_query, term_phrases
from .schema import SCOPE_CLAUSE, SELECT_MEMORY, row_to_memory, scope_params
from .types import Memory, MemoryType, Relation, Scope

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder
    from .engine import GraphEngine, VectorIndex

FUSION = Fusion()
HOP_DECAY = 0.5
# Importance and recency reorder near-ties only. On LoCoMo a 0.25 share with a 30-day half-life scored within
# noise of this; the weaker prior is kept because a question about the past is no less about older memories.
RECENCY_HALF_LIFE_DAYS = 90.0
PRIOR_SHARE = 0.1
SEEDS = 10


@dataclass(frozen=True, slots=True)
class RecallResult:
    """One recalled memory, its score, and what found it.

    ``channels`` holds the raw signal of each channel that proposed it (``fts`` and ``vector`` in 0..1,
    ``graph`` the relevance passed along an edge); ``via`` names the edge for graph finds, as
    ``(seed_id, relation)``. ``status`` is ``"superseded"`` (a newer version ``updates`` it) or
    ``"disputed"`` (a newer memory ``contradicts`` it, or it contradicts a newer one), with ``newer_id``
    the newer memory; otherwise both are ``None``. ``similarity`` is the cosine of the memory's embedding
    and the query's, where the vector channel proposed it.
    """

    memory: Memory
    score: float
    channels: Mapping[str, float] = field(default_factory=dict)
    via: tuple[str, str] | None = None
    status: str | None = None
    newer_id: str | None = None
    similarity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view for tools and the CLI."""
        found = self.memory.as_dict()
        found["score"] = round(self.score, 4)
        found["channels"] = {k: round(v, 4) for k, v in self.channels.items()}
        if self.via is not None:
            found["via"] = {"memory": self.via[0], "relation": self.via[1]}
        if self.status is not None:
            found["status"] = self.status
            found["newer"] = self.newer_id
        return found


def prior(importance: float, age_days: float) -> float:
    """A memory's prior in [0, 1]: its importance, and how recently it was updated (exponential decay)."""
    recency = 0.5 ** (max(age_days, 0.0) / RECENCY_HALF_LIFE_DAYS)
    return 0.6 * importance + 0.4 * recency


def score(relevance: float, importance: float, age_days: float) -> float:
    """The final ranking score of one candidate: its fused relevance scaled within ``PRIOR_SHARE`` by its
    prior, so importance and recency reorder near-ties but never lift an irrelevant memory."""
    return with_prior(relevance, prior(importance, age_days), PRIOR_SHARE)


# A word found in this many memories adds almost nothing to bm25, yet ranking its matches walks its
# whole doclist: at 100k memories one such word ("user" in 45% of them) set recall's p95. Such words are
# left out of the full-text query, unless every word is that common (then none is more telling).
COMMON_MATCHES = 5_000
# About how many of its newest matches a word with more proposes to the full-text ranking (both engines).
PHRASE_WINDOW = 1_000
# Matches walked to score whole sources; the terms left out are the commonest, which tell sources apart least.
SOURCE_TEXT_MATCHES = 1_000


@dataclass(frozen=True, slots=True)
class _TextQuery:
    """What the full-text side of one recall runs: the FTS5 expression, and the terms (as FTS5 phrases)
    rare enough to score whole sources by."""

    expression: str
    source_terms: tuple[str, ...] = ()
    # How many memories hold each term (as its FTS5 phrase), where counted: up to COMMON_MATCHES.
    matches: Mapping[str, int] = field(default_factory=dict)


def _text_query(query: str, engine: GraphEngine | None = None) -> _TextQuery:
    parsed = parse_query(query)
    if parsed.explicit or not parsed.terms:
        return _TextQuery(parsed.strict)
    terms = list(parsed.terms)
    if engine is None:
        return _TextQuery(or_query(terms))
    counts = dict(zip(terms, engine.count_matches(engine.conn, [or_query([t]) for t in terms], COMMON_MATCHES), strict=True))
    rare = [term for term in terms if counts[term] < COMMON_MATCHES]
    # Scoring sources walks each term's matches: rarest terms first, within SOURCE_TEXT_MATCHES in all.
    counted, budget = [], SOURCE_TEXT_MATCHES
    for term in sorted(rare, key=counts.__getitem__):
        if counts[term] > budget:
            break
        counted.append(term)
        budget -= counts[term]
    return _TextQuery(or_query(rare or terms), tuple(term_phrases(counted)), {or_query([t]): n for t, n in counts.items()})


def match_expression(query: str, engine: GraphEngine | None = None) -> str:
    """The FTS5-syntax expression recall runs for ``query``: operators the user typed are kept, otherwise a
    ranked OR of the meaningful terms (every word need not appear in a memory for it to be relevant), less
    the words too common to help when ``engine`` is given to count them."""
    return _text_query(query, engine).expression


def _vector_candidates(
    conn: Any, scope: Scope, query: str, embedder: Embedder, vectors: VectorIndex, count: int
) -> dict[str, float]:
    """Raw cosine per candidate, forgotten memories included (:func:`search` drops them with the rows)."""
    if not query.strip():
        return {}
    probe = np.asarray(embedder.embed([query]), dtype=np.float32).reshape(1, embedder.dim)
    return {str(i): s for i, s in vectors.search(conn, scope, embedder, probe, count) if s > FUSION.vector_floor}


@dataclass(frozen=True, slots=True)
class _Row:
    """A memory read for one recall, with its place in write order, which contexts are built on."""

    memory: Memory
    seq: int


def _rows(conn: Any, ids: Iterable[str]) -> dict[str, _Row]:
    """The memories of ``ids`` that exist, with their write order."""
    ids = list(ids)
    found: dict[str, _Row] = {}
    for start in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
        chunk = ids[start : start + 500]
        for row in conn.execute(f"{SELECT_MEMORY} WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk):
            memory = row_to_memory(row)
            found[memory.id] = _Row(memory, row[-1])  # seq, SELECT_MEMORY's last column
    return found


def _placements(
    rows: Mapping[str, _Row], ids: Iterable[str], named: frozenset[str]
) -> tuple[dict[str, Placement], set[str], dict[str, float]]:
    """Each candidate's context (memories of one source, in write order), the candidates whose subject is
    one of ``named``, and when each candidate was created."""
    candidates = [rows[key] for key in ids]
    # A memory without a source has no known context: it stands alone.
    found = {
        row.memory.id: Placement(row.memory.source, row.seq, asks_question(row.memory.content))
        for row in candidates if row.memory.source
    }  # fmt: skip
    focus = {row.memory.id for row in candidates if row.memory.subject in named}
    created = {row.memory.id: row.memory.created_at for row in candidates}
    return found, focus, created


# Okapi BM25 constants for scoring a whole source as one document (FTS5's own are the same).
SOURCE_K1 = 1.2
SOURCE_B = 0.75


def _source_text(engine: GraphEngine, scope: Scope, phrases: tuple[str, ...], alive: str) -> dict[str, float]:
    """BM25 of each source taken as one document, from how many of its memories hold each term (a
    source is as long as its memory count). ``phrases`` come from :func:`_text_query`, which keeps their
    matches within ``SOURCE_TEXT_MATCHES``, so the cost stays bounded whatever the store's size."""
    if not phrases:
        return {}
    conn = engine.conn
    where = f"{SCOPE_CLAUSE.replace('m.', '')} AND field = 'source'"
    sources, memories = conn.execute(
        f"SELECT count(*), coalesce(sum(memories), 0) FROM graph_tallies WHERE {where}", scope_params(scope)
    ).fetchone()
    if sources < 2:
        return {}  # one source: nothing to tell apart
    held = engine.source_matches(conn, scope, phrases, alive)
    average = memories / sources
    scores: dict[str, float] = {}
    for rows in held:
        idf = math.log(1.0 + (sources - len(rows) + 0.5) / (len(rows) + 0.5))
        for source, hits, size in rows:
            norm = SOURCE_K1 * (1.0 - SOURCE_B + SOURCE_B * (hits if size is None else size) / average)
            scores[source] = scores.get(source, 0.0) + idf * hits * (SOURCE_K1 + 1.0) / (hits + norm)
    return scores


def named_subjects(conn: Any, scope: Scope, query: str) -> frozenset[str]:
    """The subjects of this scope's memories that ``query`` names (see :func:`names_mentioned`)."""
    subjects = conn.execute(
        f"SELECT value FROM graph_tallies WHERE {SCOPE_CLAUSE.replace('m.', '')} AND field = 'subject'",
        scope_params(scope),
    ).fetchall()
    return frozenset(names_mentioned(query, (row[0] for row in subjects)))


# Similarity links made by maintenance are not followed: on LoCoMo dev they cost 1.5 points of turn any@5
# (0.782 -> 0.767), while every other part of a maintenance pass left recall within 0.2 points.
_FOLLOWED = " AND NOT (a.relation = 'related_to' AND a.origin = 'maintenance')"


def _expand(
    conn: Any, seeds: dict[str, float], alive: str
) -> dict[str, tuple[float, tuple[str, str]]]:
    """Best relevance reaching each neighbour of ``seeds`` in one hop, and the edge it came by."""
    if not seeds:
        return {}
    marks = ", ".join("?" * len(seeds))
    ids = list(seeds)
    # Neighbours inherit the seed's scope through its edges (edges never cross scopes); forgotten
    # neighbours are filtered here so they cannot be revived through the graph.
    rows = conn.execute(
        "SELECT a.source_id AS seed, a.target_id AS other, a.relation, a.weight FROM graph_associations a"
        f" JOIN graph_memories m ON m.id = a.target_id WHERE a.source_id IN ({marks}){alive}{_FOLLOWED}"
        " UNION ALL "
        "SELECT a.target_id AS seed, a.source_id AS other, a.relation, a.weight FROM graph_associations a"
        f" JOIN graph_memories m ON m.id = a.source_id WHERE a.target_id IN ({marks}){alive}{_FOLLOWED}",
        (*ids, *ids),
    ).fetchall()
    reached: dict[str, tuple[float, tuple[str, str]]] = {}
    for seed, other, relation, weight in rows:
        signal = seeds[seed] * Relation(relation).multiplier * weight * HOP_DECAY
        if signal > reached.get(other, (0.0, ("", "")))[0]:
            reached[other] = (signal, (seed, relation))
    return reached


def search(
    engine: GraphEngine,
    scope: Scope,
    query: str,
    *,
    embedder: Embedder | None,
    vectors: VectorIndex,
    limit: int,
    types: frozenset[MemoryType] | None,
    window: tuple[float | None, float | None],
    include_superseded: bool,
    include_forgotten: bool,
    now: float,
    fusion: Fusion = FUSION,
) -> list[RecallResult]:
    """Run the channels and rank; the caller holds the connection's lock."""
    conn = engine.conn
    alive = "" if include_forgotten else " AND m.forgotten = 0"
    # Filters apply to results, not seeds: an old version or an off-type memory can still lead to a match.
    pool = max(limit * 5, 100)
    text = _text_query(query, engine)
    found = engine.text_candidates(conn, scope, text.expression, alive, pool, text.matches) if text.expression else {}
    raw: dict[str, dict[str, float]] = {FTS: found}
    # What the full text alone decides is read before the vector channel is asked: its search may still be
    # running on the other core (see MemoryGraph.recall), and this SQL is off the recall's critical path there.
    rows = _rows(conn, found)
    named = named_subjects(conn, scope, query)
    source_text = _source_text(engine, scope, text.source_terms, alive)
    if embedder is not None:
        raw[VECTOR] = _vector_candidates(conn, scope, query, embedder, vectors, pool)
        # One read of the proposed memories serves the vector hits' liveness, their contexts and the results.
        rows.update(_rows(conn, raw[VECTOR].keys() - rows.keys()))
    raw = {
        name: {key: value for key, value in values.items() if key in rows and (include_forgotten or not rows[key].memory.forgotten)}
        for name, values in raw.items()
    }  # fmt: skip
    normalised = fusion.normalise(raw)
    ids = list({key for values in normalised.values() for key in values})
    placements, focus, created = _placements(rows, ids, named)
    group_text = source_text if placements else {}
    periods = mentioned_periods(query, now)
    timely = {key for key, at in created.items() if periods.contains(at)} if periods else set()
    base = fusion.relevance(normalised, placements, group_text=group_text, focus=focus, timely=timely)
    seeds = dict(sorted(base.items(), key=lambda kv: kv[1], reverse=True)[:SEEDS])
    graph = _expand(conn, seeds, alive)
    rows.update(_rows(conn, graph.keys() - rows.keys()))

    since, until = window
    scored: list[tuple[float, Memory]] = []
    for key, row in rows.items():
        memory = row.memory
        if key not in base and key not in graph:
            continue
        if memory.scope != scope or (memory.forgotten and not include_forgotten):
            continue
        if memory.superseded and not include_superseded:
            continue
        if types is not None and memory.type not in types:
            continue
        if (since is not None and memory.created_at < since) or (until is not None and memory.created_at > until):
            continue
        relevance = base.get(memory.id, 0.0) + (graph[memory.id][0] if memory.id in graph else 0.0)
        value = score(relevance, memory.importance, (now - memory.updated_at) / 86_400.0)
        if value > 0 and math.isfinite(value):
            scored.append((value, memory))
    scored.sort(key=lambda item: (-item[0], -item[1].created_at))
    # Only the results kept are given their record: a recall scores a few hundred candidates to return ten.
    results = []
    for value, memory in scored[:limit]:
        channels = {name: values[memory.id] for name, values in normalised.items() if values.get(memory.id, 0) > 0}
        via = None
        if memory.id in graph:
            channels["graph"], via = graph[memory.id]
        results.append(RecallResult(memory, value, channels, via, similarity=raw.get(VECTOR, {}).get(memory.id)))
    return mark_disagreements(conn, results)


def mark_disagreements(conn: Any, results: list[RecallResult]) -> list[RecallResult]:
    """Mark each result that a newer memory supersedes or contradicts, and put the newer one first when both
    are among ``results``: two memories that disagree are never served as equally true."""
    if not results:
        return results
    ids = [r.memory.id for r in results]
    marks = ", ".join("?" * len(ids))
    edges = conn.execute(
        "SELECT a.source_id, a.target_id, s.created_at, s.seq, t.created_at, t.seq FROM graph_associations a"
        " JOIN graph_memories s ON s.id = a.source_id JOIN graph_memories t ON t.id = a.target_id"
        f" WHERE a.relation = 'contradicts' AND s.forgotten = 0 AND t.forgotten = 0"
        f" AND (a.source_id IN ({marks}) OR a.target_id IN ({marks}))",
        (*ids, *ids),
    ).fetchall()
    newer: dict[str, tuple[str, str]] = {}
    for result in results:
        if result.memory.superseded_by is not None:
            newer[result.memory.id] = ("superseded", result.memory.superseded_by)
    for source, target, source_at, source_seq, target_at, target_seq in edges:
        old, new = (target, source) if (source_at, source_seq) > (target_at, target_seq) else (source, target)
        if old not in newer:
            newer[old] = ("disputed", new)
    if not newer:
        return results
    marked = [
        replace(r, status=newer[r.memory.id][0], newer_id=newer[r.memory.id][1]) if r.memory.id in newer else r
        for r in results
    ]
    ordered: list[RecallResult] = []
    placed: set[str] = set()
    by_id = {r.memory.id: r for r in marked}
    for result in marked:
        if result.memory.id in placed:
            continue
        chain, current = [], result
        # Lift the newest version of whatever disagrees with this result above it (following chains).
        while current.newer_id is not None and current.newer_id in by_id and current.newer_id not in placed:
            current = by_id[current.newer_id]
            if current in chain or current is result:
                break
            chain.append(current)
        for newer_result in reversed(chain):
            ordered.append(newer_result)
            placed.add(newer_result.memory.id)
        ordered.append(result)
        placed.add(result.memory.id)
    return ordered
