"""What the UI reads and writes, for one user: mnemo's own objects, opened once and confined to that user.

Every operation is a call into the tier that owns it (the memory graph's recall and edits, the archive's
search and messages, the curated store with its locks, scan and history, :class:`~mnemo.AgentMemory` for
the prompt and the per-turn context, :func:`~mnemo.diagnose`); this module only opens them for the right
scope and keeps them open between requests. A :class:`Workspace` is built for a user id that the
:class:`~mnemo.ui.auth.Gate` vouched for, and every scope it opens carries that user id: there is no call
here that takes a user from a request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..agent import AgentMemory
from ..archive import open_archive
from ..archive.base import Archive
from ..config import Settings
from ..curated.store import TARGETS, MemoryStore
from ..embeddings import named_embedder
from ..graph.recall import RecallResult
from ..graph.store import MemoryGraph
from ..providers.graph import ENRICH_LIMIT
from ..scope import Scope

T = TypeVar("T")


class Home:
    """One mnemo home as the UI serves it: the settings it started with, one memory graph connection and one
    embedder for every user, and a :class:`Workspace` per user, made on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        embedder = named_embedder(settings.graph_embedder, cache_dir=settings.cache_directory)
        self.graph = MemoryGraph(
            settings.database_target, scope=settings.scope, embedder=embedder, scan_threshold=settings.scan_threshold
        )
        self._workspaces: dict[str, Workspace] = {}
        self._lock = threading.Lock()

    def workspace(self, user_id: str) -> Workspace:
        """The :class:`Workspace` of ``user_id``."""
        with self._lock:
            if user_id not in self._workspaces:
                settings = self.settings.model_copy(update={"user_id": user_id})
                self._workspaces[user_id] = Workspace(settings, self.graph)
            return self._workspaces[user_id]

    def close(self) -> None:
        """Close every store and connection this home opened."""
        with self._lock:
            for workspace in self._workspaces.values():
                workspace.close()
            self._workspaces.clear()
        self.graph.close()


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory recall ranked for a message, as the recall debugger shows it: the result, the rank each
    channel gave it (1 = that channel's best; absent when the channel did not propose it), whether the
    per-turn context holds it and, when not, why."""

    result: RecallResult
    position: int
    ranks: dict[str, int]
    in_context: bool
    left_out: str | None


@dataclass(frozen=True, slots=True)
class RecallTrace:
    """The recall debugger's answer: the user message as the model would receive it (with the fenced
    ``<memory-context>`` block), and every candidate recall weighed."""

    message: str
    candidates: tuple[Candidate, ...]
    context_chars: int
    enrich_limit: int


class Workspace:
    """One user's memory: every scope of theirs, their curated pair, their archive."""

    def __init__(self, settings: Settings, graph: MemoryGraph) -> None:
        self.settings = settings
        self.user_id = settings.user_id
        self._graph = graph
        self._archives: dict[Scope, Archive] = {}
        self._lock = threading.Lock()
        self._sessions: dict[Scope, AgentMemory] = {}
        self._agent_lock = threading.Lock()
        self.curated = MemoryStore.from_settings(settings)

    def scope(self, agent_id: str = "", channel_id: str = "") -> Scope:
        """This user's scope for ``agent_id`` and ``channel_id``."""
        return Scope(self.user_id, agent_id, channel_id)

    def scopes(self) -> list[Scope]:
        """This user's scopes that hold memories, and the configured one."""
        found = {scope for scope in self._graph.scopes() if scope.user_id == self.user_id}
        found.add(self.scope(self.settings.agent_id, self.settings.channel_id))
        return sorted(found, key=lambda s: (s.agent_id, s.channel_id))

    def graph(self, scope: Scope) -> MemoryGraph:
        """The memory graph seen from ``scope`` (one of this user's)."""
        self._own(scope)
        return self._graph.with_scope(scope)

    def archive(self, scope: Scope) -> Archive:
        """The session archive seen from ``scope`` (one of this user's), opened on first use."""
        self._own(scope)
        with self._lock:
            if scope not in self._archives:
                self._archives[scope] = open_archive(self.settings.database_target, scope=scope)
            return self._archives[scope]

    def _own(self, scope: Scope) -> None:
        if scope.user_id != self.user_id:
            raise PermissionError("a scope of another user")

    # -- curated ------------------------------------------------------------------------------------

    def curated_entries(self) -> dict[str, tuple[str, ...]]:
        """Both curated targets' entries as they are on disk now."""
        self.curated.load()
        return {target: self.curated.entries(target) for target in TARGETS}

    # -- what a session would see -------------------------------------------------------------------

    def _agent(self, scope: Scope, **overrides: Any) -> AgentMemory:
        """A started :class:`AgentMemory` for ``scope`` that records nothing: no archive session, no
        maintenance pass (as ``mnemo prompt`` opens one)."""
        self._own(scope)
        update = {**scope.as_dict(), "maintenance_interval_hours": 0.0, "archive_enabled": False, **overrides}
        memory = AgentMemory(settings=self.settings.model_copy(update=update))
        memory.start_session("mnemo-ui")
        return memory

    def prompt_blocks(self, scope: Scope) -> list[tuple[str, str]]:
        """The system prompt's blocks a new session in ``scope`` would freeze (from a session opened for
        the purpose: no embedder, since neither the curated blocks nor the bulletin use one)."""

        def blocks() -> list[tuple[str, str]]:
            memory = self._agent(scope, graph_embedder="none", archive_embedder="none")
            try:
                return memory.prompt_blocks()
            finally:
                memory.close()

        return _apart(blocks)

    def trace_recall(self, scope: Scope, message: str, candidates: int = 30) -> RecallTrace:
        """What the model would get for ``message`` in ``scope`` (through the same
        :meth:`AgentMemory.prepare_messages` a turn makes), and the ranked candidates behind it."""
        self._own(scope)

        def trace() -> RecallTrace:
            with self._agent_lock:
                memory = self._session(scope)
                prepared = memory.prepare_messages(message, [])[-1]["content"]
                frozen = {_normal(entry) for target in TARGETS for entry in memory.store.frozen_entries(target)}
            results = self.graph(scope).recall(message, limit=candidates, touch=False) if message.strip() else []
            return RecallTrace(prepared, _weigh(results, prepared, frozen, self.settings.graph_context_chars),
                               self.settings.graph_context_chars, ENRICH_LIMIT)  # fmt: skip

        return _apart(trace)

    def _session(self, scope: Scope) -> AgentMemory:
        """The debugger's session for ``scope``, kept open between requests (opening one loads the model and
        the vectors) and opened afresh once the curated entries differ from those it froze, since the
        per-turn context leaves out whatever the frozen snapshot shows. Called under ``_agent_lock``."""
        current = self.curated_entries()
        memory = self._sessions.get(scope)
        if memory is not None and any(memory.store.frozen_entries(t) != current[t] for t in TARGETS):
            memory.close()
            memory = None
        if memory is None:
            memory = self._sessions[scope] = self._agent(scope)
        return memory

    def close(self) -> None:
        """Close the sessions, archives and curated store this workspace opened."""
        with self._agent_lock:
            for memory in self._sessions.values():
                memory.close()
            self._sessions.clear()
        with self._lock:
            for archive in self._archives.values():
                archive.close()
            self._archives.clear()
        self.curated.close()


