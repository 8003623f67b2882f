"""The hybrid ranking shared by the memory graph and the session archive (mnemo.retrieval.Fusion)."""

from __future__ import annotations

import pytest

from mnemo.retrieval import (
    Fusion,
    Placement,
    asks_question,
    merge_ranked,
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


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Anything you're excited for in the adoption process?", True),
        ("How about you? [shares image: a photo of a dog]", True),  # a caption after the question
        ("Did you go? I did.", False),  # it ends by stating
        ("Thanks!", False),
        ("no punctuation at all", False),
        ("", False),
    ],
)
def test_asks_question_looks_at_the_last_sentence_mark(text, asks):
    assert asks_question(text) is asks


def test_the_item_after_a_question_borrows_more_of_it_than_the_item_before():
    fusion = Fusion(neighbours=(0.1,), answer_share=0.3, question_damping=0, group_weight=0, group_text_weight=0)
    places = {"before": Placement("s", 1), "question": Placement("s", 2, asks=True), "answer": Placement("s", 3)}
    scores = fusion.relevance({"fts": {"before": 0.1, "question": 1.0, "answer": 0.1}}, places)
    assert scores["answer"] == pytest.approx(0.1 + 0.3 * 1.0 + 0.1 * 1.0)
    assert scores["before"] == pytest.approx(0.1 + 0.1 * 1.0)


def test_a_question_keeps_less_of_its_own_relevance_than_a_statement():
    fusion = Fusion(neighbours=(), answer_share=0, question_damping=0.25, group_weight=0, group_text_weight=0)
    places = {"asks": Placement("s", 1, asks=True), "tells": Placement("t", 1)}
    scores = fusion.relevance({"fts": {"asks": 1.0, "tells": 1.0}}, places)
    assert scores["asks"] == pytest.approx(0.75)
    assert scores["tells"] == pytest.approx(1.0)


def test_a_question_in_another_group_lends_its_answer_nothing():
    fusion = Fusion(neighbours=(), answer_share=0.5, question_damping=0, group_weight=0, group_text_weight=0)
    places = {"question": Placement("s1", 1, asks=True), "next": Placement("s2", 2)}
    scores = fusion.relevance({"fts": {"question": 1.0, "next": 0.2}}, places)
    assert scores["next"] == pytest.approx(0.2)


def test_a_borrower_is_ranked_by_what_its_neighbours_lend_it():
    fusion = Fusion(neighbours=(0.1,), answer_share=0.3, question_damping=0, group_weight=0, group_text_weight=0)
    places = {"question": Placement("s", 1, asks=True), "reply": Placement("s", 2)}
    scores = fusion.relevance({"fts": {"question": 1.0}}, places, borrowers={"reply"})
    assert scores["reply"] == pytest.approx(0.3 * 1.0 + 0.1 * 1.0)


def test_a_borrower_beside_no_candidate_is_left_out():
    fusion = Fusion(neighbours=(0.1,), answer_share=0.3, question_damping=0, group_weight=0, group_text_weight=0)
    places = {"question": Placement("s", 1, asks=True), "far": Placement("s", 9), "elsewhere": Placement("t", 2)}
    scores = fusion.relevance({"fts": {"question": 1.0}}, places, borrowers={"far", "elsewhere"})
    assert scores.keys() == {"question"}


def test_a_borrower_a_channel_found_keeps_its_own_relevance():
    fusion = Fusion(neighbours=(), answer_share=0, question_damping=0, group_weight=0, group_text_weight=0)
    places = {"a": Placement("s", 1), "b": Placement("s", 2)}
    scores = fusion.relevance({"fts": {"a": 1.0, "b": 0.5}}, places, borrowers={"b"})
    assert scores == {"a": 1.0, "b": 0.5}


def test_group_text_lifts_every_item_of_the_group_by_its_scaled_score():
    fusion = Fusion(neighbours=(), answer_share=0, question_damping=0, group_weight=0, group_text_weight=0.5)
    places = {"a": Placement("topic", 1), "b": Placement("elsewhere", 1)}
    scores = fusion.relevance({"fts": {"a": 0.5, "b": 0.6}}, places, group_text={"topic": 8.0, "elsewhere": 2.0})
    assert scores["a"] == pytest.approx(0.5 + 0.5 * 1.0)
    assert scores["b"] == pytest.approx(0.6 + 0.5 * 0.25)


def test_group_text_for_a_group_without_candidates_changes_nothing():
    fusion = Fusion(neighbours=(), group_weight=0)
    places = {"a": Placement("s1", 1)}
    assert fusion.relevance({"fts": {"a": 1.0}}, places, group_text={"s9": 5.0}) == pytest.approx({"a": 1.0})


def test_focus_scales_the_items_about_whom_the_query_names():
    fusion = Fusion(neighbours=(), group_weight=0, focus_boost=0.3)
    scores = fusion.relevance({"fts": {"hers": 1.0, "his": 1.0}}, focus={"hers"})
    assert scores == pytest.approx({"hers": 1.3, "his": 1.0})


def test_focus_never_lifts_an_item_without_relevance():
    fusion = Fusion(focus_boost=5.0)
    assert fusion.relevance({"fts": {"a": 1.0}}, focus={"b"}) == {"a": 1.0}


def test_rank_passes_group_text_and_focus_through():
    fusion = Fusion(neighbours=(), group_weight=0, group_text_weight=0, focus_boost=1.0)
    raw = {"fts": {"a": 5.0, "b": 4.0}}
    assert [key for key, _ in fusion.rank(raw, focus={"b"})] == ["b", "a"]


def test_items_written_in_a_period_the_query_names_are_scaled_up():
    fusion = Fusion(neighbours=(), group_weight=0, time_boost=0.5)
    scores = fusion.relevance({"fts": {"then": 1.0, "other": 1.0}}, timely={"then"})
    assert scores == pytest.approx({"then": 1.5, "other": 1.0})


def test_merge_ranked_puts_each_lists_best_first_on_one_scale() -> None:
    merged = merge_ranked([[("m1", 4.0), ("m2", 1.0)], [("a1", 0.5), ("a2", 0.4)]])
    assert [item for item, _ in merged] == ["m1", "a1", "a2", "m2"]
    assert dict(merged) == {"m1": 1.0, "a1": 1.0, "a2": 0.8, "m2": 0.25}


def test_merge_ranked_keeps_each_lists_own_order() -> None:
    # The second item was lifted above a better-scored one by its ranking (a newer memory): it stays above.
    merged = merge_ranked([[("newer", 0.5), ("older", 1.0)], [("other", 0.7)]])
    order = [item for item, _ in merged]
    assert order.index("newer") < order.index("older")


def test_merge_ranked_of_empty_lists_is_empty() -> None:
    assert merge_ranked([[], []]) == []


def test_merge_ranked_gives_a_weaker_lists_best_a_lower_place() -> None:
    merged = merge_ranked([[("m1", 4.0), ("m2", 3.0)], [("a1", 0.5), ("a2", 0.1)]], [0.5, 1.0])
    assert [item for item, _ in merged] == ["a1", "m1", "m2", "a2"]
    assert [score for _, score in merged] == [1.0, 0.5, 0.375, 0.2]
