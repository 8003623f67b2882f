"""The memory graph on PostgreSQL: :class:`PostgresEngine`, the PostgreSQL side of :mod:`mnemo.graph.engine`.

A graph holds one connection of its own (:class:`~mnemo.backends.postgres.connection.Session`), as it holds one on
SQLite. A write transaction first takes an advisory lock per scope it writes, so the writers of one scope run
one at a time, as ``BEGIN IMMEDIATE`` makes SQLite's writers do, while other users' writers go on in
parallel: the graph's read-then-write steps (a cycle check, "already extracted?", a maintenance lease) stay
exact without serialisation retries.

Full text is scored with BM25 as FTS5 scores it: a phrase's term frequency is its ``ts_rank`` without
normalisation in units of one occurrence, saturated by ``k1`` and normalised by the memory's length against
the average of recent memories; its inverse document frequency counts its matches across the table (up to the
bound recall counts to), against the number of memories written. Vectors are searched with pgvector: an HNSW
index (cosine) per embedding model, over the model's rows at half precision
(:class:`~mnemo.backends.postgres.vectors.HnswIndex`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ...database import table_owner
from ...graph.engine import GraphEngine, Hits
from ...graph.recall import COMMON_MATCHES, PHRASE_WINDOW
from ...graph.schema import SCOPE_CLAUSE, scope_params
from ...retrieval import bm25_idf
from ...scope import Scope
from . import graph_schema
from .connection import Executor, PostgresDatabase, Session
from .text_search import K1, ONE_OCCURRENCE, B, TermStatistics, phrases
from .vectors import build_hnsw, hnsw_index, vector_text

if TYPE_CHECKING:
    from ...embeddings.protocol import Embedder

# Rare phrases' counts kept at most (see count_matches).
_COUNTS_KEPT = 1024


class PostgresEngine(GraphEngine):
    """The graph's tables in the PostgreSQL database at ``url`` (created or migrated on first use)."""

    same = "IS NOT DISTINCT FROM"

    def __init__(self, url: str) -> None:
        self.url = url
        self._database = PostgresDatabase.shared(url)
        try:
            self._database.migrate(graph_schema.COMPONENT, graph_schema.MIGRATIONS, lambda t: table_owner(t) is not None)
            self.conn: Session = self._database.session()
        except BaseException:
            self._database.release()
            raise
        self.vectors = PostgresGraphVectors()
        self._terms = TermStatistics("graph_memories", "seq")
        self._counts: dict[tuple[str, int], tuple[int, int]] = {}
        self._top_value, self._top_read = 0, -1.0

    @contextmanager
    def write(self, scopes: Iterable[Scope], *, durable: bool = True) -> Iterator[Session]:
        locks = ["mnemo:graph:" + "\x1f".join(scope_params(scope)) for scope in scopes]
        with self.conn.transaction(locks, durable=durable) as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        with self.conn.transaction(snapshot=True) as conn:
            yield conn

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            self._database.release()

    def has_table(self, name: str) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?", (name,)
        ).fetchone() is not None

    def greatest(self, *values: str) -> str:
        return f"GREATEST({', '.join(values)})"

    def power(self, base: str, exponent: str) -> str:
        return f"power({base}, {exponent})"

    def vector_values(self, column: str) -> str:
        return f"CAST({column} AS real[])"

    def matrix(self, values: Sequence[Sequence[float]], dim: int) -> np.ndarray:
        return np.asarray(values, dtype=np.float32).reshape(len(values), dim)

    def top(self, conn: Session, scope: Scope) -> int:
        # This scope's largest: another scope's writer may still commit a smaller seq, but never this one's.
        return conn.execute(
            f"SELECT COALESCE(max(seq), 0) FROM graph_memories m WHERE {SCOPE_CLAUSE}", scope_params(scope)
        ).fetchone()[0]

    def first_pending(self, scope: Scope, model: str, dim: int) -> int | None:
        with self._database.read() as executor:
            executor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                row = executor.execute(
                    f"SELECT m.seq FROM graph_memories m WHERE {SCOPE_CLAUSE} AND NOT EXISTS (SELECT 1 FROM"
                    " graph_vectors v WHERE v.memory_id = m.id AND v.model = ? AND v.dim = ?) ORDER BY m.seq LIMIT 1",
                    (*scope_params(scope), model, dim),
                ).fetchone()
                top = self.top(executor, scope)  # type: ignore[arg-type]
            finally:
                executor.execute("COMMIT")
        return top if row is None else row[0] - 1

    # -- full text ---------------------------------------------------------------------------------

    def _tsquery(self, conn: Session, expression: str) -> str:
        return self._terms.tsquery(conn, expression)

    def _top(self, conn: Session) -> int:
        """The newest seq of the whole table, re-read at most once a second (it only grows)."""
        now = time.monotonic()
        if now - self._top_read >= 1.0:
            self._top_value = conn.execute("SELECT COALESCE(max(seq), 0) FROM graph_memories").fetchone()[0]
            self._top_read = now
        return self._top_value

    def count_matches(self, conn: Session, expressions: Sequence[str], limit: int) -> list[int]:
        # Counting walks every match (a few microseconds each). A word common enough to be in the column's
        # statistics is counted from them, as the planner estimates it; any other is rare enough to count,
        # and how common it is changes slowly: a count is kept until the table has grown a tenth. The
        # phrases are compiled, and the rest counted, in one round trip each.
        tsqueries = self._terms.tsqueries(conn, expressions)
        top = self._top(conn)
        found: dict[str, int] = {"": 0}
        for tsquery in dict.fromkeys(tsqueries):
            if (share := self._terms.share(conn, tsquery)) is not None:
                found[tsquery] = min(limit, round(share * top))
            elif (known := self._counts.get((tsquery, limit))) is not None and top <= known[1] * 1.1 + 100:
                found[tsquery] = known[0]
        walk = [tsquery for tsquery in dict.fromkeys(tsqueries) if tsquery not in found]
        if walk:
            row = conn.execute(
                "SELECT " + ", ".join(
                    "(SELECT count(*) FROM (SELECT 1 FROM graph_memories WHERE search @@ CAST(? AS tsquery) LIMIT ?) AS hits)"
                    for _ in walk
                ),
                [value for tsquery in walk for value in (tsquery, limit)],
            ).fetchone()
            if len(self._counts) + len(walk) > _COUNTS_KEPT:
                self._counts.clear()
            for tsquery, count in zip(walk, row, strict=True):
                found[tsquery] = count
                self._counts[(tsquery, limit)] = (count, top)
        return [found[tsquery] for tsquery in tsqueries]

    def text_candidates(
        self, conn: Session, scope: Scope, expression: str, alive: str, count: int, matches: Mapping[str, int]
    ) -> dict[str, float]:
        matched = self._tsquery(conn, expression)
        scored = {q: p for p in dict.fromkeys(phrases(expression)) if (q := self._tsquery(conn, p))}
        if not matched or not scored:
            return {}
        documents = self._top(conn)
        uncounted = [p for p in scored.values() if p not in matches]
        counted = {**dict(zip(uncounted, self.count_matches(conn, uncounted, COMMON_MATCHES), strict=True)), **matches}
        counts = [counted[p] for p in scored.values()]
        weights = [bm25_idf(documents, found) for found in counts]
        frequencies = ", ".join(
            f"ts_rank(m.search, CAST(? AS tsquery), 0) / {ONE_OCCURRENCE} AS f{i}" for i in range(len(scored))
        )
        norm = f"{K1} * (1 - {B} + {B} * length(m.search) / ?)"
        score = " + ".join(f"? * f{i} * {K1 + 1} / (f{i} + {norm})" for i in range(len(scored)))
        # A phrase with many matches proposes only its newest ones (about PHRASE_WINDOW, from how densely it
        # occurs), as FTS5's walk of a long doclist is bounded on SQLite; every candidate is still scored on
        # every phrase. An explicit query (NOT, AND) keeps its whole match.
        where, window = "m.search @@ CAST(? AS tsquery)", [matched]
        if " AND " not in expression and " NOT " not in expression and max(counts) > PHRASE_WINDOW:
            clauses, window = [], []
            for tsquery, found in zip(scored, counts, strict=True):
                if found > PHRASE_WINDOW:
                    clauses.append("(m.search @@ CAST(? AS tsquery) AND m.seq >= ?)")
                    window += [tsquery, int(documents - PHRASE_WINDOW * documents / found)]
                else:
                    clauses.append("m.search @@ CAST(? AS tsquery)")
                    window.append(tsquery)
            where = "(" + " OR ".join(clauses) + ")"
        average = self._terms.average_length(conn)
        rows = conn.execute(
            f"SELECT m.id, {score} AS score FROM graph_memories m CROSS JOIN LATERAL (SELECT {frequencies}) AS tf"
            f" WHERE {where} AND {SCOPE_CLAUSE}{alive} ORDER BY score DESC, m.seq DESC LIMIT ?",
            (*[v for w in weights for v in (w, average)], *scored, *window, *scope_params(scope), count),
        ).fetchall()
        return {row[0]: float(row[1]) for row in rows}

    def source_matches(
        self, conn: Session, scope: Scope, phrases: Sequence[str], alive: str
    ) -> list[list[tuple[str, int, int | None]]]:
        compiled = [self._tsquery(conn, phrase) for phrase in phrases]
        wanted = [q for q in compiled if q]
        if not wanted:
            return [[] for _ in phrases]
        # One walk of the matches of them all, counted per phrase; each source's size is joined on after
        # grouping (a lookup per source from inside the grouping cost twice as much at 100k memories).
        held = ", ".join(f"count(*) FILTER (WHERE m.search @@ CAST(? AS tsquery)) AS c{i}" for i in range(len(wanted)))
        # Plain tuples: each row is read once per phrase, and a PostgreSQL row's item access is a Python call.
        rows = [tuple(row) for row in conn.execute(
            f"SELECT g.source, t.memories, {', '.join(f'g.c{i}' for i in range(len(wanted)))} FROM (SELECT m.source,"
            f" {held} FROM graph_memories m WHERE m.search @@ CAST(? AS tsquery) AND {SCOPE_CLAUSE}"
            f" AND m.source <> ''{alive} GROUP BY m.source) AS g LEFT JOIN graph_tallies t"
            f" ON {SCOPE_CLAUSE.replace('m.', 't.')} AND t.field = 'source' AND t.value = g.source",
            (*wanted, " | ".join(f"({q})" for q in wanted), *scope_params(scope), *scope_params(scope)),
        )]  # fmt: skip
        column = {q: i + 2 for i, q in enumerate(wanted)}
        return [
            [(row[0], row[column[q]], row[1]) for row in rows if row[column[q]]] if q else []
            for q in compiled
        ]

    # -- vectors -----------------------------------------------------------------------------------

    def store_vectors(
        self, conn: Session, scope: Scope, embedder: Embedder, ids: Sequence[str], vectors: np.ndarray
    ) -> None:
        self.vectors.ensure_index(conn, embedder.name, embedder.dim)
        conn.executemany(
            "INSERT INTO graph_vectors (memory_id, model, dim, vector, user_id, agent_id, channel_id)"
            " SELECT ?, ?, ?, CAST(? AS vector), ?, ?, ? WHERE EXISTS (SELECT 1 FROM graph_memories WHERE id = ?)"
            " ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, dim = excluded.dim, vector = excluded.vector",
            [
                (memory_id, embedder.name, embedder.dim, vector_text(vector), *scope_params(scope), memory_id)
                for memory_id, vector in zip(ids, vectors, strict=True)
            ],
        )


