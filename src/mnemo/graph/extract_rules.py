"""The deterministic extractor: statements worth keeping, picked and typed by phrase patterns.

Each message a person wrote loses its pasted code, logs and error output, and is split into sentences.
A sentence is judged without its spoken openers ("Yeah Maria,", "Wow!"). Refused: questions (by their mark or
their first word), requests to the assistant ("can you", "remind me how", "show me", an opening verb of
command), hypotheticals and musing ("if I had", "maybe", "not sure"), greetings, and talk aimed at the other
speaker. Kept: a sentence of three to sixty words about the speaker (first person, or a dropped "I": "Been
busy volunteering") or about the speaker's environment ("the repo uses uv"), typed by the first pattern group
of :mod:`.extract_patterns` that matches (todo, decision, condition, standing preference, identity, goal,
preference, event, fact). The first person is rewritten in the third ("I love hiking" said by Caroline
becomes "Caroline loves hiking"), so a memory reads the same wherever it is recalled. No model is involved:
the same messages always give the same memories.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .extract_patterns import (
    ADVERB,
    DROPPED_SUBJECT,
    ENVIRONMENT,
    ENVIRONMENT_TYPE,
    FIRST_PERSON,
    OPENER,
    REFUSED,
    RULES,
)
from .types import MemoryType

MIN_WORDS = 3
MAX_WORDS = 60

_FENCED = re.compile(r"```.*?(?:```|$)", re.DOTALL)
# A line of code, a shell command's output, a log or a traceback: pasted, not said.
_PASTED = re.compile(
    r"^(?:\s{2,}|\t)\S|^(?:traceback\b|file \"|\$ |>>> |#!|def |class |import |from [\w.]+ import|return\b"
    r"|[\w.]*(?:error|exception|warning)\b:|fatal:|\d{4}-\d\d-\d\d[ t]\d\d:|\[\d|at [\w.$]+\()",
    re.IGNORECASE,
)
_SYMBOLS = frozenset("{}[]();=<>|`$\\")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# First person -> third, for a named subject; verbs after a bare "I" take the third-person form.
_PRONOUNS = (
    (re.compile(r"\bI(?:'m| am)\b"), "{name} is"),
    (re.compile(r"\bI(?:'ve| have)\b(?!n)"), "{name} has"),
    (re.compile(r"\bI haven't\b"), "{name} hasn't"),
    (re.compile(r"\bI don't\b"), "{name} doesn't"),
    (re.compile(r"\bI do not\b"), "{name} does not"),
    (re.compile(r"\bI'd\b"), "{name} would"),
    (re.compile(r"\bI'll\b"), "{name} will"),
    (re.compile(r"\bI was\b"), "{name} was"),
    (re.compile(r"\bI do\b"), "{name} does"),
    (re.compile(r"\bI (\w+n't)\b"), "{name} \\1"),
    (re.compile(r"\b(and|or|but) I\b(?!')"), "\\1 {name}"),
    (re.compile(rf"\bI ({ADVERB})([a-z]+)\b"), None),
    (re.compile(r"\b[Mm]y\b"), "{name}'s"),
    (re.compile(r"\b[Mm]yself\b"), "{name}"),
    (re.compile(r"(?<=\w )me\b"), "{name}"),
)
_PAST_OR_MODAL = re.compile(
    r"(?:ed|can|could|would|should|will|must|might|may|did|went|got|had|was|made|took|met|ran|wanna|gonna|gotta"
    r"|began|won|lost|left|felt|saw|sold|quit|put|set|read|wrote|built|bought|brought|thought|found|told|kept"
    r"|spent|sent|paid|flew|drove|ate|drank|gave|came|became|ought)$"
)
# A dropped "I" restored by the form of the verb it was dropped before.
_RESTORED = ((re.compile(r"^(?:just |finally |recently |still |also )?been\b", re.IGNORECASE), "I've "),
             (re.compile(r"^(?:just |finally |recently |still |also )?(?:gonna|going to|\w+ing)\b", re.IGNORECASE),
              "I'm "))  # fmt: skip


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
    literal = name.replace("\\", "\\\\")  # the templates are re replacement strings
    for pattern, template in _PRONOUNS:
        if template is None:
            sentence = pattern.sub(lambda m: _verb(m, name), sentence)
        else:
            sentence = pattern.sub(template.format(name=literal), sentence)
    return sentence


def _prose(content: str) -> list[str]:
    """The sentences of ``content`` once fenced code and pasted lines (code, logs, tracebacks) are dropped."""
    kept = []
    for line in _FENCED.sub("\n", content).splitlines():
        visible = line.strip()
        if not visible or _PASTED.match(line):
            continue
        if sum(ch in _SYMBOLS for ch in visible) * 8 > len(visible):
            continue
        kept.append(visible)
    return [" ".join(piece.split()) for piece in _SENTENCE.split("\n".join(kept))]


def _statement(sentence: str) -> tuple[str, MemoryType] | None:
    """The sentence as a first-person statement (openers cut, a dropped "I" restored) and its type, or
    ``None`` when it is not worth keeping."""
    if sentence.endswith("?"):
        return None
    text = OPENER.sub("", sentence).strip()
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or REFUSED.search(text):
        return None
    if not FIRST_PERSON.search(text):
        if ENVIRONMENT.search(text):
            return text, next((kind for kind, pattern in RULES if pattern.search(text)), ENVIRONMENT_TYPE)
        if not DROPPED_SUBJECT.match(text):
            return None  # only what people say about themselves and their world
        text = next((prefix for pattern, prefix in _RESTORED if pattern.match(text)), "I ") + text[0].lower() + text[1:]
    kind = next((kind for kind, pattern in RULES if pattern.search(text)), None)
    return (text, kind) if kind is not None else None


def classify(sentence: str) -> MemoryType | None:
    """The memory type of a sentence worth keeping, or ``None`` for one that is not."""
    found = _statement(" ".join(sentence.split()))
    return found[1] if found else None


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
        for sentence in _prose(content):
            statement = _statement(sentence)
            if statement is not None:
                text, kind = statement
                found.append(Candidate(third_person(text, name or "User"), kind, name or "user", (index,)))
    return found
