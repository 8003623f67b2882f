"""AgentMemory: the one object an agent loop holds.

It wires the curated store, the provider registry and the ``memory`` tool together and maps each agent
event to one call (see the agent-loop contract in the architecture notes)::

    with AgentMemory.open("session-42", home="~/.mnemo") as memory:
        system = memory.system_prompt()            # frozen for the whole session
        tools = memory.tools()                     # OpenAI function schemas
        api_messages = memory.prepare_messages(user_message, history)
        result = memory.handle_tool_call(name, arguments)
        memory.report_untrusted(page_text, source="fetch")   # what a tool of the host's own returned
        memory.turn_complete(user_message, reply)
        memory.switch_session(new_id, parent=memory.session_key)   # e.g. after compression
        memory.end_session(messages)               # a real session boundary (close() ends it too)

The session archive and the memory graph are providers like any other; they are registered first
unless disabled in the settings. Every write is stamped with its provenance; after untrusted content the
model's writes wait for the user's review (``review_list`` / ``review_approve``: see :mod:`mnemo.review`).

Why one module past 600 lines: it is the agent-loop contract, one method per agent event sharing one
session's state and lock; the typed API (:mod:`mnemo.agent_api`) and the tools already live apart.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._db import DatabaseError
from .agent_api import TypedMemoryAPI, async_twin
from .config import Settings, load_settings
from .curated import TARGETS
from .curated.entries import entry_id, joined_length
from .curated.errors import BlockedContent, MemoryOpError
from .curated.ops import Add, MemoryOp, MemoryOpOutcome, Replace
from .curated.store import check_target
from .degraded import Degradation
from .embeddings import named_embedder
from .errors import InvalidArgument, MnemoError, StorageUnavailable, TierUnavailable, excerpt
from .graph.review import ReviewItem, WriteKind
from .provenance import Origin, Provenance
from .providers import (
    ArchiveProvider,
    GraphProvider,
    MemoryProvider,
    ProviderCapabilities,
    ProviderError,
    ProviderRegistry,
)
from .providers.configuration import session_configs
from .providers.discovery import PluginProblem, load_enabled
from .providers.registry import message_text
from .review import curated_payload
from .safety import build_memory_context_block, inject_memory_context, render_sections, scan
from .safety.scan import finding_labels
from .safety.warm import preload as preload_safety
from .storage import open_curated
from .taint import TaintTracker
from .tools._json import failure, refusal, unavailable_result
from .tools.graph import held_result
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
    :meth:`AgentMemory.end_session` (until :meth:`AgentMemory.switch_session`) or
    :meth:`AgentMemory.close`, or a second ``start_session`` on the same object."""


