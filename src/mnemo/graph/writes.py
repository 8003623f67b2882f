"""Writing the memory graph: remembering (one, many, once), replacing, relating, forgetting, pinning,
purging, access times, and restoring an export."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._time import to_timestamp
from ..errors import InvalidArgument, excerpt
from ..provenance import OPERATOR, Provenance, join, parse_origin
from .core import GraphCore, Link
from .errors import ImportConflict, MemoryNotFound
from .schema import SCOPE_CLAUSE, SELECT_MEMORY, row_to_memory, scope_params
from .types import (
    Association,
    Memory,
    MemoryType,
    Relation,
    parse_memory_type,
    parse_relation,
    parse_unit_interval,
)

_INSERT_MEMORY = (
    "INSERT INTO graph_memories (id, content, type, importance, created_at, updated_at, source, subject,"
    " user_id, agent_id, channel_id, origin, origin_detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_ITEM_FIELDS = frozenset(
    {"content", "memory_type", "importance", "source", "subject", "relations", "created_at", "provenance"}
)


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



class GraphWrites(GraphCore):
    """Every change to the graph's memories and associations, each in one write transaction."""

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
