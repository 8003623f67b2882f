"""AgentMemory: the one object an agent loop holds.

It wires the curated store, the provider registry and the ``memory`` tool together and maps each agent
event to one call (see the agent-loop contract in the architecture notes)::

    with AgentMemory.open("session-42", home="~/.mnemo") as memory:
        system = memory.system_prompt()            # frozen for the whole session
        tools = memory.tools()                     # OpenAI function schemas
        api_messages = memory.prepare_messages(user_message, history)
        result = memory.handle_tool_call(name, arguments)
        memory.turn_complete(user_message, reply)

The session archive and the memory graph are providers like any other; they are registered first
unless disabled in the settings.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .agent_api import TypedMemoryAPI, async_twin
from .config import Settings, load_settings
from .curated import MemoryStore
from .curated.entries import entry_id, joined_length
from .curated.errors import BlockedContent, MemoryOpError
from .curated.ops import MemoryOp, MemoryOpOutcome
from .curated.store import check_target
from .database import check_owned
from .embeddings import named_embedder
from .errors import InvalidArgument, MnemoError
from .providers import ArchiveProvider, GraphProvider, MemoryProvider, ProviderRegistry
from .providers.registry import message_text
from .safety import build_memory_context_block, inject_memory_context, scan
from .tools._json import failure
from .tools.memory import (
    MEMORY_TOOL_SCHEMA,
    MemoryCall,
    apply_memory_call,
    memory_history_result,
    memory_refusal,
    memory_result,
    parse_memory_call,
)

log = logging.getLogger("mnemo.agent")

_TOOL_NAME = MEMORY_TOOL_SCHEMA["function"]["name"]


class SessionStateError(MnemoError, RuntimeError):
    """A call made in the wrong session state: before :meth:`AgentMemory.start_session`, after
    :meth:`AgentMemory.close`, or a second ``start_session`` on the same object."""


class AgentMemory(TypedMemoryAPI):
    """Memory for one agent session: curated blocks, providers, tools and per-turn context.

    ``home`` and ``**settings`` override ``MNEMO_HOME/config.toml`` and the environment (see
    :mod:`mnemo.config`); ``user_id``, ``agent_id`` and ``channel_id`` set whose memory this is (see
    :mod:`mnemo.scope`). ``providers`` are extra :class:`~mnemo.providers.MemoryProvider` objects,
    registered after the built-in archive and graph. Calls from several threads are safe.

    Besides the agent-loop calls, the typed API (``remember``, ``recall``, ``forget``, ``relate``,
    ``search_sessions``, ``curated_edit`` and their ``a``-prefixed async twins) is documented in
    :mod:`mnemo.agent_api`.
    """

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        providers: Iterable[MemoryProvider] = (),
        settings: Settings | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        channel_id: str | None = None,
        **overrides: Any,
    ) -> None:
        scope = {"user_id": user_id, "agent_id": agent_id, "channel_id": channel_id}
        overrides.update({name: value for name, value in scope.items() if value is not None})
        if settings is not None and overrides:
            raise InvalidArgument("settings", "give either a Settings object or keyword settings, not both")
        self.settings = settings if settings is not None else load_settings(home, **overrides)
        self.store = MemoryStore.from_settings(self.settings)
        self.registry = ProviderRegistry(
            enrich_timeout=self.settings.enrich_timeout,
            compress_timeout=self.settings.compress_timeout,
            shutdown_timeout=self.settings.shutdown_timeout,
        )
        for provider in (*self._builtin_providers(), *providers):
            self.registry.register(provider)
        self._lock = threading.RLock()
        self._session_key: str | None = None
        self._system_prompt: str | None = None
        self._closed = False

    @classmethod
    def open(cls, session_key: str, home: str | os.PathLike[str] | None = None, **kwargs: Any) -> AgentMemory:
        """Construct and :meth:`start_session` in one call; ``kwargs`` as for the constructor, e.g.
        ``AgentMemory.open("s1", user_id="alice", agent_id="support")``."""
        memory = cls(home, **kwargs)
        try:
            memory.start_session(session_key)
        except BaseException:
            memory.close()
            raise
        return memory

    def _builtin_providers(self) -> list[MemoryProvider]:
        # One model per name, shared by the archive and the graph: it is loaded once, on first use.
        models = {name: named_embedder(name) for name in {self.settings.archive_embedder, self.settings.graph_embedder}}
        builtin: list[MemoryProvider] = []
        if self.settings.archive_enabled or self.settings.graph_enabled:
            # A foreign or newer database stops the session here, with its typed error, rather than
            # leaving the agent to run without its archive and graph.
            check_owned(self.settings.database_path)
        if self.settings.archive_enabled:
            builtin.append(
                ArchiveProvider(
                    self.settings.database_path,
                    embedder=models[self.settings.archive_embedder],
                    scope=self.settings.scope,
                )
            )
        if self.settings.graph_enabled:
            builtin.append(
                GraphProvider.from_settings(
                    self.settings,
                    frozen_entries=self._frozen_entries,
                    embedder=models[self.settings.graph_embedder],
                )
            )
        return builtin

    # -- session ------------------------------------------------------------------------------

    @property
    def session_key(self) -> str | None:
        """The current session's key, or None before :meth:`start_session`."""
        return self._session_key

    def start_session(self, session_key: str) -> None:
        """Load the curated store (freezing the snapshot) and initialize the providers, in order."""
        if not isinstance(session_key, str) or not session_key.strip():
            raise InvalidArgument("session_key", "must be a non-empty string")
        with self._lock:
            if self._closed:
                raise SessionStateError("this AgentMemory is closed")
            if self._session_key is not None:
                raise SessionStateError(f"session {self._session_key!r} already started; use a new AgentMemory")
            self.store.load()
            self._session_key = session_key
            self._system_prompt = "\n\n".join(
                block for block in (self.store.render_snapshot("memory"), self.store.render_snapshot("user")) if block
            )
            self.registry.initialize_all(session_key, self.settings.providers)

    def _frozen_entries(self) -> tuple[str, ...]:
        """Entries already in the frozen prompt, so providers need not repeat them per turn."""
        return self.store.frozen_entries("memory") + self.store.frozen_entries("user")

    def _require_session(self) -> None:
        if self._session_key is None or self._closed:
            raise SessionStateError("call start_session() first" if not self._closed else "this AgentMemory is closed")

    def system_prompt(self) -> str:
        """The frozen curated blocks; byte-identical for the whole session ("" when memory is empty)."""
        self._require_session()
        assert self._system_prompt is not None
        return self._system_prompt

    def tools(self) -> list[dict[str, Any]]:
        """``memory`` plus every active provider's tools, in OpenAI function format."""
        return [json.loads(json.dumps(MEMORY_TOOL_SCHEMA)), *self.registry.tool_schemas()]

    # -- turns --------------------------------------------------------------------------------

    def prepare_messages(self, user_message: str, history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The message list for this turn's API call: a copy of ``history`` that ends with the current
        user message, which alone carries the providers' fenced context.

        ``history`` may already end with the current message (a last item with role ``user`` whose text is
        exactly ``user_message``; for multipart content, its text parts joined by newlines): that item is the one that carries the context. Otherwise the current
        message is appended to the copy as ``{"role": "user", "content": user_message}`` and carries it.
        An earlier user message never does. ``history`` itself is never modified.
        """
        self._require_session()
        if not isinstance(user_message, str):
            raise InvalidArgument("user_message", f"must be a string, got {type(user_message).__name__}")
        self.store.new_turn()
        api_messages = [dict(message) for message in history]
        last = api_messages[-1] if api_messages else None
        if last is None or last.get("role") != "user" or message_text(last.get("content")) != user_message:
            api_messages.append({"role": "user", "content": user_message})
        block = build_memory_context_block(self.registry.enrich_turn(user_message, api_messages))
        if block:
            # A new dict: the providers were handed the list's messages, and a late one may still read them.
            current = api_messages[-1]
            api_messages[-1] = {**current, "content": inject_memory_context(current["content"], block)}
        return api_messages

    def handle_tool_call(self, name: str, arguments: Any, *, tool_call_id: str | None = None) -> str:
        """Run tool ``name`` (``memory`` or a provider's); ``arguments`` is a dict or JSON string. Returns JSON.
        ``tool_call_id`` (the model's id for the call) is kept in the curated history of what it changed."""
        self._require_session()
        if name != _TOOL_NAME:
            return self.registry.handle_tool_call(name, arguments)
        try:
            call = parse_memory_call(arguments)
        except InvalidArgument as exc:
            return failure(f"invalid argument {exc.field}: {exc.problem}", field=exc.field)
        if call.history:
            return memory_history_result(self.store, call.target)
        try:
            outcome = self._edit_curated(call, {"via": "tool", "tool_call_id": tool_call_id})
        except (InvalidArgument, MemoryOpError) as exc:
            return memory_refusal(self.store, call, exc)
        return memory_result(outcome)

    def _edit_curated(self, call: MemoryCall, origin: dict[str, Any]) -> MemoryOpOutcome:
        """Apply a curated edit (the ``memory`` tool and :meth:`curated_edit` both come here) and mirror
        each accepted operation to the providers."""
        self._require_session()
        before = self.store.entries(check_target(call.target))
        if self.registry.suppresses_local_writes(call.target):
            outcome = self._delegated_write(call)
        else:
            origin = {k: v for k, v in {**origin, "session_id": self._session_key}.items() if v is not None}
            outcome = apply_memory_call(self.store, call, origin=origin)
        for op in call.operations:
            self.registry.on_memory_write(op.action, call.target, getattr(op, "content", ""), _old_text(op, before))
        return outcome

    def _delegated_write(self, call: MemoryCall) -> MemoryOpOutcome:
        # A provider owns this target's storage; the local file stays untouched, but the content is
        # scanned all the same, since the provider may feed it back into a prompt.
        target = check_target(call.target)
        entries = self.store.entries(target)
        for op in call.operations:
            findings = scan(getattr(op, "content", "") or "")
            if findings:
                raise BlockedContent(findings, target=target, current_entries=entries, char_limit=self.store.char_limit(target))
        return MemoryOpOutcome(
            target=target,
            message=f"{len(call.operations)} operation(s) handed to the memory provider for {target!r}",
            entry_count=len(entries),
            used_chars=joined_length(entries),
            char_limit=self.store.char_limit(target),
            entries=entries,
        )

    aprepare_messages = async_twin(prepare_messages)
    ahandle_tool_call = async_twin(handle_tool_call)

    def turn_complete(
        self, user_message: str, assistant_response: str, *, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> None:
        """Tell providers a turn succeeded (fire-and-forget); pass the un-enriched user message.

        ``messages``, if given, is the whole turn as stored (user message, assistant tool calls, tool
        results, final reply): the session archive then keeps all of it, not just the two texts.
        """
        self._require_session()
        archive = next((p for p in self.registry.providers if isinstance(p, ArchiveProvider)), None)
        if messages is not None and archive is not None:
            try:
                archive.record_messages(None, messages)
            except MnemoError as exc:
                log.warning("archive: could not record the full turn (%s); keeping the reply only", exc)
        self.registry.on_turn_complete(user_message, assistant_response)

    def before_compress(self, messages: Sequence[Mapping[str, Any]], compression_count: int) -> None:
        """Last look for providers at messages about to be discarded; blocks up to ``compress_timeout``."""
        self._require_session()
        self.registry.on_compress(messages, compression_count)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and shut down every provider within ``shutdown_timeout``; idempotent."""
        with self._lock:
            self._closed = True
        self.registry.shutdown_all()

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _old_text(op: MemoryOp, before: Sequence[str]) -> str | None:
    """The text an edit aimed at, for providers mirroring it: the entry its id named, else its old_text."""
    wanted = getattr(op, "entry_id", None)
    if wanted is not None:
        return next((entry for entry in before if entry_id(entry) == wanted.strip().lower()), None)
    return getattr(op, "old_text", None)
