"""mnemo inside Pydantic AI: :func:`memory_toolset`, recall / remember / session search as a typed
``FunctionToolset``, and :class:`MnemoContext`, a capability that adds mnemo's fenced per-turn context to
what the model is sent.

Imported only by applications that use Pydantic AI (``pip install 'mnemo-local[pydantic-ai]'``); mnemo
itself never imports it.

Both work on one :class:`~mnemo.AgentMemory` (its scope is whose memory the agent sees)::

    with AgentMemory.open("chat-1", user_id="alice") as memory:
        agent = Agent(model, toolsets=[memory_toolset(memory)], capabilities=[MnemoContext(memory)])

Why a capability rather than a history processor: Pydantic AI writes what a history processor returns
back into the run's history, so the recalled context would be stored as if the user had said it and be
sent again on every later turn. :class:`MnemoContext` changes only the request being sent (the same
contract as :meth:`~mnemo.AgentMemory.prepare_messages`: the stored history is never touched), and when
the run ends it hands the turn to :meth:`~mnemo.AgentMemory.turn_complete`, so the archive records it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from pydantic_ai import ModelRetry
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.toolsets import FunctionToolset

from ..agent import AgentMemory
from ..errors import MnemoError
from ..graph import MemoryType
from ..graph.recalled import RecalledMemory


def memory_toolset(memory: AgentMemory, *, toolset_id: str = "mnemo") -> FunctionToolset[Any]:
    """A toolset with ``recall``, ``remember`` and ``session_search`` on ``memory`` (its scope), each
    calling the typed API in a worker thread. A refusal (a bad argument, content the threat scan blocks)
    goes back to the model as a retry prompt naming the problem; nothing is written."""
    toolset: FunctionToolset[Any] = FunctionToolset(id=toolset_id)

    @toolset.tool_plain
    async def recall(query: str, limit: int = 5) -> list[RecalledMemory]:
        """Search long-term memory for what is relevant to ``query``, best first.

        Args:
            query: What to look for, in plain words.
            limit: How many memories to return (1 to 50).
        """
        with _as_retry():
            return await memory.arecall(query, limit=limit)

    @toolset.tool_plain
    async def remember(content: str, type: MemoryType = MemoryType.FACT, subject: str = "") -> dict[str, str]:
        """Save one fact, preference, decision, goal or event to long-term memory.

        Args:
            content: The memory, one self-contained statement.
            type: What kind of memory it is.
            subject: Who it is about ("user", a person's name), if anyone.
        """
        with _as_retry():
            saved = await memory.aremember(content, type=type, subject=subject)
        return {"id": saved.id, "type": saved.type.value, "message": "Memory saved."}

    @toolset.tool_plain
    async def session_search(query: str, limit: int = 3) -> list[dict[str, Any]]:
        """Search the messages of earlier conversations with this user.

        Args:
            query: Words to look for.
            limit: How many past sessions to return (1 to 20).
        """
        with _as_retry():
            found = await memory.asearch_sessions(query, limit=limit)
        return [hits.to_dict() for hits in found]

    return toolset


class _as_retry:
    """mnemo's refusals as Pydantic AI's ``ModelRetry``: the model is told what to fix."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        if isinstance(error, MnemoError):
            raise ModelRetry(str(error)) from error


@dataclasses.dataclass
class MnemoContext(AbstractCapability[Any]):
    """Adds mnemo's fenced ``<memory-context>`` block to the user prompt of each request sent to the
    model (computed once per run, by :meth:`~mnemo.AgentMemory.prepare_messages`), never to the stored
    history; records the finished turn with :meth:`~mnemo.AgentMemory.turn_complete`."""

    memory: AgentMemory
    _fenced: str | None = dataclasses.field(default=None, repr=False)

    async def for_run(self, ctx: Any) -> MnemoContext:
        # A copy per run holds that run's context block (Pydantic AI's place for per-run state).
        return MnemoContext(self.memory)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        prompt = ctx.prompt
        if not isinstance(prompt, str) or not prompt:
            return request_context
        if self._fenced is None:
            prepared = await asyncio.to_thread(self.memory.prepare_messages, prompt, [])
            self._fenced = prepared[-1]["content"]
        if self._fenced != prompt:
            request_context.messages = _with_prompt(request_context.messages, prompt, self._fenced)
        return request_context

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        if isinstance(ctx.prompt, str) and ctx.prompt:
            # Fire-and-forget (the providers' threads do the work): a worker thread would only add its hop.
            self.memory.turn_complete(ctx.prompt, str(result.output))
        return result


def _with_prompt(messages: list[ModelMessage], prompt: str, fenced: str) -> list[ModelMessage]:
    """A copy of ``messages`` whose latest user prompt ``prompt`` reads ``fenced``; the originals unchanged."""
    copied = list(messages)
    for index in range(len(copied) - 1, -1, -1):
        message = copied[index]
        if not isinstance(message, ModelRequest):
            continue
        for position, part in enumerate(message.parts):
            if isinstance(part, UserPromptPart) and part.content == prompt:
                parts = list(message.parts)
                parts[position] = dataclasses.replace(part, content=fenced)
                copied[index] = dataclasses.replace(message, parts=parts)
                return copied
    return copied


__all__ = ["MnemoContext", "memory_toolset"]
