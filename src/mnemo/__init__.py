"""mnemo: durable, safe, local long-term memory for LLM agents.

The public API is re-exported here; everything else is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agent import AgentMemory, SessionStateError
from .archive import Hit, SessionHits, SessionInfo, StoredMessage
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
from .database import DATABASE_FILENAME, DatabaseTooNew, ForeignDatabase
from .degraded import Degradation
from .doctor import diagnose
from .errors import ConfigError, InvalidArgument, MnemoError, StorageUnavailable, TierUnavailable
from .graph import Association, Memory, MemoryNotFound, MemoryType, Relation
from .graph.recalled import RecalledMemory
from .llm import (
    LLM,
    ChatResponse,
    LLMError,
    LLMNotConfigured,
    ScriptedLLM,
    ScriptedToolCall,
    ToolCall,
)
from .loop import Conversation, ToolEvent, Turn
from .providers import (
    BaseProvider,
    ConfigField,
    LifecycleHooks,
    MemoryProvider,
    ProviderCapabilities,
    ProviderError,
    ProviderRegistry,
)
from .safety import (
    MEMORY_CONTEXT_TAG,
    ContextScrubber,
    Finding,
    build_memory_context_block,
    inject_memory_context,
    sanitize_context,
    scan,
    scrub_memory_context,
)
from .scope import Scope
from .tools.memory import MEMORY_TOOL_SCHEMA, handle_memory_call

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .llm import OpenAICompatibleLLM


def __getattr__(name: str) -> Any:
    # Resolved on first use: the openai package takes most of a second to import.
    if name == "OpenAICompatibleLLM":
        from .llm import OpenAICompatibleLLM

        return OpenAICompatibleLLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DATABASE_FILENAME",
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "LLM",
    "MEMORY_CONTEXT_TAG",
    "MEMORY_TOOL_SCHEMA",
    "Add",
    "AgentMemory",
    "AmbiguousMatch",
    "Association",
    "BaseProvider",
    "BlockedContent",
    "ChatResponse",
    "ConfigError",
    "ConfigField",
    "Degradation",
    "ContextScrubber",
    "Conversation",
    "DatabaseTooNew",
    "DelimiterInContent",
    "EmptyContent",
    "Finding",
    "ForeignDatabase",
    "Hit",
    "InvalidArgument",
    "LLMError",
    "LLMNotConfigured",
    "LifecycleHooks",
    "Memory",
    "MemoryFileDrifted",
    "MemoryNotFound",
    "MemoryOpError",
    "MemoryOpOutcome",
    "MemoryProvider",
    "MemoryReadFailed",
    "MemoryStore",
    "MemoryType",
    "MemoryWriteFailed",
    "MnemoError",
    "NoMatchingEntry",
    "OpenAICompatibleLLM",
    "OverBudget",
    "ProviderCapabilities",
    "ProviderError",
    "ProviderRegistry",
    "RecalledMemory",
    "Relation",
    "Remove",
    "Replace",
    "Scope",
    "ScriptedLLM",
    "ScriptedToolCall",
    "SessionHits",
    "SessionInfo",
    "SessionStateError",
    "StorageUnavailable",
    "Settings",
    "StoredMessage",
    "TierUnavailable",
    "ToolCall",
    "ToolEvent",
    "Turn",
    "build_memory_context_block",
    "diagnose",
    "handle_memory_call",
    "inject_memory_context",
    "load_settings",
    "resolve_home",
    "sanitize_context",
    "scan",
    "scrub_memory_context",
]
