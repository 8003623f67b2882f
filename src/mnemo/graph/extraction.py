"""Turning messages into typed memories, each linked to the archived message(s) it came from.

An extractor (:mod:`.extract_rules` by default, :mod:`.extract_llm` when a model is configured) proposes
:class:`~.extract_rules.Candidate` memories; :func:`extract_messages` decides what is written:

- **idempotent per message**: every message looked at is recorded in ``graph_extracted`` (by archive id, or
  by a hash of session, role and text when the archive does not hold it), in the same transaction as its
  memories; a message recorded before is skipped, so running twice (or concurrently) adds nothing;
- **scanned**: a candidate the threat scan (or the graph's content rules) refuses is counted and dropped;
- **de-duplicated**: a candidate whose text a live memory of the scope already holds is dropped;
- **linked**: ``graph_memory_messages`` ties each new memory to its session and archive message id, so
  :func:`source_messages` can show where a recalled memory was said; its date is the message's;
- **newer over older**: a new memory that announces a change and says something different about the
  subject of an earlier one ("staging moved to port 6543" after "staging is on port 5433") gets a
  ``contradicts`` edge to it, so the earlier one is shown as disputed, below it, and no longer in the bulletin;
- **stamped**: a memory's provenance is the join of its source messages' (:func:`message_provenance`: the
  user's words are the user's; a tool's output, and what the model said after it in these messages, are
  untrusted). An untrusted candidate is not written but held for review when a ``review`` queue is given
  (without one it is written, stamped untrusted); the scan's refusal of a user's own words holds it too
  (without a queue it is dropped).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..archive.locate import ArchivedRef, locate_messages
from ..errors import InvalidArgument
from ..provenance import Origin, Provenance, Trust, derived, parse_origin
from ..safety.scan import finding_labels
from ..taint import tool_call_names
from .errors import BlockedContent
from .extract_rules import Candidate
from .extract_rules import extract as extract_by_rules
from .newer import changes, disagree, topic_words
from .review import ReviewItem, ReviewQueue, WriteKind
from .schema import scope_params
from .store import MemoryGraph
from .types import Memory, Relation

log = logging.getLogger("mnemo.graph")

Extractor = Callable[[Sequence[Mapping[str, Any]]], list[Candidate]]
"""Messages in, candidate memories out (positions in ``messages`` name their sources)."""


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """Where an extracted memory was said: its session and archive message id (``None`` when the
    archive did not hold the message)."""

    session_id: str
    message_id: int | None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {"session_id": self.session_id, "message_id": self.message_id}


@dataclass(slots=True)
class ExtractionReport:
    """What one extraction did: messages looked at and skipped (extracted before), memories written,
    candidates refused by the scan and dropped as duplicates."""

    messages: int = 0
    skipped: int = 0
    memories: list[Memory] = field(default_factory=list)
    refused: int = 0
    duplicates: int = 0
    held: list[ReviewItem] = field(default_factory=list)

    def add(self, other: ExtractionReport) -> None:
        """Fold ``other`` into this report."""
        self.messages += other.messages
        self.skipped += other.skipped
        self.memories.extend(other.memories)
        self.refused += other.refused
        self.duplicates += other.duplicates
        self.held.extend(other.held)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "messages": self.messages,
            "skipped": self.skipped,
            "memories": len(self.memories),
            "refused": self.refused,
            "duplicates": self.duplicates,
            "held": len(self.held),
        }


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def message_key(session_id: str, message: Mapping[str, Any], ref: ArchivedRef | None) -> str:
    """The key a message is recorded under once extracted: its archive id, else a hash of its text."""
    if ref is not None:
        return f"archive:{ref.message_id}"
    text = "\x1f".join((session_id, str(message.get("role", "")), str(message.get("content", ""))))
    return "text:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def locate(graph: MemoryGraph, session_id: str, messages: Sequence[Mapping[str, Any]]) -> list[ArchivedRef | None]:
    """The archive rows of ``messages`` in the graph's database and scope (see :func:`locate_messages`)."""
    with graph._lock:
        if not graph._engine.has_table("messages"):
            return [None] * len(messages)
        return locate_messages(graph._conn, graph.scope, session_id, messages)


class _AlreadyExtracted(Exception):
    """Another writer recorded these messages between our read and our write: undo ours."""


