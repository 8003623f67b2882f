"""In-memory nearest-neighbour search over unit-length vectors.

The index owns no storage: the graph store keeps vectors as float32 BLOBs in SQLite, loads them at start
and mirrors every change here. Exact search is one matrix-vector product: about 9 ms at 100,000 x 384
on this project's 2-core machine, exact, and ready as soon as the vectors are loaded, whereas an HNSW index
needs a minute-long build at that size for a recall that dropped to 0.65 on clustered memories
(``bench/embeddings.py`` has the numbers). Hence no approximate index at the scales mnemo targets.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Hashable, Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from mnemo.errors import InvalidArgument

_INITIAL_CAPACITY = 1024
# Queries scored per matrix product by search_many: 128 x 100k float32 scores is 51 MB.
_QUERY_BLOCK = 128


@runtime_checkable
class VectorIndex(Protocol):
    """Maps ids (memory ids, message ids: any hashable) to vectors and finds the most similar ones.

    Vectors are expected to be L2-normalised, so the score is the cosine similarity.
    """

    dim: int

    def add(self, ids: Sequence[Hashable], vectors: np.ndarray) -> None:
        """Insert ``vectors[i]`` under ``ids[i]``; an id already present gets its vector replaced."""
        ...

    def remove(self, ids: Iterable[Hashable]) -> None:
        """Drop the given ids; ids that are not in the index are ignored."""
        ...

    def search(
        self, query: np.ndarray, k: int, allowed_ids: Collection[Hashable] | None = None
    ) -> list[tuple[Hashable, float]]:
        """The ``k`` best ``(id, score)`` pairs, best first, among ``allowed_ids`` when given."""
        ...

    def __len__(self) -> int:
        """Number of ids in the index."""
        ...


class BruteForceIndex:
    """Exact search: every query is scored against every stored vector.

    Vectors live in one contiguous float32 matrix whose capacity doubles when full, so adding n vectors one
    at a time costs O(n) copies overall; removal moves the last row into the hole to stay contiguous. All
    methods are safe to call from several threads.
    """

    def __init__(self, dim: int) -> None:
        if dim < 1:
            raise InvalidArgument("dim", "must be at least 1")
        self.dim = dim
        self._matrix = np.zeros((_INITIAL_CAPACITY, dim), dtype=np.float32)
        self._ids: list[Hashable] = []
        self._rows: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, item: object) -> bool:
        return item in self._rows

    def add(self, ids: Sequence[Hashable], vectors: np.ndarray) -> None:
        """Insert or replace vectors; validates everything before changing anything."""
        matrix = _as_matrix(vectors, self.dim, "vectors")
        if len(ids) != matrix.shape[0]:
            raise InvalidArgument("ids", f"{len(ids)} ids for {matrix.shape[0]} vectors")
        if len(set(ids)) != len(ids):
            raise InvalidArgument("ids", "contains duplicates")
        with self._lock:
            new = sum(1 for vector_id in ids if vector_id not in self._rows)
            self._reserve(len(self._ids) + new)
            for vector_id, vector in zip(ids, matrix, strict=True):
                row = self._rows.get(vector_id)
                if row is None:
                    row = len(self._ids)
                    self._rows[vector_id] = row
                    self._ids.append(vector_id)
                self._matrix[row] = vector

    def remove(self, ids: Iterable[Hashable]) -> None:
        """Remove ids, filling each hole with the last row."""
        with self._lock:
            for vector_id in ids:
                row = self._rows.pop(vector_id, None)
                if row is None:
                    continue
                last = len(self._ids) - 1
                moved = self._ids.pop()
                if row != last:
                    self._matrix[row] = self._matrix[last]
                    self._ids[row] = moved
                    self._rows[moved] = row

    def search(
        self, query: np.ndarray, k: int, allowed_ids: Collection[Hashable] | None = None
    ) -> list[tuple[Hashable, float]]:
        """Exact top-``k`` by dot product; equal scores come out in a deterministic order."""
        queries = _as_matrix(query, self.dim, "query")
        if queries.shape[0] != 1:
            raise InvalidArgument("query", f"expected one vector, got {queries.shape[0]}")
        vector = queries[0]
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgument("k", "must be a non-negative integer")
        with self._lock:
            count = len(self._ids)
            if k == 0 or count == 0:
                return []
            if allowed_ids is None:
                scores = _dot(self._matrix[:count], vector)
                return [(self._ids[row], float(scores[row])) for row in _top_k(scores, k)]
            allowed = allowed_ids if isinstance(allowed_ids, set | frozenset) else set(allowed_ids)
            # A small allowed set is cheapest to score on its own; a large one costs more to look up id by id
            # than scoring everything and walking down the ranking until k allowed ids turn up.
            if len(allowed) * 8 < count:
                return self._search_rows(vector, k, allowed)
            return self._search_ranked(vector, k, allowed, count)

    def search_many(
        self, queries: np.ndarray, k: int, min_score: float = -1.0
    ) -> list[list[tuple[Hashable, float]]]:
        """:meth:`search` for each row of ``queries`` (no ``allowed_ids``), keeping only scores of at least
        ``min_score``, as one matrix product per block of queries: maintenance links a thousand new memories
        at once, where a product per query would cost a pass over the whole matrix each."""
        matrix = _as_matrix(queries, self.dim, "queries")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgument("k", "must be a non-negative integer")
        found: list[list[tuple[Hashable, float]]] = [[] for _ in range(matrix.shape[0])]
        with self._lock:
            count = len(self._ids)
            if k == 0 or count == 0:
                return found
            for start in range(0, matrix.shape[0], _QUERY_BLOCK):
                scores = matrix[start : start + _QUERY_BLOCK] @ self._matrix[:count].T
                # A threshold keeps a handful of candidates per row: cheaper than partitioning every row.
                rows, columns = np.nonzero(scores >= min_score) if min_score > -1.0 else np.indices(scores.shape).reshape(2, -1)
                for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
                    found[start + row].append((column, float(scores[row, column])))
            for index, hits in enumerate(found):
                hits.sort(key=lambda hit: (-hit[1], hit[0]))
                found[index] = [(self._ids[column], score) for column, score in hits[:k]]
        return found

    def _search_rows(
        self, vector: np.ndarray, k: int, allowed: Collection[Hashable]
    ) -> list[tuple[Hashable, float]]:
        rows = np.fromiter((row for row in map(self._rows.get, allowed) if row is not None), dtype=np.intp)
        if rows.size == 0:
            return []
        rows.sort()
        scores = _dot(self._matrix[rows], vector)
        return [(self._ids[rows[i]], float(scores[i])) for i in _top_k(scores, k)]

    def _search_ranked(
        self, vector: np.ndarray, k: int, allowed: Collection[Hashable], count: int
    ) -> list[tuple[Hashable, float]]:
        scores = _dot(self._matrix[:count], vector)
        # Enough candidates to hold k allowed ids twice over if they are spread evenly; widen if not.
        want = min(count, 2 * k * count // max(1, len(allowed)) + 16)
        while True:
            hits = []
            for row in _top_k(scores, want):
                if self._ids[row] in allowed:
                    hits.append((self._ids[row], float(scores[row])))
                    if len(hits) == k:
                        return hits
            if want == count:
                return hits
            want = min(count, want * 4)

    def _reserve(self, size: int) -> None:
        capacity = self._matrix.shape[0]
        if size <= capacity:
            return
        while capacity < size:
            capacity *= 2
        grown = np.zeros((capacity, self.dim), dtype=np.float32)
        grown[: len(self._ids)] = self._matrix[: len(self._ids)]
        self._matrix = grown


def _dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector``, without BLAS.

    The product is bound by memory bandwidth, so BLAS threads add nothing; on a busy 2-core machine waking
    OpenBLAS's thread pool made 100k x 384 take 25 ms (p95 37 ms) against 9 ms (p95 17-22 ms) for einsum's
    single-threaded SIMD loop (bench/embeddings.py).
    """
    return np.einsum("ij,j->i", matrix, vector)