class AgentMemory(TypedMemoryAPI):
    """Memory for one agent session: curated blocks, providers, tools and per-turn context.

    ``home`` and ``**settings`` override ``MNEMO_HOME/config.toml`` and the environment (see
    :mod:`mnemo.config`); ``user_id``, ``agent_id`` and ``channel_id`` set whose memory this is (see
    :mod:`mnemo.scope`). ``providers`` are extra :class:`~mnemo.providers.MemoryProvider` objects,
    registered after the built-in archive and graph; then come the plug-ins enabled in ``config.toml``
    (see :mod:`mnemo.providers.discovery`), and those that could not load are in
    :attr:`plugin_problems`. Calls from several threads are safe.

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
        preload_safety()  # the session will scan and fence text soon: compile the patterns while it opens
        self.store = open_curated(self.settings)
        self.registry = ProviderRegistry(
            enrich_timeout=self.settings.enrich_timeout,
            compress_timeout=self.settings.compress_timeout,
            shutdown_timeout=self.settings.shutdown_timeout,
        )
        # What entered the model's context this session, and so whose its writes are (see mnemo.taint).
        self.taint = TaintTracker(self.settings.trusted_tools)
        self.model_origin = Origin.MODEL  # the origin of the model's untainted writes (mnemo serve: an MCP client's)
        self._awaiting_review = 0
        self._builtin = self._builtin_providers()
        for provider in (*self._builtin, *providers):
            self.registry.register(provider)
        self.plugin_problems: tuple[PluginProblem, ...] = tuple(self._register_plugins())
        self._lock = threading.RLock()
        self._session_key: str | None = None
        self._system_prompt: str | None = None
        self._closed = False
        self._ended = False
        self._turn_number = 0
        self._degraded: tuple[Degradation, ...] = ()
        self._unavailable: dict[str, tuple[Degradation, Mapping[str, Any]]] = {}

    @classmethod
    def open(cls, session_key: str, home: str | os.PathLike[str] | None = None, **kwargs: Any) -> AgentMemory:
        """Construct and :meth:`start_session` in one call; ``kwargs`` as for the constructor, e.g.
        ``AgentMemory.open("s1", user_id="alice", agent_id="support")``.

        Raises :class:`~mnemo.errors.StorageUnavailable` if mnemo's database cannot be opened, unless
        the ``allow_degraded`` setting is on (see :mod:`mnemo.degraded` and :attr:`degraded`).
        """
        memory = cls(home, **kwargs)
        try:
            memory.start_session(session_key)
        except BaseException:
            memory.close()
            raise
        return memory

    def _builtin_providers(self) -> list[MemoryProvider]:
        # One model per name, shared by the archive and the graph: it is loaded once, on first use.
        cache = self.settings.cache_directory
        models = {name: named_embedder(name, cache_dir=cache) for name in {self.settings.archive_embedder, self.settings.graph_embedder}}
        archive = None
        if self.settings.archive_enabled:
            archive = ArchiveProvider(
                self.settings.database_target, embedder=models[self.settings.archive_embedder], scope=self.settings.scope
            )
        if not self.settings.graph_enabled:
            return [archive] if archive is not None else []
        # The graph draws on the archive: one recall over memories and earlier sessions, and extraction
        # from the archive's record of each session once it is over.
        graph = GraphProvider.from_settings(
            self.settings, frozen_entries=self._frozen_entries, embedder=models[self.settings.graph_embedder], archive=archive
        )
        graph.gate = dataclasses.replace(graph.gate, provenance=self._write_provenance, mirrored=self._mirrored_provenance)
        return [archive, graph] if archive is not None else [graph]

    def _register_plugins(self) -> list[PluginProblem]:
        """Register the plug-ins enabled in ``config.toml``; return why each of the others could not be."""
        plugins, problems = load_enabled(self.settings.providers, skip={name for name, _ in self.registry.registered})
        for plugin in plugins:
            try:
                self.registry.register(plugin)
            except (TypeError, ProviderError) as exc:
                problem = PluginProblem(plugin.name, str(exc))
                log.error("%s", problem)
                problems.append(problem)
        return problems

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
            self.taint.reset(session_key)
            configs = session_configs(self.registry.registered, self.settings.providers, home=self.settings.home)
            # Every provider serves this session's scope: a table cannot move one to another user's memory
            # (a gateway opening one AgentMemory per user must not find them all under one provider peer).
            # The home too: where a provider keeps files of its own (Mem0's local store).
            session = {**self.settings.scope.as_dict(), "home": str(self.settings.home)}
            configs = {
                name: {**config, **session} if isinstance(config, dict) else config for name, config in configs.items()
            }
            self.registry.initialize_all(session_key, configs)
            self._take_stock()
            self._count_awaiting_review()
            # After the providers started: the graph's bulletin is part of the frozen prompt.
            self._system_prompt = "\n\n".join(text for _, text in self.prompt_blocks())

    def _take_stock(self) -> None:
        """Refuse to run without mnemo's own storage, unless allowed; else note what is missing."""
        failures = self.registry.failures
        builtin = {provider.name: provider for provider in self._builtin}
        storage = [Degradation(name, reason) for name, reason in failures.items() if name in builtin]
        if storage and not self.settings.allow_degraded:
            raise StorageUnavailable(storage)
        curated = [
            Degradation(f"curated:{target}", str(problem))
            for target in TARGETS
            if (problem := self.store.read_failure(target)) is not None
        ]
        others = [Degradation(name, reason) for name, reason in failures.items() if name not in builtin]
        others += [Degradation(problem.name, problem.reason) for problem in self.plugin_problems]
        self._degraded = (*storage, *curated, *others)
        for degradation in storage:
            declared = ProviderCapabilities.from_declared(builtin[degradation.component].capabilities())
            for schema in declared.tool_schemas:
                self._unavailable[schema["function"]["name"]] = (degradation, schema)
        for degradation in self._degraded:
            log.error("memory degraded: %s", degradation)

    def _count_awaiting_review(self) -> None:
        try:
            queue = self._review_queue()
            queue.expire()
            self._awaiting_review = queue.pending_count()
        except (TierUnavailable, MnemoError, DatabaseError) as exc:
            log.warning("review: could not count the writes awaiting review: %s", exc)
            self._awaiting_review = 0
        if self._awaiting_review:
            log.info("%d memory write(s) await the user's review (mnemo review list)", self._awaiting_review)

    @property
    def awaiting_review(self) -> int:
        """How many writes awaited the user's review when this session started (see :meth:`review_list`)."""
        return self._awaiting_review

    @property
    def degraded(self) -> tuple[Degradation, ...]:
        """What is not working this session and why (empty when all is well); see :mod:`mnemo.degraded`."""
        return self._degraded

    def prompt_blocks(self) -> list[tuple[str, str]]:
        """The system prompt's blocks by name, non-empty ones only: the frozen curated ``memory`` and
        ``user`` snapshots, then the graph's ``bulletin`` (rendered when the session started)."""
        graph = next((p for p in self.registry.providers if isinstance(p, GraphProvider)), None)
        blocks = [
            ("memory", self.store.render_snapshot("memory")),
            ("user", self.store.render_snapshot("user")),
            ("bulletin", graph.bulletin() if graph is not None else ""),
        ]
        return [(name, text) for name, text in blocks if text]

    def switch_session(
        self, new_session_id: str, *, parent: str | None = None, reset: bool = False, rewound: bool = False
    ) -> None:
        """Continue under ``new_session_id``: a resume, a branch, a reset, or the continuation a
        compression starts (``parent=memory.session_key``).

        Providers re-key their per-session state after delivering the old session's pending events
        (the archive records ``parent`` as the new session's parent); a prefetch for the old session is
        dropped. The system prompt is re-frozen from the curated files only when ``reset`` is true, so a
        continuation keeps its prompt cache. ``rewound`` tells providers the history was rolled back.
        Also starts the next session after :meth:`end_session`. Waits for providers up to
        ``enrich_timeout``.
        """
        if not isinstance(new_session_id, str) or not new_session_id.strip():
            raise InvalidArgument("new_session_id", "must be a non-empty string")
        if parent is not None and (not isinstance(parent, str) or not parent.strip()):
            raise InvalidArgument("parent", "must be a non-empty string or None")
        for flag, value in (("reset", reset), ("rewound", rewound)):
            if not isinstance(value, bool):
                raise InvalidArgument(flag, f"must be a bool, got {type(value).__name__}")
        with self._lock:
            if self._session_key is None or self._closed:
                self._require_session()
            if new_session_id == self._session_key and not self._ended:
                raise InvalidArgument("new_session_id", f"{new_session_id!r} is already the current session")
            if reset:
                self.store.load()  # before the providers hear of it: the graph reads the new snapshot
            if reset or self._ended:
                self.taint.reset(new_session_id)
            else:  # a continuation: the model's context still holds what it read
                self.taint.rekey(new_session_id)
            self.registry.on_session_switch(new_session_id, parent, reset, rewound)
            if reset:
                # After them: the graph renders a fresh bulletin for a fresh conversation.
                self._system_prompt = "\n\n".join(text for _, text in self.prompt_blocks())
            self._session_key = new_session_id
            self._ended = False
            self._turn_number = 0

    def end_session(self, messages: Sequence[Mapping[str, Any]] = ()) -> None:
        """A real session boundary: providers get ``messages`` (the session's, if the host has them)
        after their pending events, and the archive marks the session ended. Waits for providers up to
        ``compress_timeout``. Afterwards only :meth:`switch_session` (to start the next session) and
        :meth:`close` are accepted; ending an ended session does nothing."""
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("messages", f"must be a list of messages, got {type(messages).__name__}")
        with self._lock:
            if self._ended and not self._closed:
                return
            self._require_session()
            self._ended = True
            self.registry.on_session_end(messages)

    def _frozen_entries(self) -> tuple[str, ...]:
        """Entries already in the frozen prompt, so providers need not repeat them per turn."""
        return self.store.frozen_entries("memory") + self.store.frozen_entries("user")

    def _require_session(self) -> None:
        if self._closed:
            raise SessionStateError("this AgentMemory is closed")
        if self._session_key is None:
            raise SessionStateError("call start_session() first")
        if self._ended:
            raise SessionStateError(f"session {self._session_key!r} has ended; switch_session() to start another")

    def system_prompt(self) -> str:
        """The frozen curated blocks and the graph's bulletin; byte-identical for the whole session ("" when
        memory is empty)."""
        self._require_session()
        assert self._system_prompt is not None
        return self._system_prompt

    def tools(self) -> list[dict[str, Any]]:
        """``memory`` plus every active provider's tools, in OpenAI function format."""
        unavailable = [schema for _, schema in self._unavailable.values()]
        return [json.loads(json.dumps(schema)) for schema in (MEMORY_TOOL_SCHEMA, *unavailable)] + self.registry.tool_schemas()

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
        with self._lock:
            self._turn_number += 1
            turn_number = self._turn_number
        self.taint.user_said(user_message, turn=turn_number)
        self.registry.on_turn_start(turn_number, user_message)
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

    def turn_context(self, user_message: str) -> str:
        """The providers' context for a turn about ``user_message`` (served from a prefetch when one is
        ready), sanitised but not fenced: for hosts that fence recalled context themselves and add it to
        the message on their own (Hermes Agent does). ``""`` when there is none. Unlike
        :meth:`prepare_messages` it does not start a turn."""
        self._require_session()
        if not isinstance(user_message, str):
            raise InvalidArgument("user_message", f"must be a string, got {type(user_message).__name__}")
        self.taint.user_said(user_message)
        return render_sections(self.registry.enrich_turn(user_message, ({"role": "user", "content": user_message},)))

    def queue_prefetch(self, query: str) -> None:
        """Start the providers' lookup for the next turn with ``query``, in the background
        (:meth:`turn_complete` already does this with the turn's user message)."""
        self._require_session()
        if not isinstance(query, str):
            raise InvalidArgument("query", f"must be a string, got {type(query).__name__}")
        self.registry.prefetch(query)

    def report_untrusted(self, content: str, *, source: str, kind: str = "tool") -> bool:
        """Tell mnemo that untrusted ``content`` entered the model's context: a tool's result (``source``
        is the tool's name), a retrieved ``"document"``, a ``"delegation"``'s result, a ``"page"``...

        From the first untrusted content on, the model's writes in this session are tainted and held for
        the user's review, unless what they save is what the user said. A tool named in the
        ``trusted_tools`` setting does not taint. Returns whether this content tainted the session.
        """
        self._require_session()
        for field_name, value in (("content", content), ("source", source), ("kind", kind)):
            if not isinstance(value, str):
                raise InvalidArgument(field_name, f"must be a string, got {type(value).__name__}")
        if not source.strip():
            raise InvalidArgument("source", "must name the tool or source the content came from")
        return self.taint.exposed(source.strip(), content, kind.strip() or "tool")

    def _write_provenance(self, content: str, via: str) -> Provenance:
        return self.taint.provenance(content, via=via, model=self.model_origin)

    def _mirrored_provenance(self, target: str, content: str) -> Provenance:
        recorded = self.store.provenance_of(target, content)
        return recorded if recorded.origin is not Origin.UNKNOWN else self._write_provenance(content, "mirror")

    def mirror_curated_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Tell the providers about a write to curated memory that another system made (a host's own
        ``memory`` tool), as if this object's ``memory`` tool had made it: the graph mirrors it, scanned.
        In the background; nothing is written to the curated files."""
        self._require_session()
        if action not in ("add", "replace", "remove"):
            raise InvalidArgument("action", f"must be 'add', 'replace' or 'remove', got {excerpt(action)}")
        check_target(target)
        for field_name, value in (("content", content), ("old_text", old_text)):
            if value is not None and not isinstance(value, str):
                raise InvalidArgument(field_name, f"must be a string, got {type(value).__name__}")
        self.registry.on_memory_write(action, target, content, old_text)

    def handle_tool_call(self, name: str, arguments: Any, *, tool_call_id: str | None = None) -> str:
        """Run tool ``name`` (``memory`` or a provider's); ``arguments`` is a dict or JSON string.

        Always returns a JSON string, whatever the arguments: a refusal names the field at fault and
        changes nothing. ``tool_call_id`` (the model's id for the call) is kept in the curated history of
        what the call changed.
        """
        self._require_session()
        try:
            return self._handle_tool_call(name, arguments, tool_call_id)
        except Exception as exc:  # noqa: BLE001 - the model must get an answer, never an exception
            log.exception("tool %s failed unexpectedly", excerpt(name))
            return failure(f"tool {excerpt(name)} failed: {type(exc).__name__} (see the log)")

    def _handle_tool_call(self, name: str, arguments: Any, tool_call_id: str | None) -> str:
        if name in self._unavailable:
            return unavailable_result(name, self._unavailable[name][0])
        if name != _TOOL_NAME:
            return self.registry.handle_tool_call(name, arguments)
        try:
            call = parse_memory_call(arguments)
        except InvalidArgument as exc:
            return refusal(exc)
        if call.history:
            return memory_history_result(self.store, call.target)
        try:
            outcome = self._model_edit(call, {"via": "tool", "tool_call_id": tool_call_id})
        except TierUnavailable:
            return failure("not saved: it needs the user's review, and the review queue (the graph) is unavailable")
        except (InvalidArgument, MemoryOpError) as exc:
            return memory_refusal(self.store, call, exc)
        return held_result(outcome) if isinstance(outcome, ReviewItem) else memory_result(outcome)

    def _model_edit(self, call: MemoryCall, origin: dict[str, Any]) -> MemoryOpOutcome | ReviewItem:
        """A curated edit the model asked for (the ``memory`` tool, Anthropic's memory tool): applied with
        its provenance, or held for review (see :mod:`mnemo.review`) when that is untrusted; raises
        :class:`~mnemo.errors.TierUnavailable` when it must be held and there is no queue."""
        written = "\n".join(op.content for op in call.operations if isinstance(op, (Add, Replace)))
        provenance = self._write_provenance(written, origin["via"])
        if provenance.untrusted and self.settings.quarantine:
            return self._hold_curated(call, provenance)
        try:
            return self._edit_curated(call, {**origin, "provenance": provenance.as_dict()})
        except BlockedContent as exc:
            if provenance.origin is not Origin.USER:
                raise
            # The user's own words, flagged all the same: the user decides, not the scan.
            return self._hold_curated(call, provenance, finding_labels(exc.findings))

    def _hold_curated(
        self, call: MemoryCall, provenance: Provenance, findings: Sequence[Mapping[str, Any]] = ()
    ) -> ReviewItem:
        payload = curated_payload(call.target, call.operations)
        return self._review_queue().submit(WriteKind.CURATED, payload, provenance, findings)

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
            findings = scan(getattr(op, "content", "") or "", threshold=self.settings.scan_threshold)
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

        Providers that prefetch then start looking up context for the next turn with ``user_message``,
        in the background. ``messages``, if given, is the whole turn as stored (user message, assistant tool calls, tool
        results, final reply): the session archive then keeps all of it, not just the two texts.
        """
        self._require_session()
        self.taint.user_said(user_message)
        archive = next((p for p in self.registry.providers if isinstance(p, ArchiveProvider)), None)
        if archive is not None and self.taint.tainted:
            # The model's words after it read untrusted content are archived marked as such (in the message's
            # extra fields), so what recalls archived messages can leave them out like any tainted write.
            turn = messages if messages is not None else (
                {"role": "user", "content": user_message}, {"role": "assistant", "content": assistant_response}
            )  # fmt: skip
            said = self._write_provenance("", "reply").as_dict(excerpt=False)
            messages = [{**m, "provenance": said} if m.get("role") == "assistant" else dict(m) for m in turn]
        if messages is not None and archive is not None:
            try:
                archive.record_messages(None, messages)
            except MnemoError as exc:
                log.warning("archive: could not record the full turn (%s); keeping the reply only", exc)
        self.registry.on_turn_complete(user_message, assistant_response)
        self.registry.prefetch(user_message)

    def before_compress(
        self, messages: Sequence[Mapping[str, Any]], compression_count: int, *, fenced: bool = True
    ) -> str:
        """Last look for providers at messages about to be discarded; blocks up to ``compress_timeout``.

        Returns what the providers extracted (the graph: the memories it kept), sanitised and fenced as
        one memory-context block (``""`` when none returned text), for the host's summariser to keep;
        with ``fenced=False`` the same sections without the fence.
        """
        self._require_session()
        sections = self.registry.on_compress(messages, compression_count)
        return build_memory_context_block(sections) if fenced else render_sections(sections)

    def delegation_complete(self, task: str, result: str, child_session_id: str = "") -> None:
        """A subagent finished ``task`` with ``result``: providers hear of it in the background (the
        archive keeps the pair in this session, the graph holds it for the user's review: another agent
        wrote it). The result taints this session (see :meth:`report_untrusted`). ``child_session_id`` is
        the subagent's own session, if it has one."""
        for field_name, value in (("task", task), ("result", result), ("child_session_id", child_session_id)):
            if not isinstance(value, str):
                raise InvalidArgument(field_name, f"must be a string, got {type(value).__name__}")
        if not task.strip():
            raise InvalidArgument("task", "must not be empty")
        self._require_session()
        self.taint.exposed(child_session_id or "delegation", result, "delegation")
        self.registry.on_delegation(task, result, child_session_id)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """End the session if one is open (see :meth:`end_session`), then flush and shut down every
        provider within ``shutdown_timeout``; idempotent."""
        with self._lock:
            open_session = self._session_key is not None and not self._ended and not self._closed
            self._closed = True
            self._ended = True
            if open_session:
                self.registry.on_session_end(())
        self.registry.shutdown_all()
        self.store.close()

    aswitch_session = async_twin(switch_session)
    aend_session = async_twin(end_session)
    abefore_compress = async_twin(before_compress)
    adelegation_complete = async_twin(delegation_complete)
    aturn_complete = async_twin(turn_complete)
    aclose = async_twin(close)

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
