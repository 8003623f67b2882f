"""Which of two statements is a newer version of the other: the same subject, a different value.

"Staging is Postgres 15 on port 5433" and, later, "staging moved to port 6543" are about one thing and
disagree; the later one is what holds now. Two texts are taken to say different things about the same
subject (:func:`disagree`) when they share at least ``SHARED_WORDS`` topic words (stems of words that are
not stop words and hold no digit) making up at least ``SHARED_SHARE`` of the shorter text's, and they differ
in a number, a date, a negation or a named value (:func:`~.maintenance.conflict`). It is lexical and cheap
(no model), so extraction can run it on every new memory and recall on every turn.

Two users of it: extraction links a new memory to the older one it disagrees with by a ``contradicts``
edge (so recall marks the older one disputed and the bulletin leaves it out), and recall over memories and
archived messages together lifts the later of two disagreeing candidates above the earlier
(:func:`later_first`).
Neither hides the earlier statement: it stays in recall and in search, below the newer one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeVar

from ..retrieval import STOP_WORDS
from ..retrieval.passages import WORD, stem
from .maintenance import conflict

SHARED_WORDS = 2
SHARED_SHARE = 0.5
REPEAT_SHARE = 0.8

T = TypeVar("T")


@lru_cache(maxsize=16_384)  # extraction compares each new memory with the same live ones every turn
def topic_words(text: str) -> frozenset[str]:
    """The stems of ``text``'s topic words: not stop words, no digits, three letters or more."""
    return frozenset(
        stem(word)
        for word in WORD.findall(text)
        if len(word) >= 3 and not any(ch.isdigit() for ch in word) and word.lower() not in STOP_WORDS
    )


def same_subject(words: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two texts' :func:`topic_words` say they are about the same thing."""
    shared = len(words & other)
    return shared >= SHARED_WORDS and shared >= SHARED_SHARE * min(len(words), len(other))


def disagree(text: str, other: str) -> bool:
    """Whether ``text`` and ``other`` say different things about the same subject (see the module)."""
    return same_subject(topic_words(text), topic_words(other)) and conflict(text, other) is not None


def repeats(words: frozenset[str], other: frozenset[str]) -> bool:
    """Whether a text of topic words ``words`` says no more than one of ``other``: at least ``SHARED_WORDS`` + 1
    topic words, ``REPEAT_SHARE`` of them in ``other`` (check :func:`~.maintenance.conflict` too: a
    different value is not a repeat)."""
    return len(words) > SHARED_WORDS and len(words & other) >= REPEAT_SHARE * len(words)


def later_first(items: Sequence[T], text: Callable[[T], str], when: Callable[[T], float]) -> list[T]:
    """``items`` (best first) with the newest item that :func:`disagrees <disagree>` with an earlier one lifted
    to just above it; the rest keep their order. Nothing is dropped."""
    words = [topic_words(text(item)) for item in items]
    ordered = list(range(len(items)))
    for at in range(len(items)):
        newest = None
        for other in range(len(items)):
            if when(items[other]) <= when(items[at]) or not same_subject(words[at], words[other]):
                continue
            if (newest is None or when(items[other]) > when(items[newest])) and conflict(
                text(items[at]), text(items[other])
            ) is not None:
                newest = other
        if newest is not None and ordered.index(newest) > ordered.index(at):
            ordered.remove(newest)
            ordered.insert(ordered.index(at), newest)
    return [items[i] for i in ordered]
