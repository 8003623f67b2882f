"""The one interface the agent loop needs from a chat model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .response import ChatResponse


@runtime_checkable
class LLM(Protocol):
    """A chat model that can call tools.

    ``messages`` and ``tools`` use the OpenAI chat-completions format (tools as
    ``{"type": "function", "function": {...}}``). Implementations never mutate ``messages`` and raise
    :class:`~mnemo.llm.errors.LLMError` for every failure of the call itself.
    """

    def complete(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """Ask the model for its next message."""
        ...

    async def acomplete(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """The same as :meth:`complete`, for asyncio agent loops."""
        ...
