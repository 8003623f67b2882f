"""The memory graph store: typed memories and their associations in mnemo's database (``mnemo.db``, or
PostgreSQL: the engine seam is :mod:`mnemo.graph.engine`).

Every write is one transaction that writers of the same scope take one at a time (SQLite's ``BEGIN
IMMEDIATE``, a per-scope advisory lock on PostgreSQL), so several processes can share the database without
losing each other's memories; the full-text index is kept in step inside the same transaction, so a memory
is searchable the moment its write commits. Embedding is deferred: vectors are
computed in batches (at the next recall, or by :meth:`MemoryGraph.embed_pending`) and stored with the
model's name and dimension, so a change of model re-embeds instead of mixing vector spaces.

Nothing is hard-deleted through the normal API: :meth:`~MemoryGraph.forget` keeps the row and
replacing keeps the old version behind an ``updates`` edge. :meth:`~MemoryGraph.purge` is the separate,
explicit way to really delete.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import threading
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._time import to_timestamp
from ..embeddings.queries import PrefetchedEmbedder, background, query_vectors_of
from ..errors import InvalidArgument, check_text, excerpt
from ..provenance import OPERATOR, Provenance, join, parse_origin
from ..retrieval.names import name_key
from ..safety.scan import check_threshold, scan_many
from . import recall as _recall
from .engine import GraphEngine
from .errors import BlockedContent, ImportConflict, MemoryNotFound
from .schema import SCOPE_CLAUSE, SELECT_MEMORY, row_to_memory, scope_params
from .types import (
    Association,
    Memory,
    MemoryType,
    Relation,
    Scope,
    parse_memory_type,
    parse_relation,
    parse_unit_interval,
)

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder

MAX_CONTENT_CHARS = 4_000
# Bounds the work a recall may do to catch up on pending embeddings; the rest waits for the next recall
# or embed_pending(). Unembedded memories are still found by full text, so this only delays, never loses.
EMBED_PER_RECALL = 256
EMBED_BATCH = 64
# The newest memories (by seq) a recall checks for missing vectors while it does not yet know how far all
# are embedded.
SCAN_PER_RECALL = 2_000
# Vector hits searched ahead per recall; recall's own pool is smaller (a bigger request searches again).
PREFETCH_HITS = 200
MAX_SUBJECT_CHARS = 200
_INSERT_MEMORY = (
    "INSERT INTO graph_memories (id, content, type, importance, created_at, updated_at, source, subject,"
    " user_id, agent_id, channel_id, origin, origin_detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_ITEM_FIELDS = frozenset(
    {"content", "memory_type", "importance", "source", "subject", "relations", "created_at", "provenance"}
)


Link = tuple[str, "Relation | str"] | tuple[str, "Relation | str", float]
"""``(target_id, relation[, weight])``: an edge from a memory being written to an existing one."""


class _Item(NamedTuple):
    """A memory to write, checked."""

    content: str
    type: MemoryType
    importance: float
    source: str
    subject: str
    links: list[tuple[str, Relation, float]]
    created_at: float | None = None
    provenance: Provenance = OPERATOR


@dataclass(frozen=True, slots=True)
class RestoreCounts:
    """What :meth:`MemoryGraph.restore` did."""

    memories_added: int
    memories_updated: int
    associations: int


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


def _check_provenance(value: Any, field: str) -> Provenance:
    if not isinstance(value, Provenance):
        raise InvalidArgument(field, f"must be a Provenance, got {type(value).__name__}")
    return value


def parse_time(value: Any, field: str) -> float | None:
    """A time filter as Unix seconds (None when not given): a number, a ``datetime`` or an ISO 8601 string."""
    return None if value is None else to_timestamp(value, field)


class MemoryGraph:
    """Typed memories with importance, timestamps, typed associations and hybrid recall.

    ``engine`` is the database holding it (see :mod:`mnemo.graph.engine`): open one, and the graph on it, with
    :func:`mnemo.storage.open_graph` (a path to mnemo's SQLite database, an open SQLite connection, or a
    ``postgresql://`` URL); :meth:`close` closes the engine. Every read and write is confined to ``scope``. With
    ``embedder=None`` recall uses full text and the graph only, and is still complete. Each recall first
    embeds at most ``embed_per_recall`` pending memories.
    """

    def __init__(
        self,
        engine: GraphEngine,
        *,
        scope: Scope | None = None,
        embedder: Embedder | None = None,
        max_content_chars: int = MAX_CONTENT_CHARS,
        embed_per_recall: int = EMBED_PER_RECALL,
        clock: Callable[[], float] = time.time,
        scan_threshold: float | None = None,
    ) -> None:
        check_threshold(scan_threshold)
        if not isinstance(engine, GraphEngine):
            raise TypeError(f"MemoryGraph needs a GraphEngine, got {type(engine).__name__}: open a database with mnemo.storage.open_graph")
        self._engine = engine
        self._conn = self._engine.conn
        self._owns_connection = True
        self.scope = scope if scope is not None else Scope()
        self.embedder = embedder
        self.max_content_chars = max_content_chars
        self.scan_threshold = scan_threshold
        self.embed_per_recall = embed_per_recall
        self._clock = clock
        self._lock = threading.RLock()
        self._vectors = self._engine.vectors
        self._embedded_upto: dict[tuple[Scope, str, int], int] = {}
        # The table's latest seq when each scope was last found embedded up to its top.
        self._settled_at: dict[tuple[Scope, str, int], int] = {}
        self._backlog: dict[tuple[Scope, str, int], tuple[int, Future[int]]] = {}  # by the process that asked
        self._closed = False

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close the connection if this graph opened it; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owns_connection:
                self._engine.close()

    def __enter__(self) -> MemoryGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self, scopes: Iterable[Scope] = (), *, durable: bool = True) -> Iterator[Any]:
        """A write transaction of this scope's (and ``scopes``') work, under this graph's lock."""
        with self._lock, self._engine.write([self.scope, *scopes], durable=durable) as conn:
            yield conn

    def with_scope(self, scope: Scope) -> MemoryGraph:
        """Another view of the same database confined to ``scope``. It shares this graph's connection and
        lock (closing the view leaves the connection open)."""
        view = copy.copy(self)
        view.scope = scope
        view._owns_connection = False
        view._closed = False
        return view

    # ----------------------------------------------------------------- validation

    def check_content(self, content: Any, field: str = "content") -> str:
        """``content`` stripped, or a refusal naming ``field``: wrong type, empty, undecodable, too long,
        or blocked by the threat scan."""
        return self.check_contents([content], [field])[0]

    def check_contents(self, contents: Sequence[Any], fields: Sequence[str]) -> list[str]:
        """:meth:`check_content` of each of ``contents`` (named by ``fields``), the threat scan run on the
        batch at once: every other check first, then the scan; the first refusal is raised."""
        texts = [self._unscanned(content, field) for content, field in zip(contents, fields, strict=True)]
        for field, findings in zip(fields, scan_many(texts, threshold=self.scan_threshold), strict=True):
            if findings:
                raise BlockedContent(field, findings)
        return texts

    def _unscanned(self, content: Any, field: str) -> str:
        if not isinstance(content, str):
            raise InvalidArgument(field, f"must be a string, got {type(content).__name__}")
        text = content.strip()
        if not text:
            raise InvalidArgument(field, "must not be empty")
        check_text(field, text)
        if len(text) > self.max_content_chars:
            raise InvalidArgument(field, f"is {len(text):,} characters; the limit is {self.max_content_chars:,}")
        return text

    @staticmethod
    def _check_id(value: Any, field: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument(field, "must be a non-empty memory id string")
        return value.strip()

    @staticmethod
    def _check_source(value: Any, field: str = "source") -> str:
        if not isinstance(value, str):
            raise InvalidArgument(field, f"must be a string, got {type(value).__name__}")
        return value

    @staticmethod
    def check_subject(value: Any, field: str = "subject") -> str:
        """A subject as stored: :func:`subject_key` of a name without control characters (empty for none)."""
        if not isinstance(value, str):
            raise InvalidArgument(field, f"must be a string, got {type(value).__name__}")
        if any(unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r\v\f" for ch in value):
            raise InvalidArgument(field, "must not contain control or invisible format characters")
        name = name_key(value)
        if len(name) > MAX_SUBJECT_CHARS:
            raise InvalidArgument(field, f"is {len(name)} characters; the limit is {MAX_SUBJECT_CHARS}")
        return name

    def _parse_links(self, links: Iterable[Link], prefix: str = "") -> list[tuple[str, Relation, float]]:
        parsed = []
        for index, link in enumerate(links):
            field = f"{prefix}relations[{index}]"
            if not isinstance(link, (tuple, list)) or len(link) not in (2, 3):
                raise InvalidArgument(field, "must be (target_id, relation) or (target_id, relation, weight)")
            target = self._check_id(link[0], f"{field}.target")
            relation = parse_relation(link[1], f"{field}.relation")
            weight = parse_unit_interval(link[2], f"{field}.weight") if len(link) == 3 else 1.0
            parsed.append((target, relation, weight))
        return parsed

    # ----------------------------------------------------------------- reads

    def _fetch(self, memory_id: str) -> Memory | None:
        row = self._conn.execute(
            f"{SELECT_MEMORY} WHERE m.id = ? AND {SCOPE_CLAUSE}", (memory_id, *scope_params(self.scope))
        ).fetchone()
        return row_to_memory(row) if row else None

    def get(self, memory_id: Any, *, field: str = "id") -> Memory:
        """The memory ``memory_id`` in this scope, or :class:`MemoryNotFound` naming ``field``."""
        memory_id = self._check_id(memory_id, field)
        with self._lock:
            memory = self._fetch(memory_id)
        if memory is None:
            raise MemoryNotFound(field, memory_id)
        return memory

    def memories(
        self,
        *,
        types: Iterable[MemoryType | str] | None = None,
        include_forgotten: bool = False,
        include_superseded: bool = True,
        source: str | None = None,
        all_scopes: bool = False,
    ) -> list[Memory]:
        """Memories oldest first, optionally filtered; ``all_scopes`` is for whole-database exports."""
        clauses, params = [], []
        if not all_scopes:
            clauses.append(SCOPE_CLAUSE)
            params.extend(scope_params(self.scope))
        if source is not None:
            clauses.append("m.source = ?")
            params.append(source)
        if not include_forgotten:
            clauses.append("m.forgotten = 0")
        if types is not None:
            wanted = sorted({parse_memory_type(t, "types").value for t in types})
            clauses.append(f"m.type IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._conn.execute(f"{SELECT_MEMORY}{where} ORDER BY m.created_at, m.seq", params).fetchall()
        found = [row_to_memory(r) for r in rows]
        return found if include_superseded else [m for m in found if not m.superseded]

    def associations(self, memory_id: str | None = None, *, all_scopes: bool = False) -> list[Association]:
        """Edges touching ``memory_id`` (either end), or every edge of the scope."""
        sql = (
            "SELECT a.source_id, a.target_id, a.relation, a.weight, a.created_at, a.origin FROM graph_associations a"
            " JOIN graph_memories m ON m.id = a.source_id"
        )
        clauses, params = [], []
        if not all_scopes:
            clauses.append(SCOPE_CLAUSE)
            params.extend(scope_params(self.scope))
        if memory_id is not None:
            clauses.append("(a.source_id = ? OR a.target_id = ?)")
            params.extend([memory_id, memory_id])
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._conn.execute(f"{sql}{where} ORDER BY a.created_at, a.source_id, a.target_id", params).fetchall()
        return [Association(r[0], r[1], Relation(r[2]), r[3], r[4], r[5]) for r in rows]

    def history(self, memory_id: Any) -> list[Memory]:
        """The supersession chain ``memory_id`` belongs to, newest version first."""
        start = self.get(memory_id)
        head, seen = start, {start.id}
        while head.superseded_by is not None and head.superseded_by not in seen:
            seen.add(head.superseded_by)
            head = self.get(head.superseded_by)
        chain, visited = [head], {head.id}
        with self._lock:
            while True:
                row = self._conn.execute(
                    "SELECT a.target_id FROM graph_associations a JOIN graph_memories t ON t.id = a.target_id"
                    " WHERE a.source_id = ? AND a.relation = 'updates' ORDER BY t.created_at DESC, t.seq DESC",
                    (chain[-1].id,),
                ).fetchone()
                if row is None or row[0] in visited:
                    return chain
                visited.add(row[0])
                older = self._fetch(row[0])
                if older is None:
                    return chain
                chain.append(older)

    def stats(self) -> dict[str, Any]:
        """Counts for this scope. Every memory is in exactly one state: ``active`` (recalled),
        ``superseded`` (replaced by a newer version) or ``forgotten`` (which wins over superseded);
        ``by_type`` counts the active ones. Also edges by relation, and vectors."""
        params = scope_params(self.scope)
        with self._lock:
            rows = self._conn.execute(
                "SELECT m.type, CASE WHEN m.forgotten = 1 THEN 'forgotten' WHEN EXISTS (SELECT 1 FROM graph_associations a"
                " WHERE a.target_id = m.id AND a.relation = 'updates') THEN 'superseded' ELSE 'active' END,"
                f" COUNT(*) FROM graph_memories m WHERE {SCOPE_CLAUSE} GROUP BY 1, 2 ORDER BY 1",
                params,
            ).fetchall()
            edges = dict(
                self._conn.execute(
                    "SELECT a.relation, COUNT(*) FROM graph_associations a JOIN graph_memories m ON m.id = a.source_id"
                    f" WHERE {SCOPE_CLAUSE} GROUP BY a.relation ORDER BY a.relation",
                    params,
                ).fetchall()
            )
            embedded = 0
            if self.embedder is not None:
                embedded = self._conn.execute(
                    "SELECT COUNT(*) FROM graph_vectors v JOIN graph_memories m ON m.id = v.memory_id"
                    f" WHERE {SCOPE_CLAUSE} AND v.model = ? AND v.dim = ?",
                    (*params, self.embedder.name, self.embedder.dim),
                ).fetchone()[0]
        states = dict.fromkeys(("active", "superseded", "forgotten"), 0)
        by_type: dict[str, int] = {}
        for kind, state, count in rows:
            states[state] += count
            if state == "active":
                by_type[kind] = count
        total = sum(states.values())
        return {
            "memories": total,
            **states,
            "by_type": by_type,
            "associations": sum(edges.values()),
            "by_relation": edges,
            "embedder": None if self.embedder is None else {"name": self.embedder.name, "dim": self.embedder.dim},
            "embedded": embedded,
            "pending_embeddings": (total - embedded) if self.embedder is not None else None,
        }

    def scopes(self) -> list[Scope]:
        """Every scope that holds memories in this database (for whole-database maintenance)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT user_id, agent_id, channel_id FROM graph_memories ORDER BY 1, 2, 3"
            ).fetchall()
        return [Scope(*row) for row in rows]

    # ----------------------------------------------------------------- writes

    def _require(self, conn: Any, memory_id: str, field: str) -> Memory:
        row = conn.execute(
            f"{SELECT_MEMORY} WHERE m.id = ? AND {SCOPE_CLAUSE}", (memory_id, *scope_params(self.scope))
        ).fetchone()
        if row is None:
            raise MemoryNotFound(field, memory_id)
        return row_to_memory(row)

    def _insert(
        self,
        conn: Any,
        content: str,
        memory_type: MemoryType,
        importance: float,
        source: str,
        subject: str = "",
        provenance: Provenance = OPERATOR,
    ) -> str:
        memory_id, now = _new_id(), self._clock()
        conn.execute(
            _INSERT_MEMORY,
            (memory_id, content, memory_type.value, importance, now, now, source, subject, *scope_params(self.scope),
             provenance.origin.value, provenance.detail_json()),
        )  # fmt: skip
        return memory_id

    def _link(self, conn: Any, source_id: str, target_id: str, relation: Relation, weight: float) -> None:
        if relation is Relation.UPDATES and self._reaches_by_updates(conn, target_id, source_id):
            raise InvalidArgument("relation", f"{excerpt(target_id)} already descends from {excerpt(source_id)}; an updates cycle")
        conn.execute(
            "INSERT INTO graph_associations (source_id, target_id, relation, weight, created_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (source_id, target_id, relation)"
            # An edge written through the API is the caller's own, even where maintenance had made it.
            " DO UPDATE SET weight = excluded.weight, origin = ''",
            (source_id, target_id, relation.value, weight, self._clock()),
        )

    @staticmethod
    def _reaches_by_updates(conn: Any, start: str, goal: str) -> bool:
        frontier, seen = [start], {start}
        while frontier:
            current = frontier.pop()
            if current == goal:
                return True
            for (target,) in conn.execute(
                "SELECT target_id FROM graph_associations WHERE source_id = ? AND relation = 'updates'", (current,)
            ):
                if target not in seen:
                    seen.add(target)
                    frontier.append(target)
        return False

    def remember(
        self,
        content: Any,
        memory_type: MemoryType | str = MemoryType.FACT,
        *,
        importance: float | None = None,
        source: str = "",
        subject: str = "",
        relations: Iterable[Link] = (),
        pin: bool = False,
        provenance: Provenance = OPERATOR,
    ) -> Memory:
        """Store a new memory (importance defaults to its type's) with optional edges to existing ones.

        ``subject`` names who the memory is about (see :class:`Memory`). An ``updates`` relation marks its
        target superseded, exactly as :meth:`replace` does. ``pin`` pins it (see :meth:`pin`).
        ``provenance`` is who wrote it (see :mod:`mnemo.provenance`): the operator unless a door says otherwise.
        """
        item = self._check_item(self.check_content(content), memory_type, importance, source, subject, relations, "")
        item = item._replace(provenance=_check_provenance(provenance, "provenance"))
        if not isinstance(pin, bool):
            raise InvalidArgument("pin", "must be true or false")
        with self._write() as conn:
            (memory,) = self._store_items(conn, [item], "")
            if pin:
                conn.execute("UPDATE graph_memories SET pinned = 1 WHERE id = ?", (memory.id,))
        return dataclasses.replace(memory, pinned=pin)

    def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[Memory]:
        """Store many memories in one transaction: all of them, or none if any is refused.

        Each item holds :meth:`remember`'s arguments by name (``content``, and optionally
        ``memory_type``, ``importance``, ``source``, ``subject``, ``relations`` to memories that already
        exist, ``created_at``: when it was said, for memories recorded after the fact, ``provenance``).
        Everything is validated before anything is written; a refusal names the item, as in
        ``items[3].content``. One commit for the batch makes bulk ingest several times faster than a
        :meth:`remember` per memory; embedding stays deferred and batched, as for every write.
        """
        mappings = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InvalidArgument(f"items[{index}]", f"must be a mapping, got {type(item).__name__}")
            unknown = set(item) - _ITEM_FIELDS
            if unknown:
                raise InvalidArgument(f"items[{index}]", f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
            if "content" not in item:
                raise InvalidArgument(f"items[{index}].content", "is required")
            mappings.append(item)
        if not mappings:
            return []
        # One scan for the batch: the classifier scores every note in a few array operations.
        texts = self.check_contents(
            [item["content"] for item in mappings], [f"items[{index}].content" for index in range(len(mappings))]
        )
        checked = []
        for index, (item, text) in enumerate(zip(mappings, texts, strict=True)):
            prefix = f"items[{index}]."
            item_checked = self._check_item(
                text, item.get("memory_type", MemoryType.FACT), item.get("importance"),
                item.get("source", ""), item.get("subject", ""), item.get("relations", ()), prefix,
            )  # fmt: skip
            if item.get("created_at") is not None:
                item_checked = item_checked._replace(created_at=to_timestamp(item["created_at"], f"{prefix}created_at"))
            if item.get("provenance") is not None:
                given = _check_provenance(item["provenance"], f"{prefix}provenance")
                item_checked = item_checked._replace(provenance=given)
            checked.append(item_checked)
        with self._write() as conn:
            return self._store_items(conn, checked, "items")

    def _check_item(
        self, text: str, memory_type: Any, importance: Any, source: Any, subject: Any, relations: Any, prefix: str
    ) -> _Item:
        """The rest of an item checked, around ``text`` that :meth:`check_content` has passed."""
        kind = parse_memory_type(memory_type, f"{prefix}memory_type" if prefix else "type")
        field = f"{prefix}importance"
        level = kind.default_importance if importance is None else parse_unit_interval(importance, field)
        return _Item(
            text, kind, level, self._check_source(source, f"{prefix}source"),
            self.check_subject(subject, f"{prefix}subject"), self._parse_links(relations, prefix),
        )  # fmt: skip

    def _store_items(self, conn: Any, items: Sequence[_Item], field: str) -> list[Memory]:
        """Insert checked items inside the caller's write transaction (their edge targets must exist)
        and return them as stored, without reading them back: new memories are never superseded."""
        for number, item in enumerate(items):
            prefix = f"{field}[{number}]." if field else ""
            for index, (target, _, _) in enumerate(item.links):
                self._require(conn, target, f"{prefix}relations[{index}].target")
        now = self._clock()
        ids = [_new_id() for _ in items]
        conn.executemany(
            _INSERT_MEMORY,
            [
                (memory_id, i.content, i.type.value, i.importance, i.created_at or now, i.created_at or now, i.source,
                 i.subject, *scope_params(self.scope), i.provenance.origin.value, i.provenance.detail_json())
                for memory_id, i in zip(ids, items, strict=True)
            ],
        )
        for memory_id, item in zip(ids, items, strict=True):
            for target, relation, weight in item.links:
                self._link(conn, memory_id, target, relation, weight)
        return [
            Memory(
                memory_id, i.content, i.type, i.importance, i.created_at or now, i.created_at or now,
                source=i.source, subject=i.subject, scope=self.scope, provenance=i.provenance,
            )  # fmt: skip
            for memory_id, i in zip(ids, items, strict=True)
        ]

    def remember_once(
        self, key: str, items: Sequence[tuple[str, MemoryType, str]], *, provenance: Provenance = OPERATOR
    ) -> int | None:
        """Store ``(content, type, source)`` items (all of ``provenance``) in one transaction unless ``key``
        was recorded before in this scope; record it. Returns how many were stored, or ``None`` when done before.

        Check and insert share one write lock, so concurrent first runs import exactly once.
        """
        texts = self.check_contents([content for content, _, _ in items], ["content"] * len(items))
        checked = [
            (text, parse_memory_type(kind), self._check_source(source))
            for text, (_, kind, source) in zip(texts, items, strict=True)
        ]
        marker = f"{key}\x1f" + "\x1f".join(scope_params(self.scope))
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM graph_meta WHERE key = ?", (marker,)).fetchone():
                return None
            for content, kind, source in checked:
                self._insert(conn, content, kind, kind.default_importance, source, provenance=provenance)
            conn.execute("INSERT INTO graph_meta (key, value) VALUES (?, ?)", (marker, repr(self._clock())))
        return len(checked)

    def replace(
        self,
        old_id: Any,
        content: Any,
        *,
        memory_type: MemoryType | str | None = None,
        importance: float | None = None,
        source: str | None = None,
        subject: str | None = None,
        provenance: Provenance = OPERATOR,
    ) -> Memory:
        """Supersede ``old_id`` with a new memory linked to it by an ``updates`` edge; the old one stays
        as history. Type, importance, source and subject default to the old memory's; the new version's
        ``provenance`` is its writer's, the old one keeps its own."""
        provenance = _check_provenance(provenance, "provenance")
        old_id = self._check_id(old_id, "id")
        text = self.check_content(content)
        kind = None if memory_type is None else parse_memory_type(memory_type)
        given_importance = None if importance is None else parse_unit_interval(importance, "importance")
        if source is not None:
            source = self._check_source(source)
        if subject is not None:
            subject = self.check_subject(subject)
        with self._write() as conn:
            old = self._require(conn, old_id, "id")
            if old.superseded_by is not None:
                raise InvalidArgument("id", f"{excerpt(old_id)} is already superseded by {old.superseded_by!r}; replace that one")
            new_kind = kind or old.type
            if given_importance is not None:
                new_importance = given_importance
            else:
                # A new version starts from the weight the old one was written with, not what it has decayed to.
                new_importance = old.original_importance if new_kind is old.type else new_kind.default_importance
            memory_id = self._insert(
                conn, text, new_kind, new_importance,
                old.source if source is None else source, old.subject if subject is None else subject, provenance,
            )  # fmt: skip
            self._link(conn, memory_id, old.id, Relation.UPDATES, 1.0)
        return self.get(memory_id)

    def relate(self, source_id: Any, target_id: Any, relation: Relation | str, weight: Any = 1.0) -> Association:
        """Add or re-weight the edge ``source --relation--> target`` (unique per the three)."""
        source_id = self._check_id(source_id, "source_id")
        target_id = self._check_id(target_id, "target_id")
        kind = parse_relation(relation)
        weight = parse_unit_interval(weight, "weight")
        if source_id == target_id:
            raise InvalidArgument("target_id", "must differ from source_id")
        with self._write() as conn:
            self._require(conn, source_id, "source_id")
            self._require(conn, target_id, "target_id")
            self._link(conn, source_id, target_id, kind, weight)
            row = conn.execute(
                "SELECT weight, created_at FROM graph_associations WHERE source_id = ? AND target_id = ? AND relation = ?",
                (source_id, target_id, kind.value),
            ).fetchone()
        return Association(source_id, target_id, kind, row[0], row[1])

    def forget(self, memory_id: Any) -> Memory:
        """Hide a memory from recall; the row and its edges stay (idempotent)."""
        memory_id = self._check_id(memory_id, "id")
        with self._write() as conn:
            self._require(conn, memory_id, "id")
            conn.execute(
                "UPDATE graph_memories SET forgotten = 1, updated_at = ? WHERE id = ? AND forgotten = 0",
                (self._clock(), memory_id),
            )
        return self.get(memory_id)

    def pin(self, memory_id: Any, pinned: bool = True) -> Memory:
        """Pin a memory (``pinned=False``: unpin it): a pinned memory never decays or is pruned, and always
        makes the bulletin. Idempotent."""
        memory_id = self._check_id(memory_id, "id")
        with self._write() as conn:
            self._require(conn, memory_id, "id")
            conn.execute("UPDATE graph_memories SET pinned = ? WHERE id = ?", (int(pinned), memory_id))
        return self.get(memory_id)

    def unpin(self, memory_id: Any) -> Memory:
        """Undo :meth:`pin`: the memory decays and may be pruned again like any other."""
        return self.pin(memory_id, False)

    def unforget(self, memory_id: Any) -> Memory:
        """Bring a forgotten memory back into recall (undoes :meth:`forget` and maintenance's pruning). Its
        importance returns to the importance it was written with, and staleness counts from now, so the
        next maintenance pass does not prune it again at once. Idempotent."""
        memory_id = self._check_id(memory_id, "id")
        now = self._clock()
        with self._write() as conn:
            self._require(conn, memory_id, "id")
            conn.execute(
                "UPDATE graph_memories SET forgotten = 0, importance = COALESCE(base_importance, importance),"
                " decayed_at = ?, last_accessed_at = ?, updated_at = ? WHERE id = ? AND forgotten = 1",
                (now, now, now, memory_id),
            )
        return self.get(memory_id)

    def maintain(self, now: float | None = None, **options: Any) -> Any:
        """Run a maintenance pass over this scope: see :func:`mnemo.graph.maintenance.maintain`."""
        from .maintenance import maintain

        return maintain(self, now=now, **options)

    def purge(self, memory_ids: Iterable[Any]) -> int:
        """Really delete memories, with their edges, vectors and full-text entries. User-initiated only:
        agents forget. All ids must exist in this scope, or nothing is deleted."""
        ids = [self._check_id(i, "ids") for i in memory_ids]
        if not ids:
            return 0
        with self._lock, self._engine.purging():
            with self._write() as conn:
                for memory_id in ids:
                    self._require(conn, memory_id, "ids")
                vectors = [
                    tuple(row) for memory_id in set(ids)
                    for row in conn.execute("SELECT seq, model, dim FROM graph_vectors WHERE memory_id = ?", (memory_id,))
                ]  # fmt: skip
                conn.executemany("DELETE FROM graph_memories WHERE id = ?", [(i,) for i in ids])
                self._engine.after_purge(conn)
            self._vectors.forget(self._conn, self.scope, vectors)
        return len(set(ids))

    def touch(self, memory_ids: Sequence[str]) -> None:
        """Record that these memories were just recalled (last-accessed time and access count)."""
        if not memory_ids:
            return
        now = self._clock()
        ids = list(dict.fromkeys(memory_ids))
        # A hint for ranking and decay, written after every recall: its commit does not wait for the disk.
        with self._write(durable=False) as conn:
            for start in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
                chunk = ids[start : start + 500]
                conn.execute(
                    "UPDATE graph_memories SET last_accessed_at = ?, access_count = access_count + 1"
                    f" WHERE id IN ({', '.join('?' * len(chunk))})",
                    (now, *chunk),
                )

    def restore(self, memories: Sequence[Memory], associations: Sequence[Association]) -> RestoreCounts:
        """Write exported records back exactly (ids, times, scopes, flags, edges), all or nothing.

        Re-importing the same records changes nothing. A record whose id exists with different content or
        in another scope is a conflict: the whole import is refused.
        """
        self.check_contents([memory.content for memory in memories], [f"memories[{i}].content" for i in range(len(memories))])
        for index, memory in enumerate(memories):
            if memory.subject != self.check_subject(memory.subject, f"memories[{index}].subject"):
                raise InvalidArgument(
                    f"memories[{index}].subject", "must be as exports write it: NFC, single spaces, none around"
                )
        known = {m.id for m in memories}
        added = updated = 0
        same = self._engine.same
        with self._write({m.scope for m in memories}) as conn:
            for index, memory in enumerate(memories):
                row = conn.execute(
                    "SELECT content, user_id, agent_id, channel_id, origin, origin_detail FROM graph_memories"
                    " WHERE id = ?", (memory.id,),
                ).fetchone()  # fmt: skip
                if row is not None and parse_origin(row[4]) is join([parse_origin(row[4]), memory.provenance.origin]):
                    # An import never raises an origin: only the user's approval does.
                    memory = dataclasses.replace(memory, provenance=Provenance.stored(row[4], row[5]))
                values = (
                    memory.content, memory.type.value, memory.importance, memory.created_at, memory.updated_at,
                    memory.last_accessed_at, memory.access_count, memory.source, memory.subject,
                    *scope_params(memory.scope), int(memory.forgotten), int(memory.pinned), memory.base_importance,
                    memory.decayed_at, memory.provenance.origin.value, memory.provenance.detail_json(), memory.id,
                )  # fmt: skip
                if row is None:
                    conn.execute(
                        "INSERT INTO graph_memories (content, type, importance, created_at, updated_at, last_accessed_at,"
                        " access_count, source, subject, user_id, agent_id, channel_id, forgotten, pinned,"
                        " base_importance, decayed_at, origin, origin_detail, id)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        values,
                    )
                    added += 1
                    continue
                if row[0] != memory.content or tuple(row[1:4]) != scope_params(memory.scope):
                    raise ImportConflict(
                        f"memories[{index}]: id {memory.id!r} already holds a different memory; nothing was imported"
                    )
                changed = conn.execute(
                    "UPDATE graph_memories SET content = ?, type = ?, importance = ?, created_at = ?, updated_at = ?,"
                    " last_accessed_at = ?, access_count = ?, source = ?, subject = ?, user_id = ?, agent_id = ?,"
                    " channel_id = ?, forgotten = ?, pinned = ?, base_importance = ?, decayed_at = ?, origin = ?,"
                    " origin_detail = ? WHERE id = ?"
                    f" AND NOT (type {same} ? AND importance {same} ? AND created_at {same} ? AND updated_at {same} ?"
                    f" AND last_accessed_at {same} ? AND access_count {same} ? AND source {same} ? AND subject {same} ?"
                    f" AND forgotten {same} ? AND pinned {same} ? AND base_importance {same} ? AND decayed_at {same} ?"
                    f" AND origin {same} ? AND origin_detail {same} ?)",
                    (*values, *values[1:9], *values[12:18]),
                ).rowcount
                updated += changed
            for index, edge in enumerate(associations):
                for end, field in ((edge.source_id, "source"), (edge.target_id, "target")):
                    if end not in known and conn.execute(
                        "SELECT 1 FROM graph_memories WHERE id = ?", (end,)
                    ).fetchone() is None:
                        raise MemoryNotFound(f"associations[{index}].{field}", end)
                conn.execute(
                    "INSERT INTO graph_associations (source_id, target_id, relation, weight, created_at, origin)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, target_id, relation)"
                    " DO UPDATE SET weight = excluded.weight, created_at = excluded.created_at, origin = excluded.origin",
                    (edge.source_id, edge.target_id, edge.relation.value, edge.weight, edge.created_at, edge.origin),
                )
        return RestoreCounts(added, updated, len(associations))

    # ----------------------------------------------------------------- embeddings

    def embed_pending(self, limit: int | None = None, *, batch_size: int = EMBED_BATCH, scan: int | None = None) -> int:
        """Embed memories of this scope that have no vector from the current model (new ones, or all of
        them after a model change), in batches; returns how many were embedded.

        A cursor per scope and model remembers how far everything is embedded, so the check costs only
        the memories written since (``seq`` only grows). A new process does not know the cursor, and
        finding it walks every memory (0.5 s at 100k); with ``scan`` (as a recall asks) it checks only the
        newest ``scan`` seqs now, where pending memories usually are, while a worker thread finds the
        cursor on a connection of its own.
        """
        embedder = self.embedder
        if embedder is None:
            return 0
        key = (self.scope, embedder.name, embedder.dim)
        # Nothing written anywhere since then, nothing to check: on PostgreSQL, where a scope's top and the
        # memories above the cursor are read past other scopes' newer rows, this saves a recall 5-20 ms at
        # 100k memories. A write of this scope that commits later with a smaller seq than another scope's
        # (possible only between hosts) waits for the next write anywhere to be embedded; full text finds
        # it meanwhile.
        with self._lock:
            latest = self._engine.latest(self._conn)
        if self._settled_at.get(key) == latest:
            return 0
        if scan is not None and key not in self._embedded_upto and self._engine.reads_apart:
            pid, finding = self._backlog.get(key, (None, None))
            if finding is None or pid != os.getpid():  # a forked child never sees its parent's worker finish
                finding = background().submit(self._engine.first_pending, *key)
                self._backlog[key] = (os.getpid(), finding)
            if not finding.done() or finding.exception() is not None:
                with self._lock:
                    top = self._engine.top(self._conn, self.scope)
                done = self._embed_range(max(0, top - scan), limit, batch_size, move_cursor=False)
                if finding.done():  # it failed: walk here, as without a worker
                    del self._backlog[key]
                    self._embedded_upto[key] = 0
                return done
            self._embedded_upto.setdefault(key, finding.result())
        return self._embed_range(self._embedded_upto.get(key, 0), limit, batch_size)

    def _embed_range(self, low: int, limit: int | None, batch_size: int, *, move_cursor: bool = True) -> int:
        """Embed the pending memories above seq ``low``; returns how many. Moves the cursor (when asked)
        as far as everything is embedded."""
        embedder = self.embedder
        assert embedder is not None
        key = (self.scope, embedder.name, embedder.dim)
        done = 0
        cursor = low
        while limit is None or done < limit:
            want = batch_size if limit is None else min(batch_size, limit - done)
            plain = self._engine.plain
            # One read snapshot, so "nothing pending up to the top" is true of the same state.
            with self._lock, self._engine.snapshot() as conn:
                latest = self._engine.latest(conn)
                rows = conn.execute(
                    "SELECT m.seq, m.id, m.content FROM graph_memories m"
                    " LEFT JOIN graph_vectors v ON v.memory_id = m.id"
                    # Keep the planner on the seq range instead of the scope index.
                    f" WHERE m.seq > ? AND {plain('m.user_id')} = ? AND {plain('m.agent_id')} = ?"
                    f" AND {plain('m.channel_id')} = ? AND (v.memory_id IS NULL OR v.model != ? OR v.dim != ?)"
                    " ORDER BY m.seq LIMIT ?",
                    (cursor, *scope_params(self.scope), embedder.name, embedder.dim, want),
                ).fetchall()
                top = self._engine.top(conn, self.scope)
            if rows:
                vectors = np.asarray(embedder.embed([r[2] for r in rows]), dtype=np.float32)
                if vectors.shape != (len(rows), embedder.dim):
                    raise ValueError(
                        f"embedder {embedder.name!r} returned shape {vectors.shape}, expected {(len(rows), embedder.dim)}"
                    )
                with self._write() as conn:
                    replaced = [
                        tuple(row) for r in rows for row in conn.execute(
                            "SELECT seq, model, dim FROM graph_vectors WHERE memory_id = ?", (r[1],)
                        )
                    ]  # fmt: skip
                    self._engine.store_vectors(conn, self.scope, embedder, [r[1] for r in rows], vectors)
                if replaced:
                    # Another model's vectors are gone from the database: erase them from its file too.
                    with self._lock:
                        self._vectors.forget(self._conn, self.scope, replaced)
                done += len(rows)
            finished = len(rows) < want
            cursor = top if finished else rows[-1][0]
            if move_cursor:
                self._embedded_upto[key] = cursor
                if finished:
                    self._settled_at[key] = latest
            if finished:
                break
        return done

    def flush(self) -> None:
        """Finish deferred work (pending embeddings)."""
        self.embed_pending()

    # ----------------------------------------------------------------- recall

    def recall(
        self,
        query: Any,
        *,
        limit: int = 10,
        types: Iterable[MemoryType | str] | None = None,
        since: Any = None,
        until: Any = None,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        touch: bool = True,
        catch_up: bool = True,
    ) -> list[_recall.RecallResult]:
        """The memories most relevant to ``query``, best first, with the channels that found each.

        Superseded and forgotten memories are left out unless asked for; ``types`` and the
        ``since``/``until`` window (on creation time) filter the results, not the seeds. With ``catch_up``
        up to ``embed_per_recall`` pending memories are embedded first; without it (per-turn context,
        whose provider embeds after each turn instead) the recall never waits on a backlog, and full text
        finds what has no vector yet.
        """
        if not isinstance(query, str):
            raise InvalidArgument("query", f"must be a string, got {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidArgument("limit", "must be an integer between 1 and 100")
        wanted = None if types is None else frozenset(parse_memory_type(t, "types") for t in types)
        window = (parse_time(since, "since"), parse_time(until, "until"))
        embedder = self.embedder
        probe = None
        if embedder is not None:
            if query.strip():
                # The model embeds the query, then the vector index is searched, on another core while
                # pending work and the SQL run here (a 2-core machine does both at once).
                probe = query_vectors_of(embedder).start(embedder, query)
                embedder = PrefetchedEmbedder(embedder, query, probe)
            if catch_up:
                self.embed_pending(self.embed_per_recall, scan=SCAN_PER_RECALL)
        with self._lock:
            if probe is not None:
                self._vectors.prefetch(self._conn, self.scope, embedder, probe, max(limit * 5, PREFETCH_HITS))
            results = _recall.search(
                self._engine,
                self.scope,
                query,
                embedder=embedder,
                vectors=self._vectors,
                limit=limit,
                types=wanted,
                window=window,
                include_superseded=include_superseded,
                include_forgotten=include_forgotten,
                now=self._clock(),
            )
        if touch and results:
            self.touch([r.memory.id for r in results])
        return results
