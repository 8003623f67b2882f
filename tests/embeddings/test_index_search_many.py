"""BruteForceIndex.search_many: the same answers as one search per query, above a score floor."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo.embeddings import BruteForceIndex


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def index():
    rng = np.random.default_rng(3)
    built = BruteForceIndex(16)
    built.add([f"m{i}" for i in range(300)], _unit(rng.normal(size=(300, 16))))
    return built, _unit(rng.normal(size=(200, 16)))


def test_it_answers_as_one_search_per_query(index):
    built, queries = index
    many = built.search_many(queries, 5)
    for query, hits in zip(queries, many, strict=True):
        single = built.search(query, 5)
        assert [h[0] for h in hits] == [h[0] for h in single]
        assert [h[1] for h in hits] == pytest.approx([h[1] for h in single], abs=1e-5)


def test_scores_below_the_floor_are_left_out(index):
    built, queries = index
    for hits in built.search_many(queries, 5, min_score=0.5):
        assert all(score >= 0.5 for _, score in hits)
    assert built.search_many(queries[:1], 5, min_score=1.1) == [[]]


def test_an_empty_index_or_zero_k_finds_nothing():
    assert BruteForceIndex(4).search_many(np.ones((2, 4), np.float32), 3) == [[], []]
