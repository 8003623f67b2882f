"""A minimal agent loop: a chat model, tools, and :class:`~mnemo.agent.AgentMemory`.

It is what ``mnemo chat`` and ``mnemo demo`` run, and a reference for wiring mnemo into another
framework: one :meth:`Conversation.send` per user message, which

1. appends the message to the stored history,
2. asks AgentMemory for this turn's API messages (provider context fenced into a copy of the user
   message, computed once per turn),
3. calls the model with the frozen system prompt and the tools, runs every tool call it makes (memory's
   through AgentMemory; the host's own :class:`HostTool` functions here, their results reported to
   AgentMemory as untrusted content, see :mod:`mnemo.taint`) and feeds the results back, until the model
   answers in text,
4. scrubs any echoed memory-context fence from the answer, stores it, and reports the turn complete.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .agent import AgentMemory
from .errors import InvalidArgument, MnemoError
from .llm import LLM, ChatResponse
from .safety import scrub_memory_context
from .tools._json import failure

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
class HostTool:
    """One of the host's own tools: ``function`` is called with the model's arguments by name and returns
    the text the model sees (anything else is sent as JSON); ``schema`` is its OpenAI function schema.

    Its results enter the model's context, so they taint the session (the model's later memory writes
    wait for the user's review) unless the tool is named in the ``trusted_tools`` setting.
    """

    function: Callable[..., Any]
    schema: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The tool's name, from its schema."""
        return str(self.schema["function"]["name"])

    def run(self, arguments: str) -> str:
        """Call the function with ``arguments`` (the model's JSON text); an error becomes the result."""
        try:
            parsed = json.loads(arguments or "{}")
            if not isinstance(parsed, dict):
                raise InvalidArgument("arguments", "must be a JSON object")
            result = self.function(**parsed)
        except Exception as exc:  # noqa: BLE001 - the model must get an answer, and may try again
            return failure(f"tool {self.name} failed: {type(exc).__name__}: {exc}")
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


def _host_tools(tools: Iterable[HostTool], memory_tools: Iterable[Mapping[str, Any]]) -> dict[str, HostTool]:
    taken = {schema["function"]["name"] for schema in memory_tools}
    found: dict[str, HostTool] = {}
    for index, tool in enumerate(tools):
        if not isinstance(tool, HostTool):
            raise InvalidArgument(f"tools[{index}]", f"must be a HostTool, got {type(tool).__name__}")
        try:
            name = tool.name
        except (KeyError, TypeError):
            raise InvalidArgument(f"tools[{index}].schema", "must be an OpenAI function schema") from None
        if name in taken or name in found:
            raise InvalidArgument(f"tools[{index}]", f"a tool named {name!r} is already offered")
        found[name] = tool
    return found


@dataclass(frozen=True)
class Turn:
    """What one :meth:`Conversation.send` produced."""

    reply: str
    tool_events: tuple[ToolEvent, ...]
    api_messages: tuple[dict[str, Any], ...] = field(repr=False)
    """The messages of the turn's first model call, as sent (memory context included)."""


class Conversation:
    """One session's chat: stored history plus the model and memory that serve it.

    ``tools`` are the host's own (see :class:`HostTool`), offered beside memory's. ``on_tool`` is called
    with each :class:`ToolEvent` as it happens (for a live display).
    """

    def __init__(
        self,
        memory: AgentMemory,
        llm: LLM,
        *,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_tool_rounds: int = 8,
        on_tool: Callable[[ToolEvent], None] | None = None,
        tools: Iterable[HostTool] = (),
    ) -> None:
        if max_tool_rounds < 1:
            raise InvalidArgument("max_tool_rounds", "must be at least 1")
        self.memory = memory
        self.llm = llm
        self.max_tool_rounds = max_tool_rounds
        self.history: list[dict[str, Any]] = []
        self._on_tool = on_tool
        memory_tools = memory.tools()
        self._host_tools = _host_tools(tools, memory_tools)
        self._tools = [*memory_tools, *(dict(tool.schema) for tool in self._host_tools.values())]
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
                result = self._run_tool(call.name, call.arguments, call.id)
                event = ToolEvent(call.name, call.arguments, result)
                events.append(event)
                if self._on_tool is not None:
                    self._on_tool(event)
                self._record(api, {"role": "tool", "tool_call_id": call.id, "content": result})
        raise ToolLoopExceeded(f"the model made tool calls for {self.max_tool_rounds} rounds without answering")

    def _run_tool(self, name: str, arguments: str, call_id: str) -> str:
        host_tool = self._host_tools.get(name)
        if host_tool is None:
            return self.memory.handle_tool_call(name, arguments, tool_call_id=call_id)
        result = host_tool.run(arguments)
        self.memory.report_untrusted(result, source=name)
        return result

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
