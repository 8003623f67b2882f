"""Query embeddings started early and remembered: the per-turn model call off a recall's critical path.

A recall needs the query's vector only when it reaches its vector channel, after the full-text search
and other SQL. :meth:`QueryVectors.start` submits the embedding to a worker thread the moment the query
is known, so the model (onnxruntime, which releases the GIL) runs on one core while SQLite works on the
other; on a 2-core machine this takes the embedding's ~13 ms off a recall instead of adding it. A small
LRU keyed by model and text serves a repeated query (the same message recalled by ``enrich_turn`` and
then by the ``recall`` tool, a retried turn) without the model at all.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from mnemo.embeddings.protocol import Embedder, QueryEmbedder

CACHE_SIZE = 256

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool_after_fork() -> None:
    # A forked child inherits the pool object but not its threads: work submitted to it would never run,
    # and neither would a query vector still under way.
    global _pool, _pool_lock, _by_embedder
    _pool, _pool_lock, _by_embedder = None, threading.Lock(), weakref.WeakKeyDictionary()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def background() -> ThreadPoolExecutor:
    """The process's pool for per-query work done ahead (query embeddings, the vector searches that
    follow them): two workers, as more than the cores only queue."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mnemo-query-embed")
        return _pool


class QueryVectors:
    """Vectors of query texts: computed ahead in a worker thread, the last ``size`` kept.

    Safe to share between threads. A failed embedding is not kept, so the next request retries it.
    """

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._cache: OrderedDict[tuple[str, int, str], Future[np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, embedder: Embedder, text: str) -> Future[np.ndarray]:
        """The ``(1, dim)`` vector of ``text`` as a future: a cached one, or a new one already running."""
        key = (embedder.name, embedder.dim, text)
        with self._lock:
            future = self._cache.get(key)
            # A failure may be seen here before its done-callback has dropped it: retry, never replay it.
            if future is not None and not (future.done() and (future.cancelled() or future.exception())):
                self._cache.move_to_end(key)
                return future
            future = background().submit(_embed_one, embedder, text)
            if self._size > 0:
                self._cache[key] = future
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        future.add_done_callback(lambda done: self._drop_failed(key, done))
        return future

    def _drop_failed(self, key: tuple[str, int, str], future: Future[np.ndarray]) -> None:
        if future.cancelled() or future.exception() is not None:
            with self._lock:
                if self._cache.get(key) is future:
                    del self._cache[key]

    def __len__(self) -> int:
        return len(self._cache)


def _embed_one(embedder: Embedder, text: str) -> np.ndarray:
    found = embedder.embed_query(text) if isinstance(embedder, QueryEmbedder) else embedder.embed([text])
    vector = np.array(found, dtype=np.float32).reshape(1, embedder.dim)
    vector.setflags(write=False)  # shared by every recall of this text
    return vector


_by_embedder: weakref.WeakKeyDictionary[Embedder, QueryVectors] = weakref.WeakKeyDictionary()


def query_vectors_of(embedder: Embedder) -> QueryVectors:
    """The query vectors of one embedder object, shared by every store it serves (the graph and the
    archive searched for one turn embed the query once); kept while the embedder lives. An embedder that
    cannot be weakly referenced gets a cache of its own each time."""
    with _pool_lock:
        try:
            found = _by_embedder.get(embedder)
            if found is None:
                found = _by_embedder[embedder] = QueryVectors()
        except TypeError:
            return QueryVectors()
        return found


class PrefetchedEmbedder:
    """``embedder`` with the vector of one text already under way: asking for exactly that text waits
    for the prefetched result; anything else goes to ``embedder``."""

    def __init__(self, embedder: Embedder, text: str, vector: Future[np.ndarray]) -> None:
        self.name = embedder.name
        self.dim = embedder.dim
        self._embedder = embedder
        self._text = text
        self._vector = vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`Embedder.embed`; a fresh array, so callers may modify it."""
        if len(texts) == 1 and not isinstance(texts, str) and texts[0] == self._text:
            return self._vector.result().copy()
        return self._embedder.embed(texts)
