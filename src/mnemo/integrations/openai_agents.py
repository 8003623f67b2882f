"""mnemo inside the OpenAI Agents SDK: :class:`MnemoSession`, the SDK's ``Session`` kept in mnemo's session
archive, and :func:`memory_tools`, mnemo's memory tools as the SDK's ``FunctionTool``\\ s.

Imported only by applications that use the SDK (``pip install 'mnemo-local[openai-agents]'``); mnemo itself
never imports it.

A session's items are messages of one archived session in the session's scope (user, agent, channel):
``Runner.run(agent, text, session=MnemoSession("chat-1", user_id="alice"))`` keeps the conversation where
``session_search`` and :meth:`~mnemo.AgentMemory.search_sessions` find it from any later session of that
scope, and where another scope can neither read it nor write into it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import SessionSettings, resolve_session_limit
from agents.tool import FunctionTool

from ..archive import SessionNotFound, StoredMessage
from ..config import Settings, load_settings
from ..errors import InvalidArgument
from ..storage import open_archive

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.tool_context import ToolContext

    from ..agent import AgentMemory

SOURCE = "openai-agents"
# An item that is not a chat message (a tool call, its output, reasoning) is archived as the message that
# says the same, with the SDK's own item kept whole under this key to be given back exactly.
_ITEM_KEY = "openai_agents_item"
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
DEFAULT_TOOLS = ("recall", "remember", "session_search")


def _as_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """One SDK input item as the archived message that says the same."""
    if item.get("role") in _MESSAGE_ROLES and set(item) <= {"role", "content", "type", "id", "status"}:
        return dict(item)
    kind = item.get("type")
    if kind == "function_call":
        call = {"id": item.get("call_id"), "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")}}  # fmt: skip
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    elif kind == "function_call_output":
        output = item.get("output")
        message = {"role": "tool", "tool_call_id": item.get("call_id"),
                   "content": output if isinstance(output, (str, list)) else json.dumps(output)}  # fmt: skip
    else:
        role = item.get("role") if item.get("role") in _MESSAGE_ROLES else "assistant"
        content = item.get("content") if isinstance(item.get("content"), (str, list)) else item.get("summary")
        message = {"role": role, "content": content if isinstance(content, (str, list)) else None}
    message[_ITEM_KEY] = dict(item)
    return message


def _as_item(message: StoredMessage) -> TResponseInputItem:
    """The SDK item an archived message was made from, exactly as it was added."""
    if _ITEM_KEY in message.extra:
        return message.extra[_ITEM_KEY]
    return message.to_message()  # type: ignore[return-value]


class MnemoSession:
    """The OpenAI Agents SDK ``Session`` protocol on mnemo's session archive.

    ``session_id`` names the archived session (created on the first write); ``home`` and ``**settings``
    are mnemo's (see :func:`~mnemo.load_settings`), ``user_id``, ``agent_id`` and ``channel_id`` among them
    (whose session it is), or a whole ``settings`` object. ``session_settings.limit`` is the default for
    :meth:`get_items`. Items come back in the order they were added, exactly as added. :meth:`close`
    closes the archive.
    """

    def __init__(
        self,
        session_id: str,
        home: str | Path | None = None,
        *,
        session_settings: SessionSettings | None = None,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> None:
        if settings is not None and overrides:
            raise InvalidArgument("settings", "give either a Settings object or keyword settings, not both")
        self.settings = settings if settings is not None else load_settings(home, **overrides)
        self.session_id = session_id
        self.session_settings = session_settings if session_settings is not None else SessionSettings()
        # Messages are embedded by the archive's own passes (the next session's search, maintenance):
        # adding items stays a plain write.
        self._archive = open_archive(self.settings.database_target, scope=self.settings.scope)
        self._started = False
        self._lock = threading.Lock()

    def _start(self) -> None:
        with self._lock:
            if not self._started:
                self._archive.start_session(self.session_id, source=SOURCE, exist_ok=True)
                self._started = True

    def _items(self, limit: int | None) -> list[TResponseInputItem]:
        if limit is not None and limit <= 0:
            return []
        stored = self._archive.messages(self.session_id, limit=limit, newest_first=limit is not None)
        return [_as_item(message) for message in stored]

    def _add(self, items: Sequence[Mapping[str, Any]]) -> None:
        if not items:
            return
        messages = [_as_message(item) for item in items]  # every item is checked before anything is written
        self._start()
        self._archive.append_many(self.session_id, messages)

    def _pop(self) -> TResponseInputItem | None:
        try:
            message = self._archive.pop_message(self.session_id)
        except SessionNotFound:
            return None
        return None if message is None else _as_item(message)

    def _clear(self) -> None:
        with self._lock:
            try:
                self._archive.delete_session(self.session_id)
            except SessionNotFound:
                pass
            self._started = False

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order; with ``limit`` (or ``session_settings.limit``) the latest ``limit``."""
        return await asyncio.to_thread(self._items, resolve_session_limit(limit, self.session_settings))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items``, all or none, in one transaction."""
        await asyncio.to_thread(self._add, items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item; ``None`` when the session is empty."""
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        """Delete every item of this session (and the archived session itself)."""
        await asyncio.to_thread(self._clear)

    def close(self) -> None:
        """Close the archive; idempotent."""
        self._archive.close()


def memory_tools(memory: AgentMemory, names: Iterable[str] = DEFAULT_TOOLS) -> list[FunctionTool]:
    """mnemo's tools ``names`` (default: recall, remember, session_search; any of :meth:`AgentMemory.tools`)
    as Agents SDK ``FunctionTool``\\ s. Each runs :meth:`~mnemo.AgentMemory.handle_tool_call` in a worker
    thread, so the model gets mnemo's own JSON result, refusals included."""
    schemas = {schema["function"]["name"]: schema["function"] for schema in memory.tools()}
    wanted = list(names)
    missing = [name for name in wanted if name not in schemas]
    if missing:
        raise ValueError(f"no mnemo tool named {', '.join(missing)}; available: {', '.join(schemas)}")
    return [_function_tool(memory, schemas[name]) for name in wanted]


def _function_tool(memory: AgentMemory, schema: Mapping[str, Any]) -> FunctionTool:
    name = schema["name"]

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        return await asyncio.to_thread(
            memory.handle_tool_call, name, arguments or "{}", tool_call_id=context.tool_call_id
        )

    return FunctionTool(
        name=name,
        description=schema.get("description", ""),
        params_json_schema=schema.get("parameters", {"type": "object", "properties": {}}),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


__all__ = ["DEFAULT_TOOLS", "MnemoSession", "memory_tools"]
