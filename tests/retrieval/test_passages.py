"""The passage of a long text shown for a query."""

from __future__ import annotations

from mnemo.retrieval.passages import ELLIPSIS, best_passage, query_stems

STORY = (
    "We talked about many things today. The weather was nice and the kids played outside all afternoon. "
    "Later I mentioned that my bike is a green Brompton and that I ride it to work. "
    "Then we ate dinner together and watched a long film about space travel."
)


def test_a_text_that_fits_is_returned_whole_with_whitespace_collapsed() -> None:
    assert best_passage("My bike\n is  green.", query_stems("bike"), 100) == "My bike is green."


def test_the_passage_is_the_sentence_holding_the_query_words() -> None:
    passage = best_passage(STORY, query_stems("what colour is my bike?"), 90)
    assert "green Brompton" in passage
    assert passage.startswith(ELLIPSIS) and passage.endswith(ELLIPSIS)


def test_words_match_by_their_stem() -> None:
    assert "watched a long film" in best_passage(STORY, query_stems("films watching"), 90)


def test_the_passage_never_exceeds_the_budget() -> None:
    for budget in (20, 50, 90, 150):
        assert len(best_passage(STORY, query_stems("space travel film"), budget)) <= budget


def test_a_sentence_longer_than_the_budget_is_cut_around_its_query_words() -> None:
    sentence = "word " * 60 + "the passport expires in June " + "word " * 60
    passage = best_passage(sentence, query_stems("passport"), 60)
    assert "passport" in passage and len(passage) <= 60


def test_without_query_words_the_opening_is_shown() -> None:
    assert best_passage(STORY, frozenset(), 60).startswith("We talked about")


def test_stop_words_are_not_query_words() -> None:
    assert query_stems("what is the bike") == frozenset({"bike"})
