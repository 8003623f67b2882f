"""Patterns tried only where their opening literals occur find exactly what a plain search finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.safety.openings import Openings, by_openings
from mnemo.safety.rules import compiled as _compiled


def _literals(pattern: str) -> tuple[str, ...] | None:
    found = by_openings(pattern)
    return None if found is None else found.literals


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"\bfrom\s+now\s+on\b", ("from",)),
        (r"\b(?:reveal|print|output)\s+your\s+prompt", ("output", "print", "reveal")),
        # nested groups are read through, and a word opening several alternatives is kept once
        (r"\b(?:(?:your|its)\s+safety|you\s+are\s+free)", ("its", "you")),
        # a letter a quantifier makes optional is not part of the literal
        (r"\b(?:don'?t|do\s+not)\s+tell", ("do",)),
        (r"\bignor(?:e|ing)\b|\brm\s+-rf", ("ignor", "rm")),
        # apostrophes and hyphens inside a word are part of it
        (r"\b(?:email|e-mail|n't)\s+it", ("e-mail", "email", "n't")),
        # escaped and bare punctuation opening a branch
        (r"\b(?:curl|wget)\b|\[system\]|<\s*script", ("<", "[", "curl", "wget")),
        # several branches: re would try them at every position, even if each opens with a literal
        (r"<\s*script|\bhref\s*=", ("<", "href")),
    ],
)
def test_the_literals_every_match_opens_with_are_read_from_the_pattern(pattern: str, literals: tuple[str, ...]) -> None:
    assert _literals(pattern) == literals


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?:^|[.!?]\s+)ai\s+agents:",  # an anchor
        r"\b[a-z]+mode\b",  # a class
        r"\b(?:curl|wget)\b|(?<=x)y",  # a look-behind
        r"\b(?:the\s+)?system\s+prompt",  # an optional opening group
        r"\bfoo|.bar",  # any character
        r"<\s*script",  # one branch: re already jumps to its literal
    ],
)
def test_a_pattern_that_may_open_otherwise_is_left_to_a_plain_search(pattern: str) -> None:
    assert by_openings(pattern) is None


def test_an_unbalanced_pattern_is_an_error() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        by_openings(r"\b(?:a|b))c")


def test_the_leftmost_match_wins_whichever_literal_it_opens_with() -> None:
    found = by_openings(r"\b(?:reveal|print)\s+(?:the|your)\s+prompt")
    assert found is not None
    match = found.search("please print the prompt, then reveal your prompt")
    assert match is not None and match.group() == "print the prompt"


def test_at_one_position_the_first_listed_branch_wins() -> None:
    pattern = r"\b(?:ignore\s+all|ignore)\b"
    found = by_openings(pattern)
    assert found is not None
    assert found.search("ignore all that").group() == re.search(pattern, "ignore all that").group() == "ignore all"


def test_word_boundaries_and_look_behinds_see_the_text_before_the_literal() -> None:
    found = by_openings(r"\bprint\s+it|\b(?:say)(?<!essay)\s+it")
    assert found is not None
    assert found.search("a blueprint it is; an essay it is") is None
    assert found.search("then print it").group() == "print it"


def test_a_text_without_the_literals_is_not_searched_further() -> None:
    found = by_openings(r"\b(?:reveal|print)\s+\w+")
    assert isinstance(found, Openings)
    assert found.search("nothing to see here " * 50) is None


_SCAN_PATTERNS = [rule.pattern for rule in _compiled() if isinstance(rule.pattern, Openings)]
_WORDS = sorted(
    {literal for pattern in _SCAN_PATTERNS for literal in pattern.literals}
    | {"you", "your", "the", "all", "now", "prompt", "system", "instructions", "previous", "tell", "user", "not"}
)
_TEXTS = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.sampled_from([" ", "  ", "\n", ". ", ", ", "x", "-", "'", ":", "$"])),
    max_size=60,
).map("".join)


def test_most_scan_rules_are_tried_only_at_their_openings() -> None:
    assert len(_SCAN_PATTERNS) >= 30


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_every_scan_rule_finds_what_a_plain_search_finds(text: str) -> None:
    for openings in _SCAN_PATTERNS:
        expected = openings.pattern.search(text)
        found = openings.search(text)
        assert (found and found.span()) == (expected and expected.span()), openings.pattern.pattern
