"""Threat scanning for text that will reach a model's prompt.

Anything mnemo stores may be replayed into a future system prompt or per-turn context, so a single
poisoned note follows the user into every later session. :func:`scan` looks for the ways such a note
tries to take over the model, in three layers:

1. **normalisation** (:mod:`mnemo.safety.normalize`): NFKC, look-alike letters, zero-width and bidi
   characters, accents; then extra readings for leetspeak, spaced-out letters, rot13 and embedded base64,
   hex and percent-encoded payloads. Invisible and bidi-control characters are findings in their own right.
2. **patterns**: prompt-injection phrasings, fake chat turns, exfiltration of secrets, SSH backdoors and
   instructions hidden in HTML, matched on every reading.
3. **a learned classifier** (:mod:`mnemo.safety.classifier`) for injections no pattern names, flagging
   when its probability reaches the threshold (:data:`DEFAULT_SCAN_THRESHOLD`, or the ``scan_threshold``
   setting).

The patterns are deliberately narrow. Ordinary notes an agent keeps ("user said: ignore lint warnings in
legacy/", "key in ~/.ssh/config", "curl https://api.example.com/health") must pass, because a scanner that
cries wolf teaches the model to route around it. Each rule therefore requires the hostile *shape* (a verb
aimed at the model's instructions, a command that reads or ships a credential), not a single keyword.

This module gives the verdict; each layer lives apart: the readings (:func:`mnemo.safety.normalize.readings`),
the rule families (:mod:`mnemo.safety.rules`), the classifier's scoring (:mod:`mnemo.safety.classifier`),
and what a finding is (:mod:`mnemo.safety.findings`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import InvalidArgument
from .classifier import best_readings, classifier_finding, load_model
from .findings import (
    CATEGORIES,
    CLASSIFIER_RULE,
    EXFILTRATION,
    HIDDEN_HTML,
    INVISIBLE_UNICODE,
    LAYERS,
    PROMPT_INJECTION,
    REMOTE_CODE,
    ROLE_HIJACK,
    SSH_BACKDOOR,
    Finding,
    excerpt,
    finding_labels,
    refusal_reason,
)
from .normalize import INVISIBLE_CLASSES, View, readings
from .rules import compiled

__all__ = [
    "CATEGORIES",
    "CLASSIFIER_RULE",
    "DEFAULT_SCAN_THRESHOLD",
    "EXFILTRATION",
    "HIDDEN_HTML",
    "INVISIBLE_UNICODE",
    "LAYERS",
    "PROMPT_INJECTION",
    "REMOTE_CODE",
    "ROLE_HIJACK",
    "SCAN_CHAR_LIMIT",
    "SSH_BACKDOOR",
    "Finding",
    "check_threshold",
    "finding_labels",
    "refusal_reason",
    "scan",
    "scan_many",
]

SCAN_CHAR_LIMIT = 20_000
"""How many leading characters of the input :func:`scan` examines.

