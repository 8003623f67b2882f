"""Memory-graph recall latency and ingest rate at 1k, 10k and 100k memories.

One database grows through the levels (1k, then 10k, then 100k memories in one scope, plus a second
scope's memories the recall must never see). At each level it prints recall p50/p95:

* ``recall, query embedded``: what an agent waits for per turn (MiniLM embeds each query, distinct texts
  so no cache helps), full text + vectors + graph expansion + ranking + the access-time touch;
* ``recall, repeated query``: the same queries again (their vectors come from the graph's LRU);
* ``recall, vector given``: the same queries with their vectors computed beforehand (recall minus the
  query embedding);
* ``recall, no embedder``: full text and graph only;
* baselines measured on the same database in the same run: the bare FTS5 ``MATCH ... ORDER BY bm25 LIMIT
  50`` recall runs, a bare brute-force search over the scope's vectors, and the bare MiniLM query embedding.

Memories are synthetic but deterministic: templated sentences per memory type whose content words are
drawn with a Zipf law from an English word list (so common words match thousands of rows, as in real
text), importance per type with jitter, a subject drawn from eleven names, sources of 40 consecutive
memories (sessions, so recall's context and whole-source scoring do their full work; one query template in
seven names a subject), ``related_to``/``caused_by`` edges from 8% of memories to earlier ones, and 2%
superseded by a newer version. Vectors: a few thousand distinct memory texts are embedded
for real by MiniLM; every other memory gets one of those real vectors plus small deterministic noise,
renormalised, stored under the same model name (embedding 100k texts for real would take ~25 minutes
here). Queries are real MiniLM embeddings of question-like texts.

Ingest: ``remember_many`` (batches of 1,000 in one transaction) and ``remember`` (one transaction each),
without embedding, which is deferred (the MiniLM rate on the real texts is printed at the top); and the
first recall of a new graph: with its vectors read from SQLite (as before vector files), with the vector
file written or caught up by that recall, and with the file mapped as it is.

With ``--database-url URL`` (or ``embedded``: a PostgreSQL 18 + pgvector server started for the run) the
same graph is then grown on PostgreSQL and measured the same way, in a scratch database dropped afterwards
(after each level's growth its tables are vacuumed and analysed and a checkpoint taken, so the role needs
the right to ``CHECKPOINT``): its rows sit beside SQLite's in the tables (the baselines and the
first-recall table are SQLite's own).

Usage: ``python bench/graph_scale.py [--quick] [--queries N] [--database-url URL|embedded]`` (``--quick``:
1k and 10k only).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from _tables import print_table
from mnemo import _db
from mnemo.embeddings import BruteForceIndex, MiniLMEmbedder
from mnemo.errors import InvalidArgument
from mnemo.graph import MemoryGraph, MemoryType, Relation, Scope
from mnemo.graph.recall import match_expression
from mnemo.storage import open_graph

_VOCAB = Path(__file__).resolve().parents[1] / "src" / "mnemo" / "embeddings" / "vocab.txt"
_REAL_TEXTS = 2_000  # distinct memory texts embedded for real; the rest reuse their vectors plus noise
_NOISE = 0.08  # per-dimension noise (before renormalising) on a reused vector: cosine ~0.75 to the source
_SCOPE = Scope(user_id="alice")
_OTHER = Scope(user_id="bob")

_TEMPLATES: dict[MemoryType, tuple[str, ...]] = {
    MemoryType.IDENTITY: ("The user is a {a} {b} who lives near {C}.", "My name is {C} and I work on {a} {b}."),
    MemoryType.GOAL: ("The user wants to finish the {a} {b} before {C}.", "Goal: learn {a} and {b} this year."),
    MemoryType.DECISION: ("We decided to use {a} instead of {b} for the {c} project.",
                          "Decision: move the {a} {b} to {C} next quarter."),
    MemoryType.TODO: ("Remember to send {C} the {a} {b} notes.", "Todo: fix the {a} in the {b} {c}."),
    MemoryType.PREFERENCE: ("The user prefers {a} {b} over {c}.", "{C} likes {a} with {b}, not {c}."),
    MemoryType.FACT: ("{C} has a {a} called {b}.", "The {a} {b} runs on {c} since {y}.",
                      "The {a} of {C} is close to the {b} {c}."),
    MemoryType.EVENT: ("On {d} the user went to {C} for the {a} {b}.", "{C} talked about {a} and {b} at the {c}."),
    MemoryType.OBSERVATION: ("The user seemed {a} when {b} came up.", "It looks like {C} reads about {a} {b} often."),
}  # fmt: skip
_TYPE_SHARE = {MemoryType.IDENTITY: 1, MemoryType.GOAL: 3, MemoryType.DECISION: 6, MemoryType.TODO: 6,
               MemoryType.PREFERENCE: 10, MemoryType.FACT: 34, MemoryType.EVENT: 25, MemoryType.OBSERVATION: 15}  # fmt: skip
_QUESTIONS = ("What does the user think about {a} and {b}?", "When did {C} mention the {a}?",
              "Which {a} {b} did we pick?", "what do I know about {a} {b} {c}", "{C} {a}",
              "Did the user ever talk about {a} at the {b}?", "What did {S} say about the {a}?")  # fmt: skip
# Who each memory is about (its subject), and how many consecutive memories share a source (a session).
_SUBJECTS = ("Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "user")
_SESSION = 40


class _Words:
    """Content words with Zipf-distributed draws (the word list is roughly in frequency order)."""

    def __init__(self, rng: random.Random) -> None:
        words = [w.strip() for w in _VOCAB.read_text(encoding="utf-8").splitlines()]
        alpha = [w for w in words if re.fullmatch(r"[a-z]{3,}", w)]
        self.words = alpha[200:20_200]  # skip the function words at the top
        weights = [1.0 / (rank + 10) for rank in range(len(self.words))]
        total = sum(weights)
        self._cumulative = np.cumsum(np.asarray(weights) / total)
        self._rng = rng

    def draw(self) -> str:
        index = int(np.searchsorted(self._cumulative, self._rng.random()))
        return self.words[min(index, len(self.words) - 1)]

    def fill(self, template: str) -> str:
        return template.format(
            a=self.draw(), b=self.draw(), c=self.draw(), C=self.draw().capitalize(),
            y=self._rng.randint(1990, 2025), d=f"{self._rng.randint(1, 28)} {self._rng.choice(_MONTHS)}",
            S=self._rng.choice(_SUBJECTS),
        )  # fmt: skip


_MONTHS = ("January", "March", "May", "July", "September", "November")


class _Corpus:
    """Deterministic memories, query texts and the vectors that go with them."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = _Words(self.rng)
        kinds = list(_TYPE_SHARE)
        self._kinds = kinds
        self._kind_weights = [_TYPE_SHARE[k] for k in kinds]
        self.noise = np.random.default_rng(seed)
        self.base_vectors: np.ndarray | None = None

    def memories(self, count: int) -> list[tuple[str, MemoryType, float]]:
        out = []
        for _ in range(count):
            kind = self.rng.choices(self._kinds, self._kind_weights)[0]
            text = self.words.fill(self.rng.choice(_TEMPLATES[kind]))
            importance = min(1.0, max(0.0, kind.default_importance + self.rng.uniform(-0.1, 0.1)))
            out.append((text, kind, round(importance, 3)))
        return out

    def questions(self, count: int) -> list[str]:
        return [self.words.fill(self.rng.choice(_QUESTIONS)) for _ in range(count)]

    def vectors_for(self, count: int) -> np.ndarray:
        """Vectors for ``count`` further memories: a real base vector each, plus noise, renormalised."""
        assert self.base_vectors is not None
        picks = self.noise.integers(0, len(self.base_vectors), size=count)
        out = self.base_vectors[picks] + self.noise.normal(0.0, _NOISE, size=(count, self.base_vectors.shape[1]))
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)