# Below this many scores, partitioning all of them is as cheap as anything else.
_SAMPLED_SELECTION = 8_192
# Every this many'th score is read to place a threshold under the best ones.
_SAMPLE_STRIDE = 64


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, highest first (stable among equal scores)."""
    if k >= scores.size:
        return np.argsort(-scores, kind="stable")
    pool = _at_least_the_best(scores, k)
    if pool is None:
        candidates = np.argpartition(-scores, k - 1)[:k]
    else:
        candidates = pool[np.argpartition(-scores[pool], k - 1)[:k]] if pool.size > k else pool
    candidates.sort()
    return candidates[np.argsort(-scores[candidates], kind="stable")]


def _at_least_the_best(scores: np.ndarray, k: int) -> np.ndarray | None:
    """Indices of every score at or above a threshold that a sample puts about ``4 k`` deep, when ``k`` or more
    are: then the ``k`` best are among them. One comparison over all the scores instead of a partition of them
    (at 100,000 scores 0.1 ms against 2-3 ms, on every scan of a 100k-vector file). ``None`` when the scores are
    too few for it to pay, or the sample put the threshold too high."""
    sample = scores[::_SAMPLE_STRIDE]
    depth = 4 * k // _SAMPLE_STRIDE + 1  # sampled scores at or above the threshold
    if scores.size < _SAMPLED_SELECTION or depth >= sample.size:
        return None
    threshold = np.partition(sample, sample.size - depth)[sample.size - depth]
    pool = np.flatnonzero(scores >= threshold)
    return pool if pool.size >= k else None


def _as_matrix(vectors: np.ndarray, dim: int, field: str) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[1] != dim:
        raise InvalidArgument(field, f"expected vectors of dimension {dim}, got shape {np.shape(vectors)}")
    if not np.isfinite(array).all():
        raise InvalidArgument(field, "contains NaN or infinity")
    return array
