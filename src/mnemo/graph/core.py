"""The memory graph's core: opening on an engine, the scope, validation of what is written, and keeping
vectors up to date. Reads, writes and maintenance build on it (see :mod:`mnemo.graph.store`)."""

from __future__ import annotations

import copy
import os
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from .._time import to_timestamp
from ..embeddings.queries import background
from ..errors import InvalidArgument, check_text
from ..retrieval.names import name_key
from ..safety.scan import check_threshold, scan_many
from .engine import GraphEngine
from .errors import BlockedContent
from .schema import scope_params
from .types import (
    Relation,
    Scope,
    parse_relation,
    parse_unit_interval,
)

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder

MAX_CONTENT_CHARS = 4_000
# Bounds the work a recall may do to catch up on pending embeddings; the rest waits for the next recall
# or embed_pending(). Unembedded memories are still found by full text, so this only delays, never loses.
EMBED_PER_RECALL = 256
EMBED_BATCH = 64
MAX_SUBJECT_CHARS = 200


Link = tuple[str, "Relation | str"] | tuple[str, "Relation | str", float]
"""``(target_id, relation[, weight])``: an edge from a memory being written to an existing one."""


def parse_time(value: Any, field: str) -> float | None:
    """A time filter as Unix seconds (None when not given): a number, a ``datetime`` or an ISO 8601 string."""
    return None if value is None else to_timestamp(value, field)


