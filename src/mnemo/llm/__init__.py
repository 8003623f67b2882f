"""Chat models for the agent loop: the :class:`LLM` protocol, an OpenAI-compatible client, and a scripted
model for offline demos and tests.

LLM calls are optional and explicit: nothing here touches the network until ``complete`` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import LLMError, LLMNotConfigured
from .protocol import LLM
from .response import ChatResponse, ToolCall
from .scripted import (
    ScriptedLLM,
    ScriptedRequest,
    ScriptedToolCall,
    ScriptExhausted,
    ScriptStep,
)

if TYPE_CHECKING:
    from .openai_compatible import NO_API_KEY, OpenAICompatibleLLM


def __getattr__(name: str) -> Any:
    # The openai package takes most of a second to import; only code that talks to a model pays for it.
    if name in ("OpenAICompatibleLLM", "NO_API_KEY"):
        from . import openai_compatible

        return getattr(openai_compatible, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LLM",
    "NO_API_KEY",
    "ChatResponse",
    "LLMError",
    "LLMNotConfigured",
    "OpenAICompatibleLLM",
    "ScriptExhausted",
    "ScriptStep",
    "ScriptedLLM",
    "ScriptedRequest",
    "ScriptedToolCall",
    "ToolCall",
]
