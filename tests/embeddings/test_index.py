"""The exact vector index: search order, updates, removal, filtering, validation and threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from mnemo.embeddings import BruteForceIndex, VectorIndex
from mnemo.errors import InvalidArgument

DIM = 16


def unit_vectors(count: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def filled(count: int, seed: int = 0) -> tuple[BruteForceIndex, np.ndarray]:
    index = BruteForceIndex(DIM)
    vectors = unit_vectors(count, seed)
    index.add(list(range(count)), vectors)
    return index, vectors


def expected_top(vectors: np.ndarray, ids: list[int], query: np.ndarray, k: int) -> list[int]:
    scores = vectors @ query
    return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]


def test_satisfies_the_vector_index_protocol() -> None:
    assert isinstance(BruteForceIndex(DIM), VectorIndex)


def test_search_returns_the_k_most_similar_best_first() -> None:
    index, vectors = filled(200)
    query = unit_vectors(1, seed=99)[0]
    hits = index.search(query, 10)
    assert [i for i, _ in hits] == expected_top(vectors, list(range(200)), query, 10)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(float(vectors[hits[0][0]] @ query), abs=1e-6)


@pytest.mark.parametrize("k", [1, 10, 100, 500])
def test_a_large_index_returns_the_same_k_best_as_a_full_sort(k: int) -> None:
    index, vectors = filled(20_000, seed=3)
    query = unit_vectors(1, seed=98)[0]
    assert [hit for hit, _ in index.search(query, k)] == expected_top(vectors, list(range(20_000)), query, k)


def test_the_k_best_are_found_when_every_sampled_row_outscores_them() -> None:
    # Rows 0, 64, 128, ... are the query itself: a threshold placed from a sample of every 64th score lands
    # among them, above most of the true k best, and the search must still return all of those.
    index, vectors = filled(20_000, seed=4)
    query = unit_vectors(1, seed=97)[0]
    vectors[::64] = query
    index.add(list(range(0, 20_000, 64)), vectors[::64])
    assert [hit for hit, _ in index.search(query, 400)] == expected_top(vectors, list(range(20_000)), query, 400)


def test_a_stored_vector_finds_itself_with_score_one() -> None:
    index, vectors = filled(50)
    best_id, score = index.search(vectors[17], 1)[0]
    assert best_id == 17
    assert score == pytest.approx(1.0, abs=1e-5)


def test_k_larger_than_the_index_returns_everything_and_zero_returns_nothing() -> None:
    index, _ = filled(5)
    query = unit_vectors(1, seed=3)[0]
    assert sorted(i for i, _ in index.search(query, 50)) == [0, 1, 2, 3, 4]
    assert index.search(query, 0) == []


def test_empty_index_finds_nothing() -> None:
    assert BruteForceIndex(DIM).search(unit_vectors(1)[0], 5) == []


def test_adding_an_existing_id_replaces_its_vector() -> None:
    index, vectors = filled(10)
    index.add([3], vectors[7:8])
    assert len(index) == 10
    top_two = {i for i, _ in index.search(vectors[7], 2)}
    assert top_two == {3, 7}


def test_removed_ids_are_never_returned_and_the_rest_keep_their_vectors() -> None:
    index, vectors = filled(100)
    removed = set(range(0, 100, 3))
    index.remove(removed)
    assert len(index) == 100 - len(removed)
    remaining = [i for i in range(100) if i not in removed]
    for vector_id in remaining:
        assert index.search(vectors[vector_id], 1)[0][0] == vector_id
    everything = index.search(unit_vectors(1, seed=5)[0], 100)
    assert {i for i, _ in everything} == set(remaining)


def test_removing_unknown_ids_is_a_no_op() -> None:
    index, _ = filled(4)
    index.remove(["nope", 99])
    assert len(index) == 4


def test_allowed_ids_restrict_the_candidates() -> None:
    index, vectors = filled(400)
    query = unit_vectors(1, seed=11)[0]
    for allowed in ({5, 17, 123, 399}, set(range(0, 400, 2))):  # small subset and most of the index
        ids = sorted(allowed)
        hits = index.search(query, 3, allowed_ids=allowed)
        assert [i for i, _ in hits] == expected_top(vectors[ids], ids, query, 3)


def test_large_allowed_set_of_poor_matches_still_yields_its_best() -> None:
    index, vectors = filled(400)
    query = unit_vectors(1, seed=12)[0]
    worst_half = [int(i) for i in np.argsort(vectors @ query)[:200]]
    hits = index.search(query, 5, allowed_ids=worst_half)  # a list works as well as a set
    assert [i for i, _ in hits] == expected_top(vectors[worst_half], worst_half, query, 5)


def test_allowed_ids_not_in_the_index_are_ignored() -> None:
    index, _ = filled(10)
    query = unit_vectors(1, seed=2)[0]
    assert index.search(query, 5, allowed_ids={"ghost"}) == []
    assert [i for i, _ in index.search(query, 5, allowed_ids={"ghost", 4})] == [4]


def test_any_hashable_ids_work() -> None:
    index = BruteForceIndex(DIM)
    vectors = unit_vectors(3)
    index.add(["mem-a", "mem-b", "mem-c"], vectors)
    assert index.search(vectors[1], 1)[0][0] == "mem-b"
    assert "mem-c" in index


def test_growth_past_the_initial_capacity_keeps_every_vector() -> None:
    index = BruteForceIndex(DIM)
    vectors = unit_vectors(3000, seed=4)
    for start in range(0, 3000, 250):
        index.add(list(range(start, start + 250)), vectors[start : start + 250])
    assert len(index) == 3000
    for vector_id in (0, 1023, 1024, 2047, 2999):
        assert index.search(vectors[vector_id], 1)[0][0] == vector_id


@pytest.mark.parametrize(
    ("ids", "vectors", "field"),
    [
        ([1], np.ones((1, DIM + 1), dtype=np.float32), "vectors"),
        ([1, 2], np.ones((1, DIM), dtype=np.float32), "ids"),
        ([1, 1], np.ones((2, DIM), dtype=np.float32), "ids"),
        ([1], np.full((1, DIM), np.nan, dtype=np.float32), "vectors"),
    ],
)
def test_bad_additions_are_rejected_and_change_nothing(ids: list[int], vectors: np.ndarray, field: str) -> None:
    index, _ = filled(3)
    with pytest.raises(InvalidArgument, match=field):
        index.add(ids, vectors)
    assert len(index) == 3
    assert 1 in index


@pytest.mark.parametrize(
    ("query", "k", "field"),
    [
        (np.ones(DIM + 1, dtype=np.float32), 3, "query"),
        (np.ones((2, DIM), dtype=np.float32), 3, "query"),
        (np.ones(DIM, dtype=np.float32), -1, "k"),
        (np.ones(DIM, dtype=np.float32), 2.5, "k"),
    ],
)
def test_bad_searches_are_rejected(query: np.ndarray, k: object, field: str) -> None:
    index, _ = filled(3)
    with pytest.raises(InvalidArgument, match=field):
        index.search(query, k)  # type: ignore[arg-type]


def test_concurrent_adds_removes_and_searches_stay_consistent() -> None:
    index = BruteForceIndex(DIM)
    vectors = unit_vectors(4000, seed=8)
    errors: list[BaseException] = []

    def writer(part: int) -> None:
        try:
            ids = list(range(part * 1000, part * 1000 + 1000))
            for start in range(0, 1000, 100):
                chunk = ids[start : start + 100]
                index.add(chunk, vectors[chunk])
            index.remove(ids[:500])
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(200):
                for vector_id, score in index.search(vectors[0], 5):
                    assert -1.0001 <= score <= 1.0001 and 0 <= vector_id < 4000
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in range(4)] + [
        threading.Thread(target=reader) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(index) == 2000
    for vector_id in (500, 1999, 3500):
        assert index.search(vectors[vector_id], 1)[0][0] == vector_id
