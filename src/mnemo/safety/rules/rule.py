"""One rule of the threat scan: its category, name, the literals it needs, and what it matches with; and how
a pattern is compiled (literals lower-cased, tried only where its opening literals occur)."""

from __future__ import annotations

import re
from typing import NamedTuple, Protocol

from ..openings import by_openings


class Matcher(Protocol):
    """What a rule matches with: a compiled pattern, or an object that searches like one."""

    def search(self, text: str, /) -> re.Match[str] | None: ...


class Rule(NamedTuple):
    category: str
    name: str
    needs: tuple[tuple[str, ...], ...]
    """Every group must have a member in the lower-cased text for the pattern to be tried."""
    pattern: Matcher



RuleSpec = tuple[str, str, tuple[tuple[str, ...], ...], "str | Matcher"]
"""``(category, name, needs, pattern)``: a pattern (or a matcher) and the literal groups it needs. A rule may
take several entries under one name, each a branch with the literals it needs: a branch whose literals are
absent costs nothing, where one pattern of many branches would be tried on every note."""


def _lower_case(pattern: str) -> str:
    """``pattern`` with its literals lower-cased, escapes (``\\S``, ``\\W``) untouched."""
    pieces = re.findall(r"\\.|[^\\]+", pattern)
    return "".join(piece if piece[0] == "\\" else piece.lower() for piece in pieces)


def compile_pattern(pattern: str) -> Matcher:
    lowered = _lower_case(pattern)
    return by_openings(lowered, re.MULTILINE) or re.compile(lowered, re.MULTILINE)
