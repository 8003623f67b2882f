"""The closed set of edits to a curated store, and the outcome of a successful one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Add:
    """Append ``content`` as a new entry (a no-op success when an identical entry exists)."""

    action: ClassVar[str] = "add"

    content: str


@dataclass(frozen=True)
class Replace:
    """Replace the one entry with id ``entry_id`` (when given) or else containing ``old_text`` with ``content``."""

    action: ClassVar[str] = "replace"

    old_text: str
    content: str
    entry_id: str | None = None


@dataclass(frozen=True)
class Remove:
    """Delete the one entry with id ``entry_id`` (when given) or else containing ``old_text``."""

    action: ClassVar[str] = "remove"

    old_text: str
    entry_id: str | None = None


MemoryOp = Add | Replace | Remove


def usage_text(used_chars: int, char_limit: int) -> str:
    """``P% — C/L chars``: P truncated and capped at 100, numbers with thousands separators."""
    percent = min(100, used_chars * 100 // char_limit) if char_limit > 0 else 100
    return f"{percent}% — {used_chars:,}/{char_limit:,} chars"


@dataclass(frozen=True)
class MemoryOpOutcome:
    """What a successful ``apply`` left behind."""

    target: str
    message: str
    entry_count: int
    used_chars: int
    char_limit: int
    entries: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        """The usage line the model sees, e.g. ``41% — 902/2,200 chars``."""
        return usage_text(self.used_chars, self.char_limit)