def extract_messages(
    graph: MemoryGraph,
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    extractor: Extractor = extract_by_rules,
    refs: Sequence[ArchivedRef | None] | None = None,
    review: ReviewQueue | None = None,
    trusted_tools: Collection[str] = (),
) -> ExtractionReport:
    """Extract memories from ``messages`` of ``session_id`` into ``graph`` (see the module docstring).

    ``refs`` are the messages' archive rows when the caller knows them; otherwise they are looked up. A
    message's ``created_at`` (Unix seconds), or its archive row's, dates the memories taken from it.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidArgument("session_id", "must be a non-empty string")
    report = ExtractionReport(messages=len(messages))
    if not messages:
        return report
    refs = list(refs) if refs is not None else locate(graph, session_id, messages)
    keys = [message_key(session_id, m, r) for m, r in zip(messages, refs, strict=True)]
    done = _recorded(graph, keys)
    fresh = [i for i, key in enumerate(keys) if key not in done]
    report.skipped = len(messages) - len(fresh)
    if not fresh:
        return report
    batch = [messages[i] for i in fresh]
    candidates = extractor(batch)
    items, sources, seen, held = [], [], set(), []
    live = [m for m in graph.memories() if not m.superseded]
    known = {_normal(m.content) for m in live}
    said_by = message_provenance(session_id, messages, trusted_tools)
    for candidate in candidates:
        origin = [fresh[i] for i in candidate.messages if 0 <= i < len(fresh)] or [fresh[0]]
        provenance = derived((said_by[i] for i in origin), "extraction")
        try:
            text = graph._unscanned(candidate.content, "content")
            if not (provenance.untrusted and review is not None):  # a held one is scanned when queued
                graph.check_content(text)
            findings: tuple[dict[str, object], ...] = ()
        except BlockedContent as exc:
            if provenance.origin is not Origin.USER:
                log.warning("graph: an extracted memory was refused by the threat scan: %s", exc)
                report.refused += 1
                continue
            findings = tuple(finding_labels(exc.findings))
        except InvalidArgument:
            report.refused += 1
            continue
        norm = _normal(text)
        if norm in known or norm in seen:
            report.duplicates += 1
            continue
        seen.add(norm)
        item = graph._check_item(text, candidate.type, candidate.importance, session_id, candidate.subject, (), "")
        if (provenance.untrusted and review is not None) or findings:
            if review is None:
                report.refused += 1
            else:
                payload = {"content": text, "memory_type": item.type.value, "importance": candidate.importance,
                           "subject": item.subject, "source": session_id}  # fmt: skip
                held.append((payload, provenance, findings))
            continue
        said = _said_at(messages[origin[0]], refs[origin[0]])
        item = item._replace(provenance=provenance)
        items.append(item._replace(created_at=said) if said is not None else item)
        sources.append(origin)
    try:
        with graph._write() as conn:
            if _recorded(graph, [keys[i] for i in fresh], conn):
                raise _AlreadyExtracted
            stored = graph._store_items(conn, items, "") if items else []
            _link_disagreements(graph, conn, stored, live)
            if review is not None:
                report.held = [review.submit(WriteKind.GRAPH, *entry, conn=conn) for entry in held]
            for memory, origin in zip(stored, sources, strict=True):
                conn.executemany(
                    "INSERT INTO graph_memory_messages (memory_id, session_id, message_id) VALUES (?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    [(memory.id, *_where(session_id, refs[i])) for i in origin],
                )
            counts = {i: 0 for i in fresh}
            for origin in sources:
                counts[origin[0]] += 1
            now = graph._clock()
            conn.executemany(
                "INSERT INTO graph_extracted (user_id, agent_id, channel_id, message_key, session_id, message_id,"
                " memories, extracted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(*scope_params(graph.scope), keys[i], *_where(session_id, refs[i]), counts[i], now) for i in fresh],
            )
    except _AlreadyExtracted:
        report.skipped, report.refused, report.duplicates = len(messages), 0, 0
        return report
    report.memories = stored
    return report


def message_provenance(
    session_id: str, messages: Sequence[Mapping[str, Any]], trusted_tools: Collection[str] = ()
) -> list[Provenance]:
    """Each message's provenance by its role: the user's words are the user's, a system message the
    operator's, a tool's output untrusted (named by its tool) unless the tool is one of ``trusted_tools``;
    the model's words are its own until an untrusted output appears among ``messages``, and untrusted from
    there on. A message marked with an untrusted ``provenance`` when archived is untrusted, and so is what
    follows it."""
    called = tool_call_names(messages)
    found: list[Provenance] = []
    exposure: Provenance | None = None
    for message in messages:
        role = message.get("role")
        marked = message.get("provenance")
        if isinstance(marked, Mapping) and parse_origin(marked.get("origin", ""), "provenance").trust is Trust.UNTRUSTED:
            exposure = exposure or Provenance(Origin.TAINTED, "extraction", str(marked.get("source", "")), session_id)
            found.append(exposure)
        elif role == "user":
            found.append(Provenance(Origin.USER, "extraction", session_id=session_id))
        elif role == "system":
            found.append(Provenance(Origin.OPERATOR, "extraction", session_id=session_id))
        elif role == "tool" and (message.get("name") or called.get(str(message.get("tool_call_id")))) in trusted_tools:
            found.append(Provenance(Origin.MODEL, "extraction", session_id=session_id))
        elif role == "tool":
            text = message.get("content")
            source = str(message.get("name") or called.get(str(message.get("tool_call_id"))) or "tool")
            exposure = Provenance(
                Origin.TAINTED, "extraction", source, session_id, excerpt=text[:200] if isinstance(text, str) else ""
            )
            found.append(exposure)
        elif exposure is not None:
            found.append(exposure)  # the model, speaking after it read a tool's output
        else:
            found.append(Provenance(Origin.MODEL, "extraction", session_id=session_id))
    return found


def _where(session_id: str, ref: ArchivedRef | None) -> tuple[str, int | None]:
    return (ref.session_id, ref.message_id) if ref is not None else (session_id, None)


def _said_at(message: Mapping[str, Any], ref: ArchivedRef | None) -> float | None:
    if ref is not None:
        return ref.created_at
    when = message.get("created_at")
    return float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None


def _recorded(graph: MemoryGraph, keys: Sequence[str], conn: Any = None) -> set[str]:
    found: set[str] = set()
    with graph._lock:
        db = conn or graph._conn
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            found.update(
                row[0]
                for row in db.execute(
                    "SELECT message_key FROM graph_extracted WHERE user_id = ? AND agent_id = ? AND channel_id = ?"
                    f" AND message_key IN ({', '.join('?' * len(chunk))})",
                    (*scope_params(graph.scope), *chunk),
                )
            )
    return found


def _link_disagreements(graph: MemoryGraph, conn: Any, stored: Sequence[Memory], live: Sequence[Memory]) -> None:
    """Give each new memory with a clause that announces a change (:func:`~.newer.changes`) a ``contradicts``
    edge to every earlier one of its subject that clause says something different about: recall
    then puts it above them and marks them disputed, and the bulletin leaves them out. The earlier memories
    stay, and stay searchable."""
    earlier = list(live)
    for memory in stored:
        changed = changes(memory.content)
        if changed:
            about = topic_words(f"{memory.subject} user")  # every memory of the subject names it
            for old in earlier:
                if (
                    old.subject == memory.subject
                    and old.created_at <= memory.created_at
                    and disagree(changed, old.content, ignore=about)
                ):
                    graph._link(conn, memory.id, old.id, Relation.CONTRADICTS, 1.0)
        earlier.append(memory)


def extracted_from(graph: MemoryGraph, session_id: str) -> set[int]:
    """Archive message ids of ``session_id`` already extracted in the graph's scope (resuming back-fills)."""
    with graph._lock:
        rows = graph._conn.execute(
            "SELECT message_id FROM graph_extracted WHERE user_id = ? AND agent_id = ? AND channel_id = ?"
            " AND session_id = ? AND message_id IS NOT NULL",
            (*scope_params(graph.scope), session_id),
        ).fetchall()
    return {r[0] for r in rows}


def source_messages(graph: MemoryGraph, memory_ids: Iterable[str]) -> dict[str, list[SourceMessage]]:
    """Where each of ``memory_ids`` (in the graph's scope) was extracted from; ids with no link are absent."""
    ids = list(dict.fromkeys(memory_ids))
    found: dict[str, list[SourceMessage]] = {}
    if not ids:
        return found
    with graph._lock:
        rows = graph._conn.execute(
            # CROSS JOIN fixes the loop order: the links of these ids, then each one's scope. Left to choose,
            # SQLite walked the whole scope's memories first (5 ms a recall at 10k memories).
            "SELECT l.memory_id, l.session_id, l.message_id FROM graph_memory_messages l"
            " CROSS JOIN graph_memories m"
            f" WHERE m.id = l.memory_id AND l.memory_id IN ({', '.join('?' * len(ids))}) AND m.user_id = ? AND m.agent_id = ?"
            " AND m.channel_id = ? ORDER BY l.message_id",
            (*ids, *scope_params(graph.scope)),
        ).fetchall()
    for memory_id, session_id, message_id in rows:
        found.setdefault(memory_id, []).append(SourceMessage(session_id, message_id))
    return found
