"""Back-filling the graph from the archive: extraction over sessions that were never compressed.

Extraction normally runs on the messages a compression discards. Sessions archived before that existed
(or imported from elsewhere) are walked here instead, oldest first, in batches of archived messages.
Every batch is one :func:`~.extraction.extract_messages` call with the messages' archive rows, so it is
idempotent and resumable by construction: a message is recorded as extracted in the same transaction as
its memories, a killed run loses at most the batch in flight, and the next run skips everything already
recorded (``skipped`` in the report).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..archive.locate import ArchivedRef
from ..errors import InvalidArgument
from .extract_rules import extract as extract_by_rules
from .extraction import ExtractionReport, Extractor, extract_messages, extracted_from
from .review import ReviewQueue
from .store import MemoryGraph

if TYPE_CHECKING:
    from ..archive import Archive
    from ..archive.records import StoredMessage

BATCH = 64
"""Archived messages per extraction call (and per transaction)."""

_PAGE = 10_000


def archived_sessions(archive: Archive) -> Iterator[str]:
    """Every session of the archive's scope, oldest first (subagent and tool sessions included)."""
    offset = 0
    while page := archive.list_sessions(limit=_PAGE, offset=offset, include_hidden=True, order="oldest"):
        yield from (info.id for info in page)
        offset += len(page)


def pending_messages(graph: MemoryGraph, archive: Archive, session_ids: Iterable[str]) -> int:
    """How many archived messages of ``session_ids`` have not been extracted yet (the progress total)."""
    total = 0
    for session_id in session_ids:
        info = archive.get_session(session_id)
        if info is not None:
            total += max(0, info.message_count - len(extracted_from(graph, session_id)))
    return total


def _as_message(stored: StoredMessage) -> dict[str, Any]:
    message: dict[str, Any] = {"role": stored.role, "content": stored.text, "created_at": stored.created_at}
    name = stored.extra.get("name") or (stored.tool_name if stored.role == "tool" else None)
    if isinstance(name, str) and name:
        message["name"] = name
    if isinstance(stored.extra.get("provenance"), Mapping):  # marked when archived: said after untrusted content
        message["provenance"] = stored.extra["provenance"]
    return message


def backfill(
    graph: MemoryGraph,
    archive: Archive,
    session_ids: Iterable[str],
    *,
    extractor: Extractor = extract_by_rules,
    batch: int = BATCH,
    advance: Callable[[int], None] | None = None,
    review: ReviewQueue | None = None,
    trusted_tools: Collection[str] = (),
) -> ExtractionReport:
    """Extract every archived message of ``session_ids`` not extracted before into ``graph``.

    ``graph`` and ``archive`` must share a database and scope (extraction links memories to archive rows
    by id). ``advance(n)`` is called after each batch with the messages it covered. Candidates of untrusted
    provenance wait in ``review``; ``trusted_tools``' output taints nothing (see
    :func:`~mnemo.graph.extraction.extract_messages`).
    """
    if graph.scope != archive.scope:
        raise InvalidArgument("archive", f"must have the graph's scope ({graph.scope}), not {archive.scope}")
    report = ExtractionReport()
    for session_id in session_ids:
        done = extracted_from(graph, session_id)
        cursor: int | None = None
        while page := archive.messages(session_id, after_id=cursor, limit=batch):
            cursor = page[-1].id
            fresh = [m for m in page if m.id not in done]
            report.skipped += len(page) - len(fresh)
            if not fresh:
                continue
            refs = [ArchivedRef(m.id, session_id, m.created_at) for m in fresh]
            messages = [_as_message(m) for m in fresh]
            report.add(extract_messages(
                graph, session_id, messages, extractor=extractor, refs=refs, review=review, trusted_tools=trusted_tools
            ))  # fmt: skip
            if advance is not None:
                advance(len(fresh))
    return report
