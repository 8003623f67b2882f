"""The typed Python API of :class:`~mnemo.AgentMemory`: remember, recall, forget, relate, search past
sessions and edit the curated memory from code, with records in and out instead of JSON.

Every method goes through the same functions as the model's tools (``remember`` / ``recall`` /
``relate`` / ``forget``, ``session_search``, ``memory``): the same validation, the same scope, the same
mirroring of curated edits into the providers. Refusals are typed exceptions
(:class:`~mnemo.errors.InvalidArgument`, :class:`~mnemo.graph.MemoryNotFound`,
:class:`~mnemo.curated.MemoryOpError` and its kinds, :class:`~mnemo.errors.TierUnavailable`), never JSON.

Each method has an ``a``-prefixed async twin that runs the same call in a worker thread
(:func:`asyncio.to_thread`), so an event loop keeps running while SQLite, the embedder or a provider works.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from .archive.records import SessionHits
from .curated.ops import MemoryOp, MemoryOpOutcome
from .errors import InvalidArgument, TierUnavailable
from .graph.recalled import DEFAULT_RECALL_LIMIT
from .graph.review import ReviewItem, ReviewQueue, ReviewState, WriteKind
from .graph.types import Association, Memory, MemoryType
from .providers import ArchiveProvider, GraphProvider
from .recollection import Recalled, recall_everything
from .review import approve, payload_operations
from .tools.memory import MemoryCall

if TYPE_CHECKING:
    from .config import Settings
    from .curated.store import MemoryStore
    from .graph.store import Link, MemoryGraph
    from .providers.registry import ProviderRegistry


S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


def async_twin(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """``method`` as a coroutine that runs it in a worker thread, with the same signature."""

    @functools.wraps(method)
    async def twin(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"a{method.__name__}"
    twin.__doc__ = f":meth:`{method.__name__}` without blocking the event loop (it runs in a worker thread)."
    return twin


class TypedMemoryAPI:
    """Mixed into :class:`~mnemo.AgentMemory`; see the module for the contract."""

    registry: ProviderRegistry
    settings: Settings
    store: MemoryStore

    # Provided by AgentMemory.
    def _require_session(self) -> None:
        raise NotImplementedError

    def _edit_curated(self, call: MemoryCall, origin: dict[str, Any]) -> MemoryOpOutcome:
        raise NotImplementedError

    def _graph(self) -> MemoryGraph:
        self._require_session()
        provider = next((p for p in self.registry.providers if isinstance(p, GraphProvider)), None)
        if provider is None:
            raise TierUnavailable("the memory graph is not available (graph_enabled is off, or it failed to start)")
        return provider.graph

    def _archive_or_none(self) -> ArchiveProvider | None:
        self._require_session()
        provider = next((p for p in self.registry.providers if isinstance(p, ArchiveProvider)), None)
        return None if provider is None or provider.archive is None or provider.archive.closed else provider

    def _archive(self) -> ArchiveProvider:
        provider = self._archive_or_none()
        if provider is None:
            raise TierUnavailable("the session archive is not available (archive_enabled is off, or it failed to start)")
        return provider

    # -- the memory graph ---------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        type: MemoryType | str = MemoryType.FACT,
        importance: float | None = None,
        subject: str = "",
        relations: Iterable[Link] = (),
        pin: bool = False,
    ) -> Memory:
        """Save one memory in this session's scope and return it as stored (``pin``: it never fades or is
        pruned, and always makes the bulletin).

        ``type`` is a :class:`~mnemo.graph.MemoryType` (or its name); ``importance`` 0..1 defaults by
        type; ``subject`` names who it is about (``"user"``, a person's name); ``relations`` are edges to
        existing memories, ``(target_id, relation)`` or ``(target_id, relation, weight)``, where an
        ``"updates"`` edge supersedes the target. Content is scanned: a threat raises
        :class:`~mnemo.graph.BlockedContent` and nothing is saved.
        """
        return self._graph().remember(
            content, type, importance=importance, subject=subject, relations=list(relations), pin=pin
        )

    def recall(
        self,
        query: str,
        *,
        limit: int = DEFAULT_RECALL_LIMIT,
        types: str | Iterable[str] | None = None,
        since: Any = None,
        until: Any = None,
        include_history: bool = False,
        deep: bool = False,
    ) -> list[Recalled]:
        """What this scope keeps that is most relevant to ``query``, best first, as the per-turn context and
        the ``recall`` tool rank it: :class:`~mnemo.graph.RecalledMemory` records (memories) and
        :class:`~mnemo.RecalledMessage` records (passages of earlier sessions' messages; the current
        session's are left out while the model still holds them).

        ``limit`` is 1 to 50; ``types`` one memory type or several (memories only, then); ``since`` /
        ``until`` bound the time (ISO 8601, a datetime or Unix seconds); ``include_history`` adds superseded
        versions. ``deep`` reorders the best 10 with a local cross-encoder (``pip install 'mnemo-local[deep]'``,
        else :class:`~mnemo.CrossEncoderMissing`) when the whole call fits in the ``recall_deep_ms`` setting,
        and otherwise keeps the first ranking. A bad argument raises :class:`~mnemo.errors.InvalidArgument` naming it.
        """
        archive = self._archive_or_none()
        return recall_everything(
            self._graph(), archive.archive if archive is not None else None, query, limit=limit, types=types,
            since=since, until=until, include_history=include_history,
            in_context=archive.in_context() if archive is not None else None,
            deep=deep, deep_timeout=self.settings.recall_deep_ms / 1000,
        )  # fmt: skip

    def get_memory(self, memory_id: str) -> Memory:
        """The memory ``memory_id`` of this scope; an id of another scope is unknown here:
        :class:`~mnemo.graph.MemoryNotFound`."""
        return self._graph().get(memory_id)

    def forget(self, memory_id: str) -> Memory:
        """Stop recalling memory ``memory_id`` (kept in history); returns it. An id of another scope is
        unknown here: :class:`~mnemo.graph.MemoryNotFound`."""
        return self._graph().forget(memory_id)

    def relate(self, source_id: str, target_id: str, relation: str, weight: float = 1.0) -> Association:
        """Add (or re-weight) the edge ``source --relation--> target`` between two memories of this scope."""
        return self._graph().relate(source_id, target_id, relation, weight)

    # -- the session archive ------------------------------------------------------------------

    def search_sessions(
        self,
        query: str,
        *,
        limit: int = 5,
        role: str | None = None,
        source: str | None = None,
        since: Any = None,
        until: Any = None,
        sort: str = "relevance",
        window: int = 1,
    ) -> list[SessionHits]:
        """Past sessions of this scope matching ``query``, best first, each with its matching messages and
        ``window`` neighbours around each; the current session and its lineage are left out, as for the
        ``session_search`` tool (same arguments as its ``discover`` action)."""
        provider = self._archive()
        return provider.discover(
            query, limit=limit, role=role, source=source, since=since, until=until, sort=sort, window=window
        )

    # -- curated memory -----------------------------------------------------------------------

    def curated_edit(self, target: str, *operations: MemoryOp) -> MemoryOpOutcome:
        """Edit curated memory ``target`` (``"memory"`` or ``"user"``) with :class:`~mnemo.Add`,
        :class:`~mnemo.Replace` and :class:`~mnemo.Remove` operations, exactly as the ``memory`` tool
        does: one operation, or several applied in order as one all-or-nothing write. The change is on
        disk at once and mirrored to the providers; the system prompt shows it from the next session.
        A refusal raises a :class:`~mnemo.MemoryOpError` kind and writes nothing."""
        if not operations:
            raise InvalidArgument("operations", "give at least one Add, Replace or Remove")
        bad = next((op for op in operations if not hasattr(op, "action")), None)
        if bad is not None:
            raise InvalidArgument("operations", f"must be Add, Replace or Remove, got {type(bad).__name__}")
        return self._edit_curated(MemoryCall(target, tuple(operations), batch=len(operations) > 1), {"via": "api"})

    # -- review -------------------------------------------------------------------------------

    def _review_queue(self) -> ReviewQueue:
        return ReviewQueue(self._graph(), expire_days=self.settings.review_expire_days)

    def review_list(
        self, state: ReviewState | str | None = ReviewState.PENDING, *, query: str | None = None, limit: int = 100
    ) -> list[ReviewItem]:
        """Writes held for the user's review in this scope, newest first: those in ``state`` (``None``: all)
        whose content contains ``query`` when given. Held writes are in no prompt, context or tool result."""
        return self._review_queue().items(state, query=query, limit=limit)

    def review_show(self, item_id: str) -> ReviewItem:
        """One held write: its content, provenance (tool, session, turn, time, the untrusted excerpt), the
        scan's findings and the digest an approval names; :class:`~mnemo.graph.review.ReviewNotFound` for
        an id of another scope."""
        return self._review_queue().get(item_id)

    def review_approve(self, item_id: str, *, digest: str | None = None) -> ReviewItem:
        """Apply held write ``item_id`` exactly as queued, as the user's (see :func:`mnemo.review.approve`),
        and mirror a curated edit to the providers. ``digest`` binds the approval to the content shown."""
        item = approve(self._review_queue(), item_id, store=self.store, digest=digest)
        if item.kind is WriteKind.CURATED:
            for op in payload_operations(item.payload):
                self.registry.on_memory_write(op.action, item.payload["target"], getattr(op, "content", ""),
                                              getattr(op, "old_text", None) or None)  # fmt: skip
        return item

    def review_reject(self, item_id: str) -> ReviewItem:
        """Reject held write ``item_id``: kept as rejected, never applied."""
        return self._review_queue().reject(item_id)

    # -- async twins --------------------------------------------------------------------------

    aremember = async_twin(remember)
    arecall = async_twin(recall)
    aget_memory = async_twin(get_memory)
    aforget = async_twin(forget)
    arelate = async_twin(relate)
    asearch_sessions = async_twin(search_sessions)
    acurated_edit = async_twin(curated_edit)
    areview_list = async_twin(review_list)
    areview_show = async_twin(review_show)
    areview_approve = async_twin(review_approve)
    areview_reject = async_twin(review_reject)
