"""mnemo: durable, safe, local long-term memory for LLM agents.

The public API is re-exported here; everything else is internal.
"""

from __future__ import annotations

from .config import Settings, load_settings, resolve_home
from .curated import (
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    ENTRY_DELIMITER,
    Add,
    AmbiguousMatch,
    BlockedContent,
    DelimiterInContent,
    EmptyContent,
    MemoryFileDrifted,
    MemoryOpError,
    MemoryOpOutcome,
    MemoryReadFailed,
    MemoryStore,
    MemoryWriteFailed,
    NoMatchingEntry,
    OverBudget,
    Remove,
    Replace,
)
from .errors import ConfigError, InvalidArgument, MnemoError
from .tools.memory import MEMORY_TOOL_SCHEMA, handle_memory_call

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "MEMORY_TOOL_SCHEMA",
    "Add",
    "AmbiguousMatch",
    "BlockedContent",
    "ConfigError",
    "DelimiterInContent",
    "EmptyContent",
    "InvalidArgument",
    "MemoryFileDrifted",
    "MemoryOpError",
    "MemoryOpOutcome",
    "MemoryReadFailed",
    "MemoryStore",
    "MemoryWriteFailed",
    "MnemoError",
    "NoMatchingEntry",
    "OverBudget",
    "Remove",
    "Replace",
    "handle_memory_call",
    "Settings",
    "load_settings",
    "resolve_home",
]
