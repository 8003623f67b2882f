"""The deterministic extractor: statements worth keeping, picked and typed by phrase patterns.

Each message a person wrote loses its pasted code, logs and error output, and is split into sentences.
A sentence is judged without its spoken openers ("Yeah Maria,", "Wow!", "as you know"). Kept: a sentence of
three to sixty words about the speaker (the first person, a dropped "I": "Been busy volunteering", or a
standing wish: "never deploy on Fridays") or about the speaker's systems ("the repo uses uv"), typed by the
first pattern group of :mod:`.extract_patterns` that matches (todo, decision, condition, standing wish,
identity, goal, preference, event, fact). Refused: questions (by their mark or their first word), requests
to the assistant ("can you", "remind me how", "show me", an opening verb of command), hypotheticals and
musing ("if I had", "maybe", "not sure"), sentences to or about the listener, and passing states. The first
person is rewritten in the third ("I love hiking" said by Caroline becomes "Caroline loves hiking"), so a
memory reads the same wherever it is recalled. No model is involved: the same messages always give the same
memories.
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
    STANDING,
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
# Typographic quotes as typed on phones, made plain so "I’m" reads as "I'm".
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_SYMBOLS = str.maketrans("", "", "{}[]();=<>|`$\\")  # deletes them: what is left tells how many there were
_WORD = re.compile(r"[^\W_]+")
# A sentence ends at . ! ? before a space, unless the dot closes a title or a Latin abbreviation.
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\be\.g\.)(?<!\bi\.e\.)\s+|\n+"
)
# First person -> third, for a named subject, in one pass: fixed forms, "n't" verbs as they are, a compound
# subject ("my wife and I are") with its plural verb, and any other verb after a bare "I" (and one adverb) in
# its third-person form.
_FORMS = {
    "i'm": "{} is", "i am": "{} is", "i've": "{} has", "i have": "{} has", "i haven't": "{} hasn't",
    "i don't": "{} doesn't", "i do not": "{} does not", "i'd": "{} would", "i'll": "{} will", "i was": "{} was",
    "i do": "{} does", "my": "{}'s", "myself": "{}", "me": "{}",
}  # fmt: skip
_PRONOUN = re.compile(
    r"\b(?P<form>I'm|I am|I've|I have(?!n't)|I haven't|I don't|I do not|I'd|I'll|I was|I do|[Mm]y|[Mm]yself)\b"
    r"|\bI (?P<negated>\w+n't)\b|\b(?P<conjunction>and|or) I(?= (?:are|were)\b)"
    rf"|\bI (?P<adverb>{ADVERB})(?P<verb>[a-z]+)\b|(?<=\w )(?P<me>me)\b"
)
_PAST_OR_MODAL = re.compile(
    r"ed$|^(?:can|could|would|should|will|must|might|may|did|went|got|had|was|made|took|met|ran|wanna|gonna|gotta"
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


def _third(verb: str) -> str:
    if _PAST_OR_MODAL.search(verb):
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _rewrite(match: re.Match[str], name: str) -> str:
    if match["verb"]:
        return f"{name} {match['adverb']}{_third(match['verb'])}"
    if match["negated"]:
        return f"{name} {match['negated']}"
    if match["conjunction"]:
        return f"{match['conjunction']} {name}"
    return _FORMS[(match["form"] or match["me"]).casefold()].format(name)


def third_person(sentence: str, name: str) -> str:
    """``sentence`` with ``name`` in place of I / my / me (left as it is when ``name`` is empty)."""
    return _PRONOUN.sub(lambda match: _rewrite(match, name), sentence) if name else sentence


def _prose(content: str) -> list[str]:
    """The sentences of ``content`` once fenced code and pasted lines (code, logs, tracebacks) are dropped."""
    kept = []
    for line in _FENCED.sub("\n", content.translate(_QUOTES)).splitlines():
        visible = line.strip()
        if not visible or _PASTED.match(line):
            continue
        if (len(visible) - len(visible.translate(_SYMBOLS))) * 8 > len(visible):
            continue  # more than one character in eight is code punctuation
        kept.append(visible)
    return [" ".join(piece.split()) for piece in _SENTENCE.split("\n".join(kept))]


def _restored(text: str) -> str:
    """``text`` with the "I" that casual speech dropped put back ("Been busy" -> "I've been busy")."""
    prefix = next((prefix for pattern, prefix in _RESTORED if pattern.match(text)), "I ")
    return prefix + text[0].lower() + text[1:]


def _statement(sentence: str) -> tuple[str, MemoryType] | None:
    """The sentence as a first-person statement (openers cut, a dropped "I" restored) and its type, or
    ``None`` when it is not worth keeping."""
    if sentence.endswith("?"):
        return None
    opener = OPENER.match(sentence)
    said = text = sentence[opener.end() :].strip() if opener else sentence
    low = text.lower()
    if not MIN_WORDS <= len(_WORD.findall(low)) <= MAX_WORDS:  # "I'm vegan" is three words, "I did" two
        return None
    default = ENVIRONMENT_TYPE if ENVIRONMENT.match(low) else None
    if default is None and not FIRST_PERSON.search(low) and not STANDING.match(low):
        if DROPPED_SUBJECT.match(low):
            text = _restored(text)
            low = text.lower()
        else:
            return None  # only what people say about themselves and their world
    kind = next((kind for kind, pattern in RULES if pattern.search(low)), default)
    # refusals last: a pure filter, and most sentences are out before it
    return (text, kind) if kind is not None and not REFUSED.search(said.lower()) else None


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
