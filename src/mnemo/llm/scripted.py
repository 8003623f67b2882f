"""A chat model that replays a script: the offline demo's model, and a stand-in LLM in tests."""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..errors import InvalidArgument
from .errors import LLMError
from .response import ChatResponse, ToolCall


@dataclass(frozen=True)
class ScriptedToolCall:
    """A tool call a script asks for; :class:`ScriptedLLM` gives it an id and JSON-encodes the arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


#: What one turn of the script yields: final text, tool calls, or a response built by hand.
ScriptReply: TypeAlias = str | ChatResponse | Sequence[ScriptedToolCall]
#: A script step: a fixed reply, or a function of the messages sent (so it can react to tool results).
ScriptStep: TypeAlias = ScriptReply | Callable[[list[dict[str, Any]]], ScriptReply]


@dataclass(frozen=True)
class ScriptedRequest:
    """What a :class:`ScriptedLLM` was sent on one call (deep copies, safe to inspect later)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


class ScriptExhausted(LLMError):
    """The model was asked for more turns than its script has."""


class ScriptedLLM:
    """An :class:`~mnemo.llm.protocol.LLM` that answers each call with the next step of a script.

    A step is final text (``"Noted."``), a list of :class:`ScriptedToolCall`, a ready
    :class:`ChatResponse`, or a callable receiving a copy of the messages and returning any of those.
    Tool calls come out as real :class:`ToolCall` objects with unique ids and JSON-text arguments, as a
    model's would; ``finish_reason`` is ``"tool_calls"`` or ``"stop"``. Every call is recorded in
    :attr:`requests`. Thread-safe: concurrent calls each take a different step.
    """

    def __init__(self, steps: Sequence[ScriptStep]) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise InvalidArgument("steps", "must be a sequence of script steps")
        for index, step in enumerate(steps):
            if not callable(step):
                _check_reply(step, f"steps[{index}]")
        self._steps = list(steps)
        self._next = 0
        self._lock = threading.Lock()
        self.requests: list[ScriptedRequest] = []

    @property
    def remaining(self) -> int:
        """How many steps have not been used yet."""
        with self._lock:
            return len(self._steps) - self._next

    def complete(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """Answer with the next step; raise :class:`ScriptExhausted` when none is left."""
        # Copies: the script and the recorded requests must not alias the caller's live history.
        sent = copy.deepcopy(list(messages))
        with self._lock:
            self.requests.append(ScriptedRequest(sent, copy.deepcopy(list(tools)) if tools else None))
            index = self._next
            if index >= len(self._steps):
                raise ScriptExhausted(
                    f"scripted LLM has no step left: call #{index + 1} after all {len(self._steps)} steps were used"
                )
            self._next += 1
            step = self._steps[index]
        if callable(step):
            reply = step(copy.deepcopy(sent))
            _check_reply(reply, f"steps[{index}] result")
        else:
            reply = step
        return _to_response(reply)

    async def acomplete(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """The same as :meth:`complete`; a script does no I/O, so nothing needs awaiting."""
        return self.complete(messages, tools=tools)


def _check_reply(reply: object, where: str) -> None:
    if isinstance(reply, (str, ChatResponse)):
        return
    if isinstance(reply, Sequence) and not isinstance(reply, bytes) and reply:
        for call in reply:
            if not isinstance(call, ScriptedToolCall):
                raise InvalidArgument(where, f"tool calls must be ScriptedToolCall, got {type(call).__name__}")
            if not isinstance(call.name, str) or not call.name:
                raise InvalidArgument(where, "a tool call needs a non-empty name")
            if not isinstance(call.arguments, Mapping):
                raise InvalidArgument(where, f"arguments of {call.name!r} must be a mapping")
            try:
                json.dumps(call.arguments)
            except (TypeError, ValueError) as exc:
                raise InvalidArgument(where, f"arguments of {call.name!r} are not JSON-serialisable: {exc}") from exc
        return
    raise InvalidArgument(
        where, f"must be text, a ChatResponse, a non-empty list of ScriptedToolCall or a callable, got {reply!r}"
    )


def _to_response(reply: ScriptReply) -> ChatResponse:
    if isinstance(reply, ChatResponse):
        return reply
    if isinstance(reply, str):
        return ChatResponse(content=reply, finish_reason="stop")
    calls = tuple(
        ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=call.name,
                 arguments=json.dumps(dict(call.arguments), ensure_ascii=False))
        for call in reply
    )
    return ChatResponse(content=None, tool_calls=calls, finish_reason="tool_calls")
