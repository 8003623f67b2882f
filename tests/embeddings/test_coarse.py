"""Int8 codes choose which rows a search scores exactly; the search's answer is the exact scan's."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo.embeddings.coarse import CoarseCodes, available, nearest_rows
from mnemo.embeddings.index import _dot, _top_k

pytestmark = pytest.mark.skipif(not available(), reason="no SIMD int8 kernel on this machine")

DIM = 384


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _clustered(count: int, seed: int) -> np.ndarray:
    """Unit vectors around a few centres, as memories about a few subjects are."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, DIM))
    return _unit(centres[rng.integers(0, 12, count)] + 0.6 * rng.standard_normal((count, DIM)))


def _coded(vectors: np.ndarray, upto: int | None = None) -> CoarseCodes:
    codes = CoarseCodes((1, 1), DIM, len(vectors))
    codes.extend(vectors[: len(vectors) if upto is None else upto])
    return codes


def _exact(vectors: np.ndarray, probe: np.ndarray, k: int, dead: list[int]) -> tuple[np.ndarray, np.ndarray]:
    scores = _dot(vectors, probe)
    scores[dead] = -np.inf
    rows = _top_k(scores, k)
    return rows, scores[rows]


@pytest.mark.parametrize("k", [1, 8, 100])
def test_the_search_returns_the_exact_scans_rows_in_its_order(k):
    vectors = _clustered(20_000, seed=1)
    codes = _coded(vectors)
    for probe in _clustered(20, seed=2):
        rows, scores = nearest_rows(codes, vectors, probe, k, [])
        expected_rows, expected_scores = _exact(vectors, probe, k, [])
        assert rows.tolist() == expected_rows.tolist()
        np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-6)


def test_rows_closer_together_than_a_code_step_still_come_out_exact():
    # Thousands of rows within 1e-4 of one another: their codes cannot order them, so the bound has to
    # bring every contender in.
    rng = np.random.default_rng(3)
    base = _unit(rng.standard_normal((1, DIM)))
    vectors = _unit(base + 1e-4 * rng.standard_normal((5_000, DIM)))
    probe = _unit(base + 0.05 * rng.standard_normal((1, DIM)))[0]
    codes = _coded(vectors)
    coarse, _ = codes.scores(probe, len(vectors))
    best = int(np.argmax(_dot(vectors, probe)))
    assert best not in _top_k(coarse, 34).tolist()  # the codes alone would miss it
    rows, _ = nearest_rows(codes, vectors, probe, 1, [])
    assert rows.tolist() == [best]


def test_each_coarse_score_is_within_the_bound_of_the_exact_one():
    vectors = _clustered(5_000, seed=4)
    codes = _coded(vectors)
    for probe in _clustered(10, seed=5):
        coarse, bound = codes.scores(probe, len(vectors))
        assert np.abs(coarse - _dot(vectors, probe)).max() <= bound


def test_rows_past_the_codes_are_scored_exactly():
    vectors = _clustered(6_000, seed=6)
    codes = _coded(vectors, upto=4_000)
    probe = vectors[5_500]
    rows, scores = nearest_rows(codes, vectors, probe, 5, [])
    assert rows[0] == 5_500 and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert rows.tolist() == _exact(vectors, probe, 5, [])[0].tolist()


def test_dead_rows_are_left_out_whether_coded_or_not():
    vectors = _clustered(6_000, seed=7)
    codes = _coded(vectors, upto=4_000)
    dead = [100, 5_000]
    for row in dead:
        rows, _ = nearest_rows(codes, vectors, vectors[row], 10, dead)
        assert row not in rows.tolist()
        assert rows.tolist() == _exact(vectors, vectors[row], 10, dead)[0].tolist()


def test_codes_extended_in_steps_equal_codes_made_at_once():
    vectors = _clustered(3_000, seed=8)
    stepped = CoarseCodes((1, 1), DIM, 10)
    for start in range(0, 3_000, 700):
        stepped.extend(vectors[start : start + 700])
    whole = _coded(vectors)
    probe = vectors[0]
    assert stepped.count == whole.count == 3_000
    np.testing.assert_array_equal(stepped.scores(probe, 3_000)[0], whole.scores(probe, 3_000)[0])


def test_codes_longer_than_the_rows_searched_are_cut_to_them():
    # Another thread may have coded rows of a newer, longer view of the file than the one a search holds.
    vectors = _clustered(3_000, seed=9)
    codes = _coded(vectors)
    rows, _ = nearest_rows(codes, vectors[:2_000], vectors[2_500], 20, [])
    assert rows.max() < 2_000
    assert rows.tolist() == _exact(vectors[:2_000], vectors[2_500], 20, [])[0].tolist()


def test_a_zero_row_gets_codes_that_score_zero():
    vectors = _clustered(100, seed=10)
    vectors[7] = 0.0
    coarse, _ = _coded(vectors).scores(vectors[0], 100)
    assert coarse[7] == 0.0
