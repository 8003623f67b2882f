"""What the UI reads and writes, for one user: mnemo's own objects, opened once and confined to that user.

Every operation is a call into the tier that owns it (the memory graph's recall and edits, the archive's
search and messages, the curated store with its locks, scan and history, :class:`~mnemo.AgentMemory` for
the prompt, :mod:`mnemo.recollection` for the per-turn context, :func:`~mnemo.diagnose`); this module only
opens them for the right scope and keeps them open between requests. A :class:`Workspace` is built for a user id that the
:class:`~mnemo.ui.auth.Gate` vouched for, and every scope it opens carries that user id: there is no call
here that takes a user from a request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..agent import AgentMemory
from ..archive.base import Archive
from ..config import Settings
from ..curated.store import TARGETS
from ..embeddings import named_embedder
from ..embeddings.protocol import Embedder
from ..graph.recall import RecallResult
from ..graph.recalled import MAX_RECALL_LIMIT, RecalledMemory
from ..graph.review import ReviewQueue
from ..graph.store import MemoryGraph
from ..providers.graph import ENRICH_LIMIT
from ..recollection import Recalled, comparable, render_context, turn_context
from ..safety.fence import build_memory_context_block, inject_memory_context
from ..scope import Scope
from ..storage import open_archive, open_curated, open_graph

T = TypeVar("T")


class Home:
    """One mnemo home as the UI serves it: the settings it started with, one memory graph connection and one
    embedder for every user, and a :class:`Workspace` per user, made on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # One model per name, shared by the graph and every archive, as an agent session shares it.
        names = {settings.graph_embedder, settings.archive_embedder}
        self.embedders = {name: named_embedder(name, cache_dir=settings.cache_directory) for name in names}
        self.graph = open_graph(
            settings.database_target,
            scope=settings.scope,
            embedder=self.embedders[settings.graph_embedder],
            scan_threshold=settings.scan_threshold,
        )
        self._workspaces: dict[str, Workspace] = {}
        self._lock = threading.Lock()

    def workspace(self, user_id: str) -> Workspace:
        """The :class:`Workspace` of ``user_id``."""
        with self._lock:
            if user_id not in self._workspaces:
                settings = self.settings.model_copy(update={"user_id": user_id})
                self._workspaces[user_id] = Workspace(settings, self.graph, self.embedders[settings.archive_embedder])
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
    """One thing recall ranked for a message, as the recall debugger shows it: the memory or archived message
    (``item``), its place in the merged ranking, for a memory the graph's result with each channel's signal
    and the rank each channel gave it (1 = that channel's best), whether the per-turn context holds it and,
    when not, why."""

    item: Recalled
    position: int
    result: RecallResult | None
    ranks: dict[str, int]
    in_context: bool
    left_out: str | None


@dataclass(frozen=True, slots=True)
class RecallTrace:
    """The recall debugger's answer: the user message as the model would receive it on a new session's
    first turn (with the fenced ``<memory-context>`` block), and every candidate recall weighed."""

    message: str
    candidates: tuple[Candidate, ...]
    context_chars: int
    enrich_limit: int


