"""The cross-encoder deep recall reads candidates with: the real model, run locally."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mnemo.embeddings.cross_encoder import PAIR_TOKENS, CrossEncoder, shared_cross_encoder
from support.forking import in_forked_child

QUESTION = "Where does Anna live?"
PASSAGES = ["I had pasta for lunch today.", "Anna moved to Boston last spring.", "Lisbon is sunny in May."]


def test_the_passage_that_answers_scores_highest() -> None:
    scores = CrossEncoder().score(QUESTION, PASSAGES)
    assert int(np.argmax(scores)) == 1


def test_a_passage_longer_than_the_model_reads_is_cut_not_refused() -> None:
    long = "Anna moved to Boston last spring. " + "Unrelated words fill the rest of this message. " * PAIR_TOKENS
    scores = CrossEncoder().score(QUESTION, [long, PASSAGES[0]])
    assert scores[0] > scores[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_scores_with_a_model_of_its_own() -> None:
    parent = shared_cross_encoder()
    expected = parent.score(QUESTION, PASSAGES)

    def child_scores() -> bool:
        child = shared_cross_encoder()
        child.preload().result(timeout=15)
        found = child.score_within(QUESTION, PASSAGES, timeout=15)
        return child is not parent and found is not None and bool(np.allclose(found, expected, atol=1e-4))

    assert in_forked_child(child_scores)
