"""The passage of a long text that best matches a query: what recall shows of a long message instead of
its first characters.

Words are compared by a light stem (``deployed`` matches ``deploy``), the same one the archive's snippets
highlight with. A text is cut at sentence ends; the passage is the run of consecutive sentences, within the
character budget, that holds the most distinct query words (the earliest such run on ties). A single
sentence longer than the budget is cut to a window of words around its query words.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from .query import STOP_WORDS

WORD = re.compile(r"[^\W_]+")
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "es", "ed", "ly", "s")
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\s*\n+\s*")
ELLIPSIS = "…"


@lru_cache(maxsize=8192)  # a passage stems every word of its message, and messages share most words
def stem(word: str) -> str:
    """A light suffix strip of ``word``, lower-cased: enough to match "deployed" with "deploy" (ranking
    itself uses the full-text engine's own stemmer)."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def query_stems(query: str) -> frozenset[str]:
    """The stems of ``query``'s meaningful words (stop words left out)."""
    return frozenset(stem(word) for word in WORD.findall(query) if word.lower() not in STOP_WORDS)


def best_passage(text: str, stems: Collection[str], max_chars: int) -> str:
    """The part of ``text`` (whitespace collapsed) of at most ``max_chars`` characters that holds the most
    of ``stems`` (see :func:`query_stems`); the whole text when it fits. An ellipsis marks each cut."""
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    sentences = [" ".join(piece.split()) for piece in _SENTENCE.split(text) if piece.strip()]
    held = [{stem(word) for word in WORD.findall(sentence)} & set(stems) for sentence in sentences]
    best: tuple[int, int, int] = (-1, 0, 0)  # (distinct words held, first sentence, end)
    for first in range(len(sentences)):
        length, words, end = -1, set(), first
        while end < len(sentences) and length + 1 + len(sentences[end]) <= max_chars - 2:
            length += 1 + len(sentences[end])
            words |= held[end]
            end += 1
        if end == first:
            continue  # this sentence alone is over the budget
        if len(words) > best[0]:
            best = (len(words), first, end)
    longest = max(range(len(sentences)), key=lambda i: (len(held[i]), -i))
    if best[0] < 0 or len(held[longest]) > best[0]:
        return _window(sentences[longest], stems, max_chars)
    _, first, end = best
    passage = " ".join(sentences[first:end])
    return (ELLIPSIS if first > 0 else "") + passage + (ELLIPSIS if end < len(sentences) else "")


def _window(sentence: str, stems: Collection[str], max_chars: int) -> str:
    """A window of whole words of ``sentence`` within ``max_chars``, starting a little before its first
    query word."""
    spans = [m.span() for m in WORD.finditer(sentence)]
    hits = [i for i, (a, b) in enumerate(spans) if stem(sentence[a:b]) in stems]
    start = max(0, hits[0] - 3) if hits else 0
    begin = spans[start][0] if spans else 0
    end = begin + max_chars - 2
    if end < len(sentence):
        end = sentence.rfind(" ", begin, end) if sentence.rfind(" ", begin, end) > begin else end
    piece = sentence[begin:end].strip()
    return (ELLIPSIS if begin > 0 else "") + piece + (ELLIPSIS if end < len(sentence) else "")