class GraphCore:
    """What every part of :class:`~mnemo.graph.MemoryGraph` stands on: the engine, the scope, the lock, the
    checks of what is written, and keeping vectors up to date (see the graph's own docstring)."""

    def __init__(
        self,
        engine: GraphEngine,
        *,
        scope: Scope | None = None,
        embedder: Embedder | None = None,
        max_content_chars: int = MAX_CONTENT_CHARS,
        embed_per_recall: int = EMBED_PER_RECALL,
        clock: Callable[[], float] = time.time,
        scan_threshold: float | None = None,
    ) -> None:
        check_threshold(scan_threshold)
        if not isinstance(engine, GraphEngine):
            raise InvalidArgument("engine", f"must be a GraphEngine, got {type(engine).__name__} (open a database with mnemo.storage.open_graph)")
        self._engine = engine
        self._conn = self._engine.conn
        self._owns_connection = True
        self.scope = scope if scope is not None else Scope()
        self.embedder = embedder
        self.max_content_chars = max_content_chars
        self.scan_threshold = scan_threshold
        self.embed_per_recall = embed_per_recall
        self._clock = clock
        self._lock = threading.RLock()
        self._vectors = self._engine.vectors
        self._embedded_upto: dict[tuple[Scope, str, int], int] = {}
        # The table's latest seq when each scope was last found embedded up to its top.
        self._settled_at: dict[tuple[Scope, str, int], int] = {}
        self._backlog: dict[tuple[Scope, str, int], tuple[int, Future[int]]] = {}  # by the process that asked
        self._closed = False

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close the connection if this graph opened it; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owns_connection:
                self._engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self, scopes: Iterable[Scope] = (), *, durable: bool = True) -> Iterator[Any]:
        """A write transaction of this scope's (and ``scopes``') work, under this graph's lock."""
        with self._lock, self._engine.write([self.scope, *scopes], durable=durable) as conn:
            yield conn

    def with_scope(self, scope: Scope) -> Self:
        """Another view of the same database confined to ``scope``. It shares this graph's connection and
        lock (closing the view leaves the connection open)."""
        view = copy.copy(self)
        view.scope = scope
        view._owns_connection = False
        view._closed = False
        return view

    # ----------------------------------------------------------------- validation

    def check_content(self, content: Any, field: str = "content") -> str:
        """``content`` stripped, or a refusal naming ``field``: wrong type, empty, undecodable, too long,
        or blocked by the threat scan."""
        return self.check_contents([content], [field])[0]

    def check_contents(self, contents: Sequence[Any], fields: Sequence[str]) -> list[str]:
        """:meth:`check_content` of each of ``contents`` (named by ``fields``), the threat scan run on the
        batch at once: every other check first, then the scan; the first refusal is raised."""
        texts = [self._unscanned(content, field) for content, field in zip(contents, fields, strict=True)]
        for field, findings in zip(fields, scan_many(texts, threshold=self.scan_threshold), strict=True):
            if findings:
                raise BlockedContent(field, findings)
        return texts

    def _unscanned(self, content: Any, field: str) -> str:
        if not isinstance(content, str):
            raise InvalidArgument(field, f"must be a string, got {type(content).__name__}")
        text = content.strip()
        if not text:
            raise InvalidArgument(field, "must not be empty")
        check_text(field, text)
        if len(text) > self.max_content_chars:
            raise InvalidArgument(field, f"is {len(text):,} characters; the limit is {self.max_content_chars:,}")
        return text

    @staticmethod
    def _check_id(value: Any, field: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument(field, "must be a non-empty memory id string")
        return value.strip()

    @staticmethod
    def _check_source(value: Any, field: str = "source") -> str:
        if not isinstance(value, str):
            raise InvalidArgument(field, f"must be a string, got {type(value).__name__}")
        return value

    @staticmethod
    def check_subject(value: Any, field: str = "subject") -> str:
        """A subject as stored: :func:`subject_key` of a name without control characters (empty for none)."""
        if not isinstance(value, str):
            raise InvalidArgument(field, f"must be a string, got {type(value).__name__}")
        if any(unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r\v\f" for ch in value):
            raise InvalidArgument(field, "must not contain control or invisible format characters")
        name = name_key(value)
        if len(name) > MAX_SUBJECT_CHARS:
            raise InvalidArgument(field, f"is {len(name)} characters; the limit is {MAX_SUBJECT_CHARS}")
        return name

    def _parse_links(self, links: Iterable[Link], prefix: str = "") -> list[tuple[str, Relation, float]]:
        parsed = []
        for index, link in enumerate(links):
            field = f"{prefix}relations[{index}]"
            if not isinstance(link, (tuple, list)) or len(link) not in (2, 3):
                raise InvalidArgument(field, "must be (target_id, relation) or (target_id, relation, weight)")
            target = self._check_id(link[0], f"{field}.target")
            relation = parse_relation(link[1], f"{field}.relation")
            weight = parse_unit_interval(link[2], f"{field}.weight") if len(link) == 3 else 1.0
            parsed.append((target, relation, weight))
        return parsed

    # ----------------------------------------------------------------- embeddings

    def embed_pending(self, limit: int | None = None, *, batch_size: int = EMBED_BATCH, scan: int | None = None) -> int:
        """Embed memories of this scope that have no vector from the current model (new ones, or all of
        them after a model change), in batches; returns how many were embedded.

        A cursor per scope and model remembers how far everything is embedded, so the check costs only
        the memories written since (``seq`` only grows). A new process does not know the cursor, and
        finding it walks every memory (0.5 s at 100k); with ``scan`` (as a recall asks) it checks only the
        newest ``scan`` seqs now, where pending memories usually are, while a worker thread finds the
        cursor on a connection of its own.
        """
        embedder = self.embedder
        if embedder is None:
            return 0
        key = (self.scope, embedder.name, embedder.dim)
        # Nothing written anywhere since then, nothing to check: on PostgreSQL, where a scope's top and the
        # memories above the cursor are read past other scopes' newer rows, this saves a recall 5-20 ms at
        # 100k memories. A write of this scope that commits later with a smaller seq than another scope's
        # (possible only between hosts) waits for the next write anywhere to be embedded; full text finds
        # it meanwhile.
        with self._lock:
            latest = self._engine.latest(self._conn)
        if self._settled_at.get(key) == latest:
            return 0
        if scan is not None and key not in self._embedded_upto and self._engine.reads_apart:
            pid, finding = self._backlog.get(key, (None, None))
            if finding is None or pid != os.getpid():  # a forked child never sees its parent's worker finish
                finding = background().submit(self._engine.first_pending, *key)
                self._backlog[key] = (os.getpid(), finding)
            if not finding.done() or finding.exception() is not None:
                with self._lock:
                    top = self._engine.top(self._conn, self.scope)
                done = self._embed_range(max(0, top - scan), limit, batch_size, move_cursor=False)
                if finding.done():  # it failed: walk here, as without a worker
                    del self._backlog[key]
                    self._embedded_upto[key] = 0
                return done
            self._embedded_upto.setdefault(key, finding.result())
        return self._embed_range(self._embedded_upto.get(key, 0), limit, batch_size)

    def _embed_range(self, low: int, limit: int | None, batch_size: int, *, move_cursor: bool = True) -> int:
        """Embed the pending memories above seq ``low``; returns how many. Moves the cursor (when asked)
        as far as everything is embedded."""
        embedder = self.embedder
        assert embedder is not None
        key = (self.scope, embedder.name, embedder.dim)
        done = 0
        cursor = low
        while limit is None or done < limit:
            want = batch_size if limit is None else min(batch_size, limit - done)
            plain = self._engine.plain
            # One read snapshot, so "nothing pending up to the top" is true of the same state.
            with self._lock, self._engine.snapshot() as conn:
                latest = self._engine.latest(conn)
                rows = conn.execute(
                    "SELECT m.seq, m.id, m.content FROM graph_memories m"
                    " LEFT JOIN graph_vectors v ON v.memory_id = m.id"
                    # Keep the planner on the seq range instead of the scope index.
                    f" WHERE m.seq > ? AND {plain('m.user_id')} = ? AND {plain('m.agent_id')} = ?"
                    f" AND {plain('m.channel_id')} = ? AND (v.memory_id IS NULL OR v.model != ? OR v.dim != ?)"
                    " ORDER BY m.seq LIMIT ?",
                    (cursor, *scope_params(self.scope), embedder.name, embedder.dim, want),
                ).fetchall()
                top = self._engine.top(conn, self.scope)
            if rows:
                vectors = np.asarray(embedder.embed([r[2] for r in rows]), dtype=np.float32)
                if vectors.shape != (len(rows), embedder.dim):
                    raise ValueError(
                        f"embedder {embedder.name!r} returned shape {vectors.shape}, expected {(len(rows), embedder.dim)}"
                    )
                with self._write() as conn:
                    replaced = [
                        tuple(row) for r in rows for row in conn.execute(
                            "SELECT seq, model, dim FROM graph_vectors WHERE memory_id = ?", (r[1],)
                        )
                    ]  # fmt: skip
                    self._engine.store_vectors(conn, self.scope, embedder, [r[1] for r in rows], vectors)
                if replaced:
                    # Another model's vectors are gone from the database: erase them from its file too.
                    with self._lock:
                        self._vectors.forget(self._conn, self.scope, replaced)
                done += len(rows)
            finished = len(rows) < want
            cursor = top if finished else rows[-1][0]
            if move_cursor:
                self._embedded_upto[key] = cursor
                if finished:
                    self._settled_at[key] = latest
            if finished:
                break
        return done

    def flush(self) -> None:
        """Finish deferred work (pending embeddings)."""
        self.embed_pending()
