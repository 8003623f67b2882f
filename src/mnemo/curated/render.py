"""The system-prompt block of a curated store, as frozen at session start."""

from __future__ import annotations

from collections.abc import Iterable

from .entries import join_entries
from .ops import usage_text

SEPARATOR = "═" * 46

HEADERS = {
    "memory": "MEMORY (your personal notes)",
    "user": "USER PROFILE (who the user is)",
}


def blocked_placeholder(categories: Iterable[str]) -> str:
    """What the snapshot shows instead of an entry the scanner flagged."""
    return f"[BLOCKED: {', '.join(categories)}]"


def render_block(target: str, shown_entries: Iterable[str], used_chars: int, char_limit: int) -> str:
    """The block: separator, header with usage, separator, entries joined by the delimiter."""
    header = f"{HEADERS[target]} [{usage_text(used_chars, char_limit)}]"
    return f"{SEPARATOR}\n{header}\n{SEPARATOR}\n{join_entries(shown_entries)}"
