"""Chat models for the agent loop: the :class:`LLM` protocol, an OpenAI-compatible client, and a scripted
model for offline demos and tests.

LLM calls are optional and explicit: nothing here touches the network until ``complete`` is called.
"""

from __future__ import annotations

from .errors import LLMError, LLMNotConfigured
from .openai_compatible import NO_API_KEY, OpenAICompatibleLLM
from .protocol import LLM
from .response import ChatResponse, ToolCall
from .scripted import ScriptedLLM, ScriptedRequest, ScriptedToolCall, ScriptExhausted, ScriptStep

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
