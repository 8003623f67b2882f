"""A recalled memory as callers see it, and the one recall call every door makes.

The ``recall`` tool, :meth:`mnemo.AgentMemory.recall` and its async twin all go through
:func:`recall_memories`: the same checks, the same graph query, the same record. The tool then turns
each :class:`RecalledMemory` into JSON with :meth:`RecalledMemory.as_tool_dict`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._time import iso
from ..errors import InvalidArgument
from .extraction import SourceMessage, source_messages
from .types import MemoryType

if TYPE_CHECKING:
    from .recall import RecallResult
    from .store import MemoryGraph

MAX_RECALL_LIMIT = 50
DEFAULT_RECALL_LIMIT = 8


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One memory found by recall: what it says and what kind it is, how well it matched (``score``, higher
    is better), and what recall knows of it (importance, who it is about, when and where it was written,
    which channels found it, the newer version that supersedes it if any). ``status`` is ``"superseded"`` or
    ``"disputed"`` when a newer memory (``newer_id``) updates or contradicts it. ``said_in`` are the archived
    messages an extracted memory came from (empty for one written directly). ``similarity`` is the cosine of
    its embedding and the query's, where the vector channel found it. Times are Unix seconds."""

    id: str
    content: str
    type: MemoryType
    score: float
    importance: float
    subject: str
    created_at: float
    source: str
    found_by: tuple[str, ...]
    superseded_by: str | None = None
    status: str | None = None
    newer_id: str | None = None
    said_in: tuple[SourceMessage, ...] = ()
    similarity: float | None = None

    @classmethod
    def from_result(cls, result: RecallResult, said_in: Iterable[SourceMessage] = ()) -> RecalledMemory:
        """The record of one graph recall result."""
        memory = result.memory
        return cls(
            id=memory.id,
            content=memory.content,
            type=memory.type,
            score=result.score,
            importance=memory.importance,
            subject=memory.subject,
            created_at=memory.created_at,
            source=memory.source,
            found_by=tuple(sorted(result.channels)),
            superseded_by=memory.superseded_by,
            status=result.status,
            newer_id=result.newer_id,
            said_in=tuple(said_in),
            similarity=result.similarity,
        )

    def as_tool_dict(self) -> dict[str, Any]:
        """The JSON-ready form the ``recall`` tool returns (empty subject and supersession left out)."""
        item: dict[str, Any] = {
            "id": self.id,
            "type": self.type.value,
            "date": iso(self.created_at),
            "content": self.content,
            "importance": self.importance,
            "score": round(self.score, 4),
            "found_by": list(self.found_by),
        }
        if self.subject:
            item["subject"] = self.subject
        if self.superseded_by:
            item["superseded_by"] = self.superseded_by
        if self.status is not None:
            # "superseded" or "disputed": a newer memory (``newer``) says otherwise; trust that one.
            item["status"] = self.status
            item["newer"] = self.newer_id
        if self.said_in:
            # Where it was said, for session_search to show the turn itself.
            item["said_in"] = [source.as_dict() for source in self.said_in]
        return item


def recall_memories(
    graph: MemoryGraph,
    query: str,
    *,
    limit: int = DEFAULT_RECALL_LIMIT,
    types: str | Iterable[str] | None = None,
    since: Any = None,
    until: Any = None,
    include_history: bool = False,
    catch_up: bool = True,
) -> list[RecalledMemory]:
    """The memories of ``graph``'s scope (as :meth:`mnemo.AgentMemory.recall`, the session's) most relevant
    to ``query``, best first, as :class:`RecalledMemory` records.

    ``limit`` is 1 to ``MAX_RECALL_LIMIT``; ``types`` one memory type or several; ``since`` / ``until``
    bound the creation time (ISO 8601, a datetime or Unix seconds); ``include_history`` adds superseded
    versions; ``catch_up`` as for :meth:`~mnemo.graph.MemoryGraph.recall`. A bad argument raises
    :class:`~mnemo.errors.InvalidArgument` naming it.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise InvalidArgument("limit", f"must be an integer between 1 and {MAX_RECALL_LIMIT}")
    if isinstance(types, str):
        types = [types]
    if types is not None and not isinstance(types, (list, tuple, set, frozenset)):
        raise InvalidArgument("types", f"must be a list of memory types, got {type(types).__name__}")
    if not isinstance(include_history, bool):
        raise InvalidArgument("include_history", "must be true or false")
    results = graph.recall(
        query, limit=limit, types=list(types) if types is not None else None, since=since, until=until,
        include_superseded=include_history, catch_up=catch_up,
    )  # fmt: skip
    sources = source_messages(graph, [result.memory.id for result in results])
    return [RecalledMemory.from_result(result, sources.get(result.memory.id, ())) for result in results]
