"""Reviewing held writes: what the model wrote after reading untrusted content waits for the user.

The queue itself is :mod:`mnemo.graph.review` (in mnemo's database, per scope). Here is what every door
shares (the CLI's ``mnemo review``, :class:`~mnemo.AgentMemory`'s typed calls, the MCP tools): turning a
curated edit into a payload and back, and :func:`approve`, which applies exactly the payload the reviewer
saw with the user's origin (an approval is the one thing that raises an origin) and marks it approved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .curated.ops import Add, MemoryOp, Remove, Replace
from .curated.store import MemoryStore
from .errors import InvalidArgument
from .graph.review import DEFAULT_EXPIRE_DAYS, ReviewConflict, ReviewItem, ReviewQueue, ReviewState, WriteKind
from .graph.store import MemoryGraph
from .provenance import Origin, Provenance

HELD_MESSAGE = "Held for the user's review: it is not in memory and will not be used until the user approves it."
"""The one line a model is told about a held write (the payload is never echoed back to it)."""


def curated_payload(target: str, operations: Sequence[MemoryOp]) -> dict[str, Any]:
    """A curated edit as a review payload."""
    ops = []
    for op in operations:
        item: dict[str, Any] = {"action": op.action}
        if isinstance(op, (Add, Replace)):
            item["content"] = op.content
        if isinstance(op, (Replace, Remove)):
            if op.entry_id is not None:
                item["id"] = op.entry_id
            else:
                item["old_text"] = op.old_text
        ops.append(item)
    return {"target": target, "operations": ops}


def payload_operations(payload: Mapping[str, Any]) -> list[MemoryOp]:
    """The curated operations a payload of :func:`curated_payload` holds."""
    ops: list[MemoryOp] = []
    for op in payload["operations"]:
        if op["action"] == "add":
            ops.append(Add(op["content"]))
        elif op["action"] == "replace":
            ops.append(Replace(op.get("old_text", ""), op["content"], entry_id=op.get("id")))
        else:
            ops.append(Remove(op.get("old_text", ""), entry_id=op.get("id")))
    return ops


def graph_payload(
    content: str, memory_type: str, *, importance: float | None, subject: str, source: str
) -> dict[str, Any]:
    """A graph memory as a review payload."""
    return {
        "content": content,
        "memory_type": memory_type,
        "importance": importance,
        "subject": subject,
        "source": source,
    }


def approved_provenance(item: ReviewItem) -> Provenance:
    """What an approved write records: the user's origin, and where it first came from."""
    held = item.provenance
    return Provenance(Origin.USER, "approval", held.source, held.session_id, held.turn, held.excerpt)


def approve(
    queue: ReviewQueue, item_id: Any, *, store: MemoryStore | None = None, digest: str | None = None
) -> ReviewItem:
    """Apply held write ``item_id`` as it was queued and mark it approved.

    ``digest`` (as :meth:`ReviewItem.as_dict` shows it) binds the approval to the content the reviewer saw.
    A graph memory is written in the same transaction that marks it approved, without the threat scan
    (the user has read what the scan flagged); a curated edit goes through the curated store's own checks
    (its limit, its scan) and is refused, staying pending, when they refuse it; ``store`` is required
    for one. Raises :class:`~mnemo.graph.review.ReviewConflict` for an item that is not pending or not what
    the digest names.
    """
    item = queue.claim(item_id, digest)
    provenance = approved_provenance(item)
    graph = queue.graph
    if item.kind is WriteKind.GRAPH:
        return _approve_memory(queue, graph, item, provenance)
    if store is None:
        raise InvalidArgument("store", "a curated edit needs the curated store to be approved")
    target = item.payload["target"]
    origin = {"via": "approval", "review_id": item.id, "provenance": provenance.as_dict()}
    outcome = store.apply_batch(target, payload_operations(item.payload), origin=origin)
    return queue.decide(item, ReviewState.APPROVED, outcome.message)


def _approve_memory(queue: ReviewQueue, graph: MemoryGraph, item: ReviewItem, provenance: Provenance) -> ReviewItem:
    payload = item.payload
    text = graph._unscanned(payload["content"], "content")
    checked = graph._check_item(
        text, payload.get("memory_type", "fact"), payload.get("importance"), payload.get("source", ""),
        payload.get("subject", ""), (), "",
    )._replace(provenance=provenance)  # fmt: skip
    with graph._write() as conn:
        (memory,) = graph._store_items(conn, [checked], "")
        return queue.decide(item, ReviewState.APPROVED, f"memory {memory.id}", conn=conn)


def model_write(content: str, via: str) -> Provenance:
    """The provenance of a model's write when nothing tracks its context: the model's own."""
    return Provenance(Origin.MODEL, via)


@dataclass(frozen=True)
class WriteGate:
    """How a door stamps a model's writes and holds the untrusted ones.

    ``provenance(content, via)`` is the writer's provenance for a write of ``content`` now (an
    :class:`~mnemo.AgentMemory` answers from its session's taint); ``mirrored(target, content)`` that of a
    curated entry being mirrored into the graph (its own record when mnemo wrote it); ``expire_days`` how
    long a held write waits for review; with ``quarantine`` off, untrusted writes are applied (stamped);
    ``trusted_tools`` are the tools whose results in a transcript do not taint what follows (mnemo's own).
    """

    provenance: Callable[[str, str], Provenance] = model_write
    mirrored: Callable[[str, str], Provenance] | None = None
    expire_days: float | None = DEFAULT_EXPIRE_DAYS
    quarantine: bool = True
    trusted_tools: frozenset[str] = frozenset()

    def holds(self, provenance: Provenance) -> bool:
        """Whether a write of ``provenance`` waits for review (untrusted, with quarantine on)."""
        return self.quarantine and provenance.untrusted

    def queue(self, graph: MemoryGraph) -> ReviewQueue:
        """The review queue of ``graph``'s database and scope."""
        return ReviewQueue(graph, expire_days=self.expire_days)

    def mirror_provenance(self, target: str, content: str) -> Provenance:
        """The provenance of a mirrored curated entry."""
        return self.mirrored(target, content) if self.mirrored is not None else self.provenance(content, "mirror")


MODEL_WRITES = WriteGate()
"""The gate of a door with no session to track: every write is the model's own."""


__all__ = [
    "HELD_MESSAGE",
    "MODEL_WRITES",
    "ReviewConflict",
    "ReviewItem",
    "ReviewQueue",
    "ReviewState",
    "WriteGate",
    "approve",
    "approved_provenance",
    "curated_payload",
    "graph_payload",
    "model_write",
    "payload_operations",
]
