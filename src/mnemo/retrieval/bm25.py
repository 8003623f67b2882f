"""Okapi BM25's inverse document frequency, as FTS5 computes it, for the scores mnemo computes itself."""

from __future__ import annotations

import math


def bm25_idf(documents: int, matches: float) -> float:
    """How rare a term held by ``matches`` of ``documents`` is, floored just above zero as FTS5 floors it.
    ``matches`` may come from a later snapshot or an estimate, so it is capped at ``documents``."""
    matches = min(matches, documents)
    return max(1e-6, math.log((documents - matches + 0.5) / (matches + 0.5)))