The scan runs on every memory write and on every entry at session start, so its cost must stay bounded
even when a hostile caller hands it megabytes. Every text mnemo puts into a prompt is capped far below
this (curated entries live in stores of 2,200 and 1,375 characters), so in practice the whole text is
scanned; a caller that accepts longer text must bound its size itself before it reaches a prompt.
"""

DEFAULT_SCAN_THRESHOLD = 0.83
"""The classifier flags a text when its injection probability is at least this (chosen in ``bench/scan.py``
on held-out sources; see the README). 1.0 turns the classifier off; the patterns always run."""


# --- invisible characters -----------------------------------------------------------------------

# Soft hyphens are not reported (ordinary text pasted from the web carries them), but folding removes
# them before matching because they split words just as well as a zero-width space.
_INVISIBLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rule, re.compile(f"[{characters}]")) for rule, characters in INVISIBLE_CLASSES.items()
)



def _invisible_findings(text: str) -> list[Finding]:
    found: list[tuple[int, str]] = []
    for rule, pattern in _INVISIBLE_RULES:
        match = pattern.search(text)
        if match is not None and match.start() == 0 and text[0] == "\ufeff":
            # A byte-order mark at the very start is an encoding artefact, not a hiding place.
            match = pattern.search(text, 1)
        if match is not None:
            found.append((match.start(), rule))
    return [
        Finding(INVISIBLE_UNICODE, rule, excerpt(text, position, position + 1), "unicode")
        for position, rule in sorted(found)
    ]


def _pattern_findings(views: list[View]) -> list[Finding]:
    """At most one finding per rule: the first reading (the text as written comes first) it matches in."""
    found: dict[str, Finding] = {}
    rules = compiled()
    for reading in views:
        lowered = reading.text.lower()
        # Lower-casing keeps every index unless a character lower-cases to two; then show the lowered text.
        shown = reading.text if len(lowered) == len(reading.text) else lowered
        contains = lowered.__contains__
        for rule in rules:
            if rule.name in found:
                continue
            # Literals are looked for only as far as a rule needs them (a group stops at its first literal
            # found, a rule at its first group absent), about a quarter cheaper than testing every literal up
            # front.
            for group in rule.needs:
                if not any(map(contains, group)):
                    break
            else:
                match = rule.pattern.search(lowered)
                if match is not None:
                    snippet = excerpt(shown, match.start(), match.end())
                    found[rule.name] = Finding(rule.category, rule.name, snippet, "pattern", reading.via)
    if not found:
        return []
    return [found[name] for name in dict.fromkeys(rule.name for rule in rules) if name in found]


def check_threshold(threshold: object) -> float:
    """``threshold`` as a float, :data:`DEFAULT_SCAN_THRESHOLD` for ``None``; :class:`InvalidArgument`
    (``scan_threshold``) unless it is a number in (0, 1]."""
    if threshold is None:
        return DEFAULT_SCAN_THRESHOLD
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise InvalidArgument("scan_threshold", f"must be a number in (0, 1], got {threshold!r}")
    return float(threshold)


def scan(text: str, *, threshold: float | None = None) -> tuple[Finding, ...]:
    """Look for prompt-injection, role-hijack, exfiltration, SSH-backdoor, hidden-HTML and invisible-Unicode
    threats in ``text``; an empty tuple means it is clean.

    ``threshold`` is the classifier's flagging probability, in (0, 1]; ``None`` means
    :data:`DEFAULT_SCAN_THRESHOLD`, and 1.0 turns the classifier off. At most one finding is reported per
    rule: pattern findings first (in :data:`CATEGORIES` order), then the classifier's, then invisible
    characters. Only the first :data:`SCAN_CHAR_LIMIT` characters are examined. Matching runs on the folded
    text and on each extra reading of it (decoded payloads, leetspeak...), so look-alike letters, words split
    by zero-width spaces and encoded instructions are still recognised, while the invisible characters
    themselves are reported.
    """
    return scan_many([text], threshold=threshold)[0]


def scan_many(texts: Sequence[str], *, threshold: float | None = None) -> list[tuple[Finding, ...]]:
    """:func:`scan` of each of ``texts``, with the same findings, the classifier scoring the whole batch at
    once (several times cheaper per text for a batch of notes)."""
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"scan() expects str, got {type(text).__name__}")
    threshold = check_threshold(threshold)
    heads = [text[:SCAN_CHAR_LIMIT] for text in texts]
    text_views = [readings(head) for head in heads]
    learned = best_readings(text_views, load_model()) if threshold < 1.0 else [None] * len(texts)
    results = []
    for head, text_readings, best in zip(heads, text_views, learned, strict=True):
        findings = _pattern_findings(text_readings)
        finding = classifier_finding(*best, threshold) if best is not None else None
        if finding is not None:
            findings.append(finding)
        findings.extend(_invisible_findings(head))
        results.append(tuple(findings))
    return results
