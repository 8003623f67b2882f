"""mnemo: durable, safe, local long-term memory for LLM agents.

The public API is re-exported here; everything else is internal.

Names are resolved on first use (PEP 562): ``import mnemo`` loads no numpy, onnxruntime, pydantic, SQLite
or model, so a process that only needs one tier, or only ``mnemo --version``, pays for nothing else. To
export a name, add it to ``_EXPORTS`` (the module it lives in), to ``__all__`` and to the
``TYPE_CHECKING`` imports; ``tests/test_package.py`` checks that the three agree.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Where each public name lives, relative to this package.
_EXPORTS: dict[str, tuple[str, ...]] = {
    ".agent": (
        "AgentMemory", "SessionStateError",
    ),
    ".anthropic_memory": (
        "AnthropicMemoryTool", "MemoryToolError",
    ),
    ".archive": (
        "Hit", "SessionHits", "SessionInfo", "StoredMessage",
    ),
    ".config": (
        "Settings", "load_settings", "resolve_home",
    ),
    ".curated": (
        "DEFAULT_MEMORY_CHAR_LIMIT", "DEFAULT_USER_CHAR_LIMIT", "ENTRY_DELIMITER", "Add", "AmbiguousMatch",
        "BlockedContent", "DelimiterInContent", "EmptyContent", "MemoryFileDrifted", "MemoryOpError",
        "MemoryOpOutcome", "MemoryReadFailed", "MemoryStore", "MemoryWriteFailed", "NoMatchingEntry",
        "OverBudget", "Remove", "Replace",
    ),
    ".database": (
        "DATABASE_FILENAME", "DatabaseTooNew", "ForeignDatabase",
    ),
    ".degraded": (
        "Degradation",
    ),
    ".doctor": (
        "diagnose",
    ),
    ".embeddings.cross_encoder": (
        "CrossEncoderMissing",
    ),
    ".errors": (
        "ConfigError", "InvalidArgument", "MnemoError", "StorageUnavailable", "TierUnavailable",
    ),
    ".graph": (
        "Association", "MaintenanceReport", "Memory", "MemoryNotFound", "MemoryType", "Relation",
    ),
    ".graph.recalled": (
        "RecalledMemory",
    ),
    ".graph.review": (
        "ReviewConflict", "ReviewItem", "ReviewNotFound", "ReviewState",
    ),
    ".llm": (
        "LLM", "ChatResponse", "LLMError", "LLMNotConfigured", "ScriptedLLM", "ScriptedToolCall", "ToolCall",
        "OpenAICompatibleLLM",
    ),
    ".loop": (
        "Conversation", "HostTool", "ToolEvent", "Turn",
    ),
    ".recollection": (
        "Recalled", "RecalledMessage",
    ),
    ".providers": (
        "BaseProvider", "ConfigField", "LifecycleHooks", "MemoryProvider", "ProviderCapabilities", "ProviderError",
        "ProviderRegistry",
    ),
    ".safety": (
        "MEMORY_CONTEXT_TAG", "ContextScrubber", "Finding", "build_memory_context_block",
        "inject_memory_context", "sanitize_context", "scan", "scrub_memory_context",
    ),
    ".provenance": (
        "Origin", "Provenance",
    ),
    ".scope": (
        "Scope",
    ),
    ".tools.memory": (
        "MEMORY_TOOL_SCHEMA", "handle_memory_call",
    ),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:
    from .agent import (
        AgentMemory,
        SessionStateError,
    )
    from .anthropic_memory import (
        AnthropicMemoryTool,
        MemoryToolError,
    )
    from .archive import (
        Hit,
        SessionHits,
        SessionInfo,
        StoredMessage,
    )
    from .config import (
        Settings,
        load_settings,
        resolve_home,
    )
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
    from .database import (
        DATABASE_FILENAME,
        DatabaseTooNew,
        ForeignDatabase,
    )
    from .degraded import (
        Degradation,
    )
    from .doctor import (
        diagnose,
    )
    from .embeddings.cross_encoder import (
        CrossEncoderMissing,
    )
    from .errors import (
        ConfigError,
        InvalidArgument,
        MnemoError,
        StorageUnavailable,
        TierUnavailable,
    )
    from .graph import (
        Association,
        MaintenanceReport,
        Memory,
        MemoryNotFound,
        MemoryType,
        Relation,
    )
    from .graph.recalled import (
        RecalledMemory,
    )
    from .graph.review import (
        ReviewConflict,
        ReviewItem,
        ReviewNotFound,
        ReviewState,
    )
    from .llm import (
        LLM,
        ChatResponse,
        LLMError,
        LLMNotConfigured,
        OpenAICompatibleLLM,
        ScriptedLLM,
        ScriptedToolCall,
        ToolCall,
    )
    from .loop import (
        Conversation,
        HostTool,
        ToolEvent,
        Turn,
    )
    from .provenance import (
        Origin,
        Provenance,
    )
    from .providers import (
        BaseProvider,
        ConfigField,
        LifecycleHooks,
        MemoryProvider,
        ProviderCapabilities,
        ProviderError,
        ProviderRegistry,
    )
    from .recollection import (
        Recalled,
        RecalledMessage,
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
    from .scope import (
        Scope,
    )
    from .tools.memory import (
        MEMORY_TOOL_SCHEMA,
        handle_memory_call,
    )


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AnthropicMemoryTool",
    "MemoryToolError",
    "Add",
    "AgentMemory",
    "AmbiguousMatch",
    "Association",
    "BaseProvider",
    "BlockedContent",
    "ChatResponse",
    "ConfigError",
    "CrossEncoderMissing",
    "ConfigField",
    "ContextScrubber",
    "Conversation",
    "DATABASE_FILENAME",
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "DatabaseTooNew",
    "Degradation",
    "DelimiterInContent",
    "ENTRY_DELIMITER",
    "EmptyContent",
    "Finding",
    "ForeignDatabase",
    "Hit",
    "HostTool",
    "InvalidArgument",
    "LLM",
    "LLMError",
    "LLMNotConfigured",
    "LifecycleHooks",
    "MEMORY_CONTEXT_TAG",
    "MEMORY_TOOL_SCHEMA",
    "MaintenanceReport",
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
    "Origin",
    "OverBudget",
    "Provenance",
    "ProviderCapabilities",
    "ProviderError",
    "ProviderRegistry",
    "Recalled",
    "RecalledMemory",
    "RecalledMessage",
    "Relation",
    "Remove",
    "Replace",
    "ReviewConflict",
    "ReviewItem",
    "ReviewNotFound",
    "ReviewState",
    "Scope",
    "ScriptedLLM",
    "ScriptedToolCall",
    "SessionHits",
    "SessionInfo",
    "SessionStateError",
    "Settings",
    "StorageUnavailable",
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
