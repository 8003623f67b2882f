"""A minimal agent loop: a chat model, tools, and :class:`~mnemo.agent.AgentMemory`.

It is what ``mnemo chat`` and ``mnemo demo`` run, and a reference for wiring mnemo into another
framework: one :meth:`Conversation.send` per user message, which

1. appends the message to the stored history,
2. asks AgentMemory for this turn's API messages (provider context fenced into a copy of the user
   message, computed once per turn),
3. calls the model with the frozen system prompt and the tools, runs every tool call it makes through
   AgentMemory and feeds the JSON results back, until the model answers in text,
4. scrubs any echoed memory-context fence from the answer, stores it, and reports the turn complete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from .agent import AgentMemory
from .errors import InvalidArgument, MnemoError
from .llm import LLM, ChatResponse
from .safety import scrub_memory_context

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant with long-term memory. Save durable facts about the user and the "
    "environment with the memory tool when you learn them; do not save secrets or passing details."
)


class ToolLoopExceeded(MnemoError):
    """The model kept calling tools past ``max_tool_rounds`` without answering."""


@dataclass(frozen=True)
class ToolEvent:
    """One tool call the model made during a turn, and the JSON result it got back."""

    name: str
    arguments: str
    result: str


@dataclass(frozen=True)
class Turn:
    """What one :meth:`Conversation.send` produced."""

    reply: str
    tool_events: tuple[ToolEvent, ...]
    api_messages: tuple[dict[str, Any], ...] = field(repr=False)
    """The messages of the turn's first model call, as sent (memory context included)."""


class Conversation:
    """One session's chat: stored history plus the model and memory that serve it.

    ``on_tool`` is called with each :class:`ToolEvent` as it happens (for a live display).
    """

    def __init__(
        self,
        memory: AgentMemory,
        llm: LLM,
        *,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_tool_rounds: int = 8,
        on_tool: Callable[[ToolEvent], None] | None = None,
    ) -> None:
        if max_tool_rounds < 1:
            raise InvalidArgument("max_tool_rounds", "must be at least 1")
        self.memory = memory
        self.llm = llm
        self.max_tool_rounds = max_tool_rounds
        self.history: list[dict[str, Any]] = []
        self._on_tool = on_tool
        self._tools = memory.tools()
        memory_blocks = memory.system_prompt()
        self._system = {"role": "system", "content": f"{instructions}\n\n{memory_blocks}".strip()}

    def send(self, user_message: str) -> Turn:
        """Run one user turn to the model's final answer."""
        steps = self._turn(user_message)
        step = _advance(steps, None)
        while not isinstance(step, Turn):
            step = _advance(steps, self.llm.complete(step, tools=self._tools))
        return step

    async def asend(self, user_message: str) -> Turn:
        """:meth:`send` for asyncio: the model is awaited, memory work runs in a worker thread."""
        steps = self._turn(user_message)
        step = await asyncio.to_thread(_advance, steps, None)
        while not isinstance(step, Turn):
            response = await self.llm.acomplete(step, tools=self._tools)
            step = await asyncio.to_thread(_advance, steps, response)
        return step

    def _turn(self, user_message: str) -> Generator[list[dict[str, Any]], ChatResponse, Turn]:
        # One turn as a generator that yields each model request and receives the response, so the
        # sync and async drivers share every line of the turn's logic.
        if not isinstance(user_message, str) or not user_message.strip():
            raise InvalidArgument("user_message", "must be a non-empty string")
        turn_start = len(self.history)
        self.history.append({"role": "user", "content": user_message})
        # The enriched copy serves every model call of this turn; the stored history stays plain.
        api = [self._system, *self.memory.prepare_messages(user_message, self.history)]
        first_call = tuple(dict(message) for message in api)
        events: list[ToolEvent] = []
        for _ in range(self.max_tool_rounds):
            response = yield api
            if not response.tool_calls:
                return self._finish(user_message, response, events, first_call, turn_start)
            self._record(api, response.to_message())
            for call in response.tool_calls:
                result = self.memory.handle_tool_call(call.name, call.arguments, tool_call_id=call.id)
                event = ToolEvent(call.name, call.arguments, result)
                events.append(event)
                if self._on_tool is not None:
                    self._on_tool(event)
                self._record(api, {"role": "tool", "tool_call_id": call.id, "content": result})
        raise ToolLoopExceeded(f"the model made tool calls for {self.max_tool_rounds} rounds without answering")

    def _record(self, api: list[dict[str, Any]], message: dict[str, Any]) -> None:
        self.history.append(message)
        api.append(message)

    def _finish(
        self,
        user_message: str,
        response: ChatResponse,
        events: list[ToolEvent],
        first_call: tuple[dict[str, Any], ...],
        turn_start: int,
    ) -> Turn:
        reply = scrub_memory_context(response.content or "")
        self.history.append({"role": "assistant", "content": reply})
        self.memory.turn_complete(user_message, reply, messages=self.history[turn_start:])
        return Turn(reply=reply, tool_events=tuple(events), api_messages=first_call)


def _advance(
    steps: Generator[list[dict[str, Any]], ChatResponse, Turn], response: ChatResponse | None
) -> list[dict[str, Any]] | Turn:
    # StopIteration cannot cross a Future (asyncio turns it into a hang), so the finished turn comes
    # back as a value instead.
    try:
        return next(steps) if response is None else steps.send(response)
    except StopIteration as done:
        return done.value
