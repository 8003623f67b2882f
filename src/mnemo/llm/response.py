"""What a chat model answered: text, tool calls, or both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One function call requested by the model.

    ``arguments`` is the raw JSON text the model sent, unparsed: a model may send malformed JSON, and the
    tool boundary (``mnemo.tools``) is where that becomes a clear error for the model to fix.
    """

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        """The wire form inside an assistant message's ``tool_calls`` list."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class ChatResponse:
    """One chat-completions choice, independent of the client that produced it.

    ``finish_reason`` is the model's (``"stop"``, ``"tool_calls"``, ``"length"``, ...); ``usage`` is the
    token accounting the server reported, if any.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the history before sending tool results back.

        ``tool_calls`` is present only when the model called tools: several servers reject an empty list.
        """
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message
