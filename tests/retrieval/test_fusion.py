"""The hybrid ranking shared by the memory graph and the session archive (mnemo.retrieval.Fusion)."""

from __future__ import annotations

import pytest

from mnemo.retrieval import (
    Fusion,
    Placement,
    scale_similarity,
    scale_to_best,
    with_prior,
)


def test_full_text_scores_are_scaled_to_the_best_candidate():
    assert scale_to_best({"a": 8.0, "b": 2.0}) == {"a": 1.0, "b": 0.25}


def test_similarities_at_or_below_the_floor_are_dropped_and_the_best_scales_to_one():
    scaled = scale_similarity({"a": 0.7, "b": 0.45, "c": 0.2}, floor=0.2)
    assert scaled == pytest.approx({"a": 1.0, "b": 0.5})


def test_channel_weights_decide_which_channel_wins():
    raw = {"fts": {"words": 5.0, "meaning": 1.0}, "vector": {"meaning": 0.9, "words": 0.3}}
    text_first = Fusion(weights={"fts": 1.0, "vector": 0.2}, neighbours=(), group_weight=0)
    meaning_first = Fusion(weights={"fts": 0.2, "vector": 1.0}, neighbours=(), group_weight=0)
    assert text_first.rank(raw)[0][0] == "words"
    assert meaning_first.rank(raw)[0][0] == "meaning"


def test_a_channel_with_zero_weight_contributes_nothing():
    fusion = Fusion(weights={"fts": 1.0, "vector": 0.0}, neighbours=(), group_weight=0)
    assert [key for key, _ in fusion.rank({"fts": {"a": 1.0}, "vector": {"b": 0.9}})] == ["a"]


def test_an_item_borrows_relevance_from_its_neighbours_in_the_same_group_only():
    fusion = Fusion(neighbours=(0.5,), group_weight=0)
    places = {"q": Placement("s1", 1), "answer": Placement("s1", 2), "other": Placement("s2", 3)}
    scores = fusion.relevance({"fts": {"q": 1.0, "answer": 0.2, "other": 0.2}}, places)
    assert scores["answer"] == pytest.approx(0.2 + 0.5 * 1.0)
    assert scores["other"] == pytest.approx(0.2)  # adjacent position, different group


def test_items_of_the_strongest_group_get_the_group_boost():
    fusion = Fusion(neighbours=(), group_weight=0.5)
    places = {"a": Placement("s1", 1), "b": Placement("s1", 9), "c": Placement("s2", 1)}
    scores = fusion.relevance({"fts": {"a": 1.0, "b": 0.3, "c": 0.4}}, places)
    assert scores["b"] > scores["c"]  # b's session holds the best match


def test_without_placements_items_stand_alone():
    scores = Fusion().relevance({"fts": {"a": 1.0, "b": 0.5}})
    assert scores == {"a": 1.0, "b": 0.5}


def test_the_prior_reorders_but_never_lifts_an_irrelevant_item():
    assert with_prior(0.0, prior=1.0, share=0.5) == 0.0
    assert with_prior(1.0, prior=1.0, share=0.1) > with_prior(1.0, prior=0.0, share=0.1)
    assert with_prior(1.0, prior=0.0, share=0.1) == pytest.approx(0.9)
