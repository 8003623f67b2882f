"""Helpers for the memory graph tests: a controllable clock, a small real embedder whose vector space is
known in advance, and raw row counts."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from mnemo.graph import MemoryGraph


class Clock:
    """A clock the test moves by hand, so timestamps and recency are exact."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ConceptEmbedder:
    """A real, deterministic embedder: each dimension is a concept, and a text's vector counts the
    concept words it contains (normalised). Synonyms share a dimension, so the vector channel can find a
    memory that shares no word with the query, which is exactly what it exists for."""

    CONCEPTS: tuple[frozenset[str], ...] = (
        frozenset({"dog", "puppy", "canine", "hound"}),
        frozenset({"car", "vehicle", "automobile", "sedan"}),
        frozenset({"coffee", "espresso", "latte"}),
        frozenset({"paris", "france", "french"}),
        frozenset({"berlin", "germany", "german"}),
    )

    def __init__(self, name: str = "concepts-v1", dim: int = 8) -> None:
        self.name = name
        self.dim = dim
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = set(re.findall(r"[a-z]+", text.lower()))
            for index, concept in enumerate(self.CONCEPTS):
                out[row, index % self.dim] += len(words & concept)
            out[row, self.dim - 1] += 0.01  # never the zero vector
            out[row] /= np.linalg.norm(out[row])
        return out


def count_rows(graph: MemoryGraph, table: str) -> int:
    """Rows in one of the graph's tables, read through a separate connection."""
    with graph._lock:
        return graph._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