def _apart(work: Callable[[], T]) -> T:
    """``work()`` on a thread of its own that is no daemon. A session starts loading its model on threads
    that inherit that, and onnxruntime aborts the whole process if the interpreter exits while a daemon
    thread builds its session (the server's request threads are daemons)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="mnemo-ui-session", daemon=False)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _weigh(results: list[RecallResult], prepared: str, frozen: set[str], budget: int) -> tuple[Candidate, ...]:
    """Each result with its per-channel ranks, and whether the prepared message holds it: the context block
    is the graph provider's own choice; a result it left out is explained by the first of the provider's
    rules that applies (see :meth:`mnemo.providers.graph.GraphProvider.enrich_turn`)."""
    ranks: dict[str, dict[str, int]] = {}
    for channel in {name for r in results for name in r.channels}:
        ordered = sorted((r for r in results if channel in r.channels), key=lambda r: -r.channels[channel])
        for rank, result in enumerate(ordered, 1):
            ranks.setdefault(result.memory.id, {})[channel] = rank
    weighed, shown = [], 0
    for position, result in enumerate(results, 1):
        inside = result.memory.content in prepared
        reason = None
        if inside:
            shown += 1
        elif _normal(result.memory.content) in frozen:
            reason = "already in the system prompt (curated snapshot)"
        elif shown >= ENRICH_LIMIT:
            reason = f"the block was full: at most {ENRICH_LIMIT} memories per turn"
        else:
            reason = f"did not fit the {budget:,}-character budget left"
        weighed.append(Candidate(result, position, ranks.get(result.memory.id, {}), inside, reason))
    return tuple(weighed)