class PostgresGraphVectors:
    """The graph's vector search on pgvector (a :class:`~mnemo.graph.engine.VectorIndex`). The database is
    the only copy, so there is nothing to catch up, prefetch or erase here."""

    def __init__(self) -> None:
        self._indexed: set[tuple[str, int]] = set()

    def ensure_index(self, conn: Executor, model: str, dim: int) -> None:
        """Create the HNSW index of ``model``'s vectors unless it exists, inside the caller's transaction."""
        if (model, dim) not in self._indexed:
            build_hnsw(conn, hnsw_index("graph_vectors", "vector", model, dim))
            self._indexed.add((model, dim))

    def search(self, conn: Session, scope: Scope, embedder: Embedder, probe: np.ndarray, k: int) -> Hits:
        if k <= 0:
            return []
        index = hnsw_index("graph_vectors", "vector", embedder.name, embedder.dim)
        # The walk keeps enough candidates for a pool of 100 and goes on past other scopes' vectors: every
        # connection is configured with hnsw.ef_search and hnsw.iterative_scan (see mnemo.backends.postgres.connection).
        text = vector_text(np.asarray(probe, dtype=np.float32).reshape(-1))
        found = conn.execute(
            f"SELECT memory_id, 1 - ({index.full} <=> CAST(? AS vector)) AS cosine FROM graph_vectors"
            f" WHERE {index.rows} AND {SCOPE_CLAUSE.replace('m.', '')} ORDER BY {index.order} <=> CAST(? AS halfvec)"
            " LIMIT ?",
            (text, *scope_params(scope), text, k),
        ).fetchall()
        # relaxed_order may return near-ties out of order.
        return sorted(((row[0], float(row[1])) for row in found), key=lambda hit: -hit[1])

    def search_many(
        self, conn: Session, scope: Scope, embedder: Embedder, probes: np.ndarray, k: int, min_score: float
    ) -> list[Hits]:
        return [[hit for hit in self.search(conn, scope, embedder, probe, k) if hit[1] >= min_score] for probe in probes]

    def prefetch(self, conn: Any, scope: Scope, embedder: Embedder, probe: Future[np.ndarray], k: int) -> None:
        """Nothing to prepare: the search is one query, run when the probe is ready. (Running it ahead on a
        pooled connection of its own, beside the full-text query, made no measurable difference on 2 cores:
        the server's processes and the client already keep both busy.)"""

    def forget(self, conn: Any, scope: Scope, vectors: Iterable[tuple[int, str, int]]) -> None:
        """Nothing to erase: purged vectors left the database with their memories."""