class _TableEmbedder:
    """MiniLM's name and dimension, vectors looked up by text (the bench's stand-in for embedding the
    memories it writes); a text not in the table is embedded by the real model."""

    def __init__(self, model: MiniLMEmbedder) -> None:
        self.name, self.dim = model.name, model.dim
        self.model = model
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.table]
        if missing:
            for text, vector in zip(missing, self.model.embed(missing), strict=True):
                self.table[text] = vector
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


class _RealQueries:
    """MiniLM's identity with every call embedded by the model: the per-turn cost of a new query."""

    def __init__(self, table: _TableEmbedder) -> None:
        self.name, self.dim = table.name, table.dim
        self._table = table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1 and texts[0] in self._table.table:
            return self._table.model.embed(texts)  # a query: pay for the model, as an agent would
        return self._table.embed(texts)  # memories written by the bench keep their table vectors


# -- helpers -----------------------------------------------------------------------------------------------


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    print_table(title, columns, rows, _cell)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def _percentiles(samples_ms: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _latency(run: Callable[[str], object], queries: Sequence[str]) -> tuple[float, float]:
    samples = []
    for query in queries:
        start = time.perf_counter()
        run(query)
        samples.append((time.perf_counter() - start) * 1000)
    return _percentiles(samples)


# -- building the store -----------------------------------------------------------------------------------


def _grow(graph: MemoryGraph, corpus: _Corpus, embedder: _TableEmbedder, count: int) -> tuple[float, float]:
    """Add ``count`` memories through ``remember_many`` (with edges and supersessions), give them their
    vectors through the real embedding path, and return the memories written per second and the vectors
    stored per second (their texts' vectors are looked up, so this is the store's own cost)."""
    items = corpus.memories(count)
    for (text, _, _), vector in zip(items, corpus.vectors_for(count), strict=True):
        embedder.table[text] = vector
    known = [m.id for m in graph.memories()] if count else []
    start = time.perf_counter()
    written = 0
    for begin in range(0, count, 1_000):
        batch = []
        for text, kind, importance in items[begin : begin + 1_000]:
            links: list[tuple[str, Relation, float]] = []
            roll = corpus.rng.random()
            if known and roll < 0.08:
                links.append((corpus.rng.choice(known), corpus.rng.choice((Relation.RELATED_TO, Relation.CAUSED_BY)), 0.8))
            batch.append({"content": text, "memory_type": kind, "importance": importance, "relations": links,
                          "source": f"session-{(len(known) + len(batch)) // _SESSION}",
                          "subject": corpus.rng.choice(_SUBJECTS)})  # fmt: skip
        stored = graph.remember_many(batch)
        known.extend(m.id for m in stored)
        written += len(stored)
    elapsed = time.perf_counter() - start
    # Supersessions: 2% of the new memories are replaced by a newer version.
    for old in corpus.rng.sample(known[-count:], max(1, count // 50)):
        try:
            text, kind, _ = corpus.memories(1)[0]
            embedder.table[text] = corpus.vectors_for(1)[0]
            graph.replace(old, text)
        except InvalidArgument:  # already superseded earlier in this loop
            continue
    start = time.perf_counter()
    stored = graph.embed_pending(batch_size=512)
    return written / elapsed, stored / max(time.perf_counter() - start, 1e-9)


def _single_ingest(graph: MemoryGraph, corpus: _Corpus, embedder: _TableEmbedder, count: int) -> float:
    items = corpus.memories(count)
    for (text, _, _), vector in zip(items, corpus.vectors_for(count), strict=True):
        embedder.table[text] = vector
    start = time.perf_counter()
    for text, kind, importance in items:
        graph.remember(text, kind, importance=importance)
    elapsed = time.perf_counter() - start
    graph.embed_pending()
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1k and 10k memories only")
    parser.add_argument("--queries", type=int, default=150, help="recall queries per measurement")
    parser.add_argument("--keep", type=Path, help="directory to keep the database in (default: a temp dir)")
    parser.add_argument("--database-url", help="also measure on PostgreSQL: a server URL, or 'embedded'")
    args = parser.parse_args()
    levels = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]

    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    corpus = _Corpus()
    model = MiniLMEmbedder()
    table = _TableEmbedder(model)

    base_texts = [text for text, _, _ in corpus.memories(_REAL_TEXTS)]
    queries = corpus.questions(args.queries)
    model.embed(queries[:8])  # load the model before anything is timed
    start = time.perf_counter()
    corpus.base_vectors = model.embed(base_texts)
    embed_rate = len(base_texts) / (time.perf_counter() - start)
    query_vectors = model.embed(queries)
    print(
        f"real MiniLM vectors: {_REAL_TEXTS:,} memory texts ({embed_rate:,.0f} texts/s: the rate of deferred"
        f" embedding) + {len(queries)} queries; every other memory vector is one of those {_REAL_TEXTS:,} plus"
        f" noise (sd {_NOISE}/dim), renormalised, stored as model {model.name!r}\n",
        flush=True,
    )

    workdir = tempfile.TemporaryDirectory() if args.keep is None else None
    root = Path(workdir.name) if workdir else args.keep
    root.mkdir(parents=True, exist_ok=True)
    db_path = root / "graph_scale.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)

    latency_rows: list[list[object]] = []
    ingest_rows: list[list[object]] = []
    cold_rows: list[list[object]] = []
    measure = _Measure(corpus, table, queries, query_vectors, model, levels, latency_rows, ingest_rows)
    measure.engine("sqlite", db_path, cold_rows)
    if args.database_url:
        from _postgres import scratch_database, server

        with server(args.database_url) as url, scratch_database(url) as target:
            measure.engine("postgres", target)

    _table("recall latency (ms), limit 10, all levels", ["engine", "memories in scope", "what", "p50", "p95"], latency_rows)
    _table(
        "ingest (memories/s while growing to the level; embedding is deferred: its rate is printed at the top)",
        ["engine", "level", "remember_many (1,000 per call)", "remember (one per call)", "vectors stored /s"],
        ingest_rows,
    )
    _table(
        "first recall of a new graph (ms; query embedded, model loaded; bench/cold_start.py measures new processes)",
        ["level", "vectors read from SQLite (before)", "vector file written or caught up", "vector file mapped"],
        cold_rows,
    )
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if workdir:
        workdir.cleanup()


class _Measure:
    """Grows one graph per engine through the levels and measures it the same way."""

    def __init__(
        self, corpus: _Corpus, table: _TableEmbedder, queries: list[str], query_vectors: np.ndarray,
        model: MiniLMEmbedder, levels: list[int], latency_rows: list[list[object]], ingest_rows: list[list[object]],
    ) -> None:  # fmt: skip
        self.corpus, self.table, self.queries, self.query_vectors, self.model = corpus, table, queries, query_vectors, model
        self.levels, self.latency_rows, self.ingest_rows = levels, latency_rows, ingest_rows

    def engine(self, engine: str, target: Path | str, cold_rows: list[list[object]] | None = None) -> None:
        corpus, table, queries = _Corpus(), self.table, self.queries  # the same memories for every engine
        corpus.base_vectors = self.corpus.base_vectors
        writer = open_graph(target, scope=_SCOPE, embedder=table)
        other = writer.with_scope(_OTHER)
        size = 0
        for level in self.levels:
            batch_rate, vector_rate = _grow(writer, corpus, table, level - size)
            single_rate = _single_ingest(writer, corpus, table, 200)
            # Another user of the same database, who wrote last: the recall must neither see nor re-read them.
            _grow(other, corpus, table, (level - size) // 10)
            size = level
            if engine == "postgres":
                _settle(str(target))
            active = writer.stats()["active"]
            self.ingest_rows.append([engine, f"{level:,}", f"{batch_rate:,.0f}", f"{single_rate:,.0f}", f"{vector_rate:,.0f}"])

            real = _RealQueries(table)
            table.table.update(zip(queries, self.query_vectors, strict=True))
            if cold_rows is not None:
                cold_rows.append([f"{level:,}", *_first_recalls(Path(target), real)])
            with open_graph(target, scope=_SCOPE, embedder=real) as graph:
                graph.recall("warm up the vector cache", limit=10)
                embedded = _latency(lambda q: graph.recall(q, limit=10), queries)
                repeated = _latency(lambda q: graph.recall(q, limit=10), queries)
            with open_graph(target, scope=_SCOPE, embedder=table) as graph:
                graph.recall(queries[0], limit=10)
                given = _latency(lambda q: graph.recall(q, limit=10), queries)
            with open_graph(target, scope=_SCOPE) as graph:
                graph.recall(queries[0], limit=10)
                plain = _latency(lambda q: graph.recall(q, limit=10), queries)
            tag = f"{level:,} ({active:,} active)"
            rows = [
                [engine, tag, "recall, query embedded", *embedded],
                [engine, tag, "recall, repeated query (vector cached)", *repeated],
                [engine, tag, "recall, vector given", *given],
                [engine, tag, "recall, no embedder", *plain],
            ]
            if engine == "sqlite":
                fts, brute, embed = _baselines(Path(target), queries, self.query_vectors, self.model)
                rows += [
                    [engine, tag, "baseline: bare FTS5 bm25 LIMIT 50", *fts],
                    [engine, tag, "baseline: bare brute-force vector top-50", *brute],
                    [engine, tag, "baseline: bare MiniLM query embedding", *embed],
                ]
            self.latency_rows += rows
            _table("recall latency (ms), limit 10", ["engine", "memories in scope", "what", "p50", "p95"], rows)
        writer.close()


def _settle(url: str) -> None:
    """Do now what PostgreSQL does by itself soon after a bulk load: statistics for the planner, vacuum
    (the HNSW and GIN indexes' upkeep), dirty pages written out. Left to autovacuum and the checkpointer,
    they land among the timed recalls, as ``bench/archive.py`` found (p95 2-3x, run to run)."""
    import psycopg

    from mnemo.backends.postgres.connection import SCHEMA

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("graph_memories", "graph_vectors", "graph_associations", "graph_tallies"):
            conn.execute(f"VACUUM ANALYZE {SCHEMA}.{table}")
        conn.execute("CHECKPOINT")


def _first_recalls(db_path: Path, embedder: _RealQueries) -> list[str]:
    """The first recall of a graph that reads its vectors from SQLite (a borrowed connection keeps no vector
    file), of one that writes or catches up the vector file, and of one that maps it as it is."""
    conn = _db.connect(db_path)
    timings = []
    try:
        for database in (conn, db_path, db_path):
            with open_graph(database, scope=_SCOPE, embedder=embedder) as graph:
                start = time.perf_counter()
                graph.recall("what was the first thing we talked about", limit=10)
                timings.append(f"{(time.perf_counter() - start) * 1000:,.0f}")
    finally:
        conn.close()
    return timings


def _baselines(
    db_path: Path, queries: Sequence[str], query_vectors: np.ndarray, model: MiniLMEmbedder
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    conn = sqlite3.connect(db_path)
    try:

        def fts(query: str) -> object:
            expression = match_expression(query)
            return conn.execute(
                "SELECT rowid, bm25(graph_memories_fts) AS r FROM graph_memories_fts WHERE graph_memories_fts"
                " MATCH ? ORDER BY r LIMIT 50",
                (expression,),
            ).fetchall() if expression else []

        fts_times = _latency(fts, queries)
        rows = conn.execute(
            "SELECT v.memory_id, v.vector FROM graph_vectors v JOIN graph_memories m ON m.id = v.memory_id"
            " WHERE m.user_id = ? AND m.agent_id = ? AND m.channel_id = ?",
            (_SCOPE.user_id, _SCOPE.agent_id, _SCOPE.channel_id),
        ).fetchall()
    finally:
        conn.close()
    index = BruteForceIndex(query_vectors.shape[1])
    index.add([r[0] for r in rows], np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(len(rows), -1))
    by_text = dict(zip(queries, query_vectors, strict=True))
    brute = _latency(lambda q: index.search(by_text[q], 50), queries)
    embed = _latency(lambda q: model.embed([q]), queries)
    return fts_times, brute, embed


if __name__ == "__main__":
    main()
