"""The deterministic extractor: statements worth keeping, picked and typed by a few phrase patterns.

Each message a person wrote is split into sentences. Questions, greetings and sentences under four or over
sixty words are skipped. A sentence is kept when it matches one of the pattern groups below, checked in
order (identity, todo, decision, goal, preference, event, fact), and gets that group's memory type; the
first person is rewritten in the third ("I love hiking" said by Caroline becomes "Caroline loves hiking"),
so a memory reads the same wherever it is recalled. No model is involved: the same messages always give
the same memories.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .types import MemoryType

MIN_WORDS = 4
MAX_WORDS = 60

_I = r"\b(?:i|me|i'm|i've|i'd|i'll|we|we're|we've|we'll|my|our)\b"
_RULES: tuple[tuple[MemoryType, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        (
            MemoryType.IDENTITY,
            r"\bmy name is\b|\bcall me\b|\bi(?: am|'m) (?:a|an)\b|\bi work (?:as|at|for)\b|\bi(?: am|'m) from\b"
            r"|\bi live in\b|\bi grew up\b|\bi(?: am|'m) \d+ years old\b|\bmy (?:pronouns|job|role) (?:is|are)\b",
        ),
        (
            MemoryType.TODO,
            r"\bremind me\b|\bdon'?t (?:let me )?forget\b|\bi (?:need|have|must) to\b|\bto-?do\b|\bi should\b"
            r"|\bwe (?:need|have|must) to\b",
        ),
        (
            MemoryType.DECISION,
            r"\b(?:i|we)(?: have|'ve)? decided\b|\b(?:i|we)(?: have|'ve)? chosen\b|\b(?:i|we) chose\b|\blet'?s go with\b"
            r"|\bwe(?:'ll| will) (?:use|go with|switch to)\b|\bi(?:'ll| will) (?:use|go with|switch to)\b",
        ),
        (
            MemoryType.GOAL,
            r"\bi (?:want|hope|plan|intend|aim) to\b|\bi(?:'d| would) (?:like|love) to\b|\bmy (?:goal|dream|plan) is\b"
            r"|\bi(?:'m| am) (?:planning|hoping|going|trying|working) (?:to|on)\b|\bi(?:'m| am) saving\b",
        ),
        (
            MemoryType.PREFERENCE,
            r"\bi (?:really |absolutely |totally )?(?:like|love|enjoy|prefer|adore|hate|dislike|can'?t stand)\b"
            r"|\bmy (?:favou?rite|go-to)\b|\bi(?:'m| am) (?:a (?:big )?fan|into|passionate|not a fan)\b",
        ),
        (
            MemoryType.EVENT,
            r"\b(?:yesterday|last (?:week|month|year|night|weekend|friday|saturday|sunday)|this (?:morning|week|"
            r"weekend|month)|recently|ago|today|tonight)\b|\b(?:i|we) (?:just |recently |finally )?(?:went|visited|"
            r"started|joined|finished|got|took|met|made|moved|bought|adopted|ran|won|attended|signed up|painted|"
            r"celebrated|received|graduated|lost|began)\b",
        ),
        (
            MemoryType.FACT,
            r"\b(?:i|we) (?:use|have|own|run|work|study|volunteer|teach|play|speak|keep)\b|\bmy \w+(?: \w+)? (?:is|are|was"
            r"|were|has|have)\b|\bour \w+(?: \w+)? (?:is|are|runs|uses)\b"
            # the people and animals in someone's life, whatever they are said to do
            r"|\bmy (?:wife|husband|partner|spouse|boyfriend|girlfriend|fianc[ée]e?|sister|brother|siblings?|mom|mum"
            r"|mother|dad|father|parents?|son|daughter|kids?|children|family|grandm[ao]|grandmother|grandfather"
            r"|friends?|best friend|boss|manager|colleagues?|coworkers?|team|dogs?|cats?|pets?)\b",
        ),
    )
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_GREETING = re.compile(r"^(?:hi|hey|hello|thanks|thank you|bye|good (?:morning|night|evening))\b", re.IGNORECASE)
# First person -> third, for a named subject; verbs after a bare "I" take the third-person form.
_PRONOUNS = (
    (re.compile(r"\bI(?:'m| am)\b"), "{name} is"),
    (re.compile(r"\bI(?:'ve| have)\b"), "{name} has"),
    (re.compile(r"\bI'd\b"), "{name} would"),
    (re.compile(r"\bI'll\b"), "{name} will"),
    (re.compile(r"\bI was\b"), "{name} was"),
    (re.compile(r"\bI do\b"), "{name} does"),
    (re.compile(r"\bI (really |also |just |still |absolutely |totally )?([a-z]+)\b"), None),
    (re.compile(r"\b[Mm]y\b"), "{name}'s"),
    (re.compile(r"\b[Mm]yself\b"), "{name}"),
    (re.compile(r"(?<=\w )me\b"), "{name}"),
)
_PAST_OR_MODAL = re.compile(r"(?:ed|can|could|would|should|will|must|might|may|did|went|got|had|was|made|took|met|ran)$")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory an extractor proposes: its text, type, who it is about, and which message(s) it came from
    (positions in the batch the extractor was given)."""

    content: str
    type: MemoryType
    subject: str = ""
    messages: tuple[int, ...] = ()
    importance: float | None = None


def _verb(match: re.Match[str], name: str) -> str:
    adverb, verb = match.group(1) or "", match.group(2)
    if _PAST_OR_MODAL.search(verb):
        third = verb
    elif verb.endswith(("s", "sh", "ch", "x", "o")):
        third = verb + "es"
    elif verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        third = verb[:-1] + "ies"
    else:
        third = verb + "s"
    return f"{name} {adverb}{third}"


def third_person(sentence: str, name: str) -> str:
    """``sentence`` with ``name`` in place of I / my / me (left as it is when ``name`` is empty)."""
    if not name:
        return sentence
    for pattern, template in _PRONOUNS:
        if template is None:
            sentence = pattern.sub(lambda m: _verb(m, name), sentence)
        else:
            sentence = pattern.sub(template.format(name=name), sentence)
    return sentence


def classify(sentence: str) -> MemoryType | None:
    """The memory type of a sentence worth keeping, or ``None`` for one that is not."""
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or sentence.rstrip().endswith("?") or _GREETING.match(sentence):
        return None
    if not re.search(_I, sentence, re.IGNORECASE):
        return None  # only what people say about themselves and their world
    return next((kind for kind, pattern in _RULES if pattern.search(sentence)), None)


def extract(messages: Sequence[Mapping[str, Any]], *, roles: frozenset[str] = frozenset({"user"})) -> list[Candidate]:
    """The candidates in ``messages`` (dicts with ``role``, ``content`` and optionally ``name``, the speaker)
    written by one of ``roles``; a speaker's name (else "User") becomes the subject and replaces the first
    person."""
    found: list[Candidate] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") not in roles or not isinstance(content, str):
            continue
        name = message.get("name") if isinstance(message.get("name"), str) else ""
        for piece in _SENTENCE.split(content):
            sentence = " ".join(piece.split())
            kind = classify(sentence)
            if kind is not None:
                found.append(Candidate(third_person(sentence, name or "User"), kind, name or "user", (index,)))
    return found
