"""Curated memory: the small, always-in-prompt ``MEMORY.md`` / ``USER.md`` store."""

from __future__ import annotations

from .entries import ENTRY_DELIMITER
from .errors import (
    AmbiguousMatch,
    BlockedContent,
    DelimiterInContent,
    EmptyContent,
    MemoryFileDrifted,
    MemoryOpError,
    MemoryReadFailed,
    MemoryWriteFailed,
    NoMatchingEntry,
    OverBudget,
)
from .ops import Add, MemoryOp, MemoryOpOutcome, Remove, Replace
from .store import DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT, TARGETS, MemoryStore

__all__ = [
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "TARGETS",
    "Add",
    "AmbiguousMatch",
    "BlockedContent",
    "DelimiterInContent",
    "EmptyContent",
    "MemoryFileDrifted",
    "MemoryOp",
    "MemoryOpError",
    "MemoryOpOutcome",
    "MemoryReadFailed",
    "MemoryStore",
    "MemoryWriteFailed",
    "NoMatchingEntry",
    "OverBudget",
    "Remove",
    "Replace",
]
