"""Which of two statements is a newer version of the other: the same subject, a different value.

"Staging is Postgres 15 on port 5433" and, later, "staging moved to port 6543" are about one thing and
disagree; the later one is what holds now. Texts are compared clause by clause (split at punctuation and at
"and" / "but"), since one message or memory often says several things: two clauses are about the same
subject (:func:`same_subject`) when they share at least ``SHARED_WORDS`` topic words (stems of words that are
not stop words and hold no digit) making up at least ``SHARED_SHARE`` of the two clauses' topic words
together, and they disagree when they also differ in a number, a date, a negation or a named value
(:func:`~.maintenance.conflict`). It is lexical and cheap (no model), so extraction can run it on every new
memory and recall on every turn.

Two users of it: extraction links a new memory whose clause announces a change (:func:`changes`: "moved
to", "now", "switched", "no longer" ...) to the earlier one that clause disagrees with by a ``contradicts`` edge (so
recall marks the earlier one disputed and the bulletin leaves it out), and recall over memories and archived
messages together lifts the later of two disagreeing candidates above the earlier (:func:`later_first`).
Neither hides the earlier statement: it stays in recall and in search, below the newer one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeVar

from ..retrieval import STOP_WORDS
from ..retrieval.passages import WORD, stem
from .maintenance import conflict

SHARED_WORDS = 2
SHARED_SHARE = 0.4
REPEAT_SHARE = 0.8

_CLAUSE = re.compile(r"[;:,.!?()]+(?:\s+|$)|\s+(?:and|but|while|whereas|so)\s+|\s+[-–—]+\s+", re.IGNORECASE)
# What a statement that replaces an earlier one says about itself.
_CHANGE = re.compile(
    r"\b(?:now|no longer|not any ?more|anymore|moved|switched|changed|migrated|upgraded|downgraded|replaced"
    r"|instead|updated|renamed|bumped|went from|from now on|corrected|correction)\b",
    re.IGNORECASE,
)

T = TypeVar("T")


@lru_cache(maxsize=16_384)  # extraction compares each new memory with the same live ones every turn
def topic_words(text: str) -> frozenset[str]:
    """The stems of ``text``'s topic words: not stop words, no digits, three letters or more."""
    return frozenset(
        stem(word)
        for word in WORD.findall(text)
        if len(word) >= 3 and not any(ch.isdigit() for ch in word) and word.lower() not in STOP_WORDS
    )


@lru_cache(maxsize=16_384)
def clauses(text: str) -> tuple[str, ...]:
    """The clauses of ``text`` that hold a topic word."""
    return tuple(piece for piece in _CLAUSE.split(text) if topic_words(piece))


def changes(text: str) -> str:
    """The clauses of ``text`` that announce that something changed ("moved to", "now", "switched", "no
    longer" ...), joined; "" when none does."""
    return ". ".join(clause for clause in clauses(text) if _CHANGE.search(clause))


def same_subject(words: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two clauses' :func:`topic_words` say they are about the same thing."""
    shared = len(words & other)
    return shared >= SHARED_WORDS and shared >= SHARED_SHARE * len(words | other)


def disagree(text: str, other: str, *, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether a clause of ``text`` and a clause of ``other`` say different things about one subject (see the
    module). ``ignore`` are topic words that tell nothing here (the name of whom both are about)."""
    return _disagree(_clause_words(text, ignore), _clause_words(other, ignore))


def _clause_words(text: str, ignore: frozenset[str] = frozenset()) -> list[tuple[str, frozenset[str]]]:
    return [(clause, topic_words(clause) - ignore) for clause in clauses(text)]


def _disagree(mine: list[tuple[str, frozenset[str]]], theirs: list[tuple[str, frozenset[str]]]) -> bool:
    return any(
        same_subject(words, other_words) and conflict(clause, other_clause) is not None
        for clause, words in mine
        for other_clause, other_words in theirs
    )


def repeats(words: frozenset[str], other: frozenset[str]) -> bool:
    """Whether a text of topic words ``words`` says no more than one of ``other``: more than ``SHARED_WORDS``
    topic words, ``REPEAT_SHARE`` of them in ``other`` (check :func:`~.maintenance.conflict` too: a
    different value is not a repeat)."""
    return len(words) > SHARED_WORDS and len(words & other) >= REPEAT_SHARE * len(words)


def later_first(items: Sequence[T], text: Callable[[T], str], when: Callable[[T], float]) -> list[T]:
    """``items`` (best first) with the newest item that :func:`disagrees <disagree>` with an earlier one lifted
    to just above it; the rest keep their order. Nothing is dropped."""
    said = [_clause_words(text(item)) for item in items]
    ordered = list(range(len(items)))
    for at in range(len(items)):
        newer = [other for other in range(len(items)) if when(items[other]) > when(items[at])]
        newest = max(
            (other for other in newer if _disagree(said[at], said[other])),
            key=lambda other: when(items[other]),
            default=None,
        )
        if newest is not None and ordered.index(newest) > ordered.index(at):
            ordered.remove(newest)
            ordered.insert(ordered.index(at), newest)
    return [items[i] for i in ordered]