class Workspace:
    """One user's memory: every scope of theirs, their curated pair, their archive."""

    def __init__(self, settings: Settings, graph: MemoryGraph, archive_embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.user_id = settings.user_id
        self._graph = graph
        self._archive_embedder = archive_embedder
        self._archives: dict[Scope, Archive] = {}
        self._lock = threading.Lock()
        self.curated = open_curated(settings)

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
                self._archives[scope] = open_archive(
                    self.settings.database_target, embedder=self._archive_embedder, scope=scope
                )
            return self._archives[scope]

    def review_queue(self, scope: Scope) -> ReviewQueue:
        """The writes held for review in ``scope`` (one of this user's), as ``mnemo review`` opens them."""
        return ReviewQueue(self.graph(scope), expire_days=self.settings.review_expire_days)

    def _own(self, scope: Scope) -> None:
        if scope.user_id != self.user_id:
            raise PermissionError("a scope of another user")

    # -- curated ------------------------------------------------------------------------------------

    def curated_entries(self) -> dict[str, tuple[str, ...]]:
        """Both curated targets' entries as they are on disk now."""
        self.curated.load()
        return {target: self.curated.entries(target) for target in TARGETS}

    # -- what a session would see -------------------------------------------------------------------

    def prompt_blocks(self, scope: Scope) -> list[tuple[str, str]]:
        """The system prompt's blocks a new session in ``scope`` would freeze, from a session opened for the
        purpose as ``mnemo prompt`` opens one (no archive session, no maintenance pass), and without a model,
        which neither the curated blocks nor the bulletin use."""
        self._own(scope)
        update = {
            **scope.as_dict(), "maintenance_interval_hours": 0.0, "archive_enabled": False,
            "graph_embedder": "none", "archive_embedder": "none",
        }  # fmt: skip

        def blocks() -> list[tuple[str, str]]:
            memory = AgentMemory(settings=self.settings.model_copy(update=update))
            try:
                memory.start_session("mnemo-ui")
                return memory.prompt_blocks()
            finally:
                memory.close()

        return _apart(blocks)

    def trace_recall(self, scope: Scope, message: str) -> RecallTrace:
        """What the model would get for ``message`` on a new session's first turn in ``scope``, and the ranked
        candidates behind it. The block is made by the calls the graph provider's per-turn context makes
        (:func:`~mnemo.recollection.recall_everything` over memories and earlier sessions' messages, less what
        the curated snapshot shows, :func:`~mnemo.recollection.render_context` within the budget, fenced), so
        nothing is recorded for the preview; a plug-in provider's section, if one is configured, is not in it."""
        self._own(scope)

        def trace() -> RecallTrace:
            graph, archive = self.graph(scope), self.archive(scope)
            frozen = {comparable(entry) for entries in self.curated_entries().values() for entry in entries}
            budget = self.settings.graph_context_chars
            turn = turn_context(graph, archive, message, budget=budget, most=ENRICH_LIMIT, frozen=frozen)
            found, context = turn.found, turn.text
            results: dict[str, RecallResult] = {}
            if message.strip():
                results = {r.memory.id: r for r in graph.recall(message, limit=MAX_RECALL_LIMIT, touch=False)}
            prepared = inject_memory_context(message, build_memory_context_block([("graph", context)]))
            return RecallTrace(str(prepared), _weigh(found, context, frozen, results, budget), budget, ENRICH_LIMIT)

        return _apart(trace)

    def close(self) -> None:
        """Close the archives and the curated store this workspace opened."""
        with self._lock:
            for archive in self._archives.values():
                archive.close()
            self._archives.clear()
        self.curated.close()


def _apart(work: Callable[[], T]) -> T:
    """``work()`` on a thread of its own that is no daemon, nor are the threads it starts: work that may load
    the model (a session opening, a long query embedded) must not run on a daemon thread, since onnxruntime
    aborts the whole process if the interpreter exits while a daemon thread builds its session (the
    server's request threads are daemons)."""
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


def _weigh(
    found: list[Recalled], context: str, frozen: set[str], results: dict[str, RecallResult], budget: int
) -> tuple[Candidate, ...]:
    """Each candidate with its memory's per-channel ranks, and whether ``context`` holds it; one left out is
    explained by the first rule of the per-turn context that applies to it."""
    ranks: dict[str, dict[str, int]] = {}
    for channel in {name for r in results.values() for name in r.channels}:
        ordered = sorted((r for r in results.values() if channel in r.channels), key=lambda r: -r.channels[channel])
        for rank, result in enumerate(ordered, 1):
            ranks.setdefault(result.memory.id, {})[channel] = rank
    weighed, shown = [], 0
    for position, item in enumerate(found, 1):
        key = item.id if isinstance(item, RecalledMemory) else None
        # The item's own line as the context renders it (a message's comes after its session's line).
        inside = render_context([item], 1 << 30).splitlines()[-1] in context.splitlines()
        reason = None
        if inside:
            shown += 1
        elif key is not None and comparable(item.content) in frozen:
            reason = "already in the system prompt (curated snapshot)"
        elif shown >= ENRICH_LIMIT:
            reason = f"the block was full: at most {ENRICH_LIMIT} items per turn"
        else:
            reason = f"did not fit in what was left of the {budget:,}-character budget"
        weighed.append(Candidate(item, position, results.get(key or ""), ranks.get(key or "", {}), inside, reason))
    return tuple(weighed)
