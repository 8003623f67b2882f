"""Read-only views of one scope's memories for an inspector (``mnemo ui``): a filtered page of the table, each
memory's state, and what maintenance last did.

Nothing here ranks or writes; search goes through :meth:`MemoryGraph.recall` like every other door. A page is
read newest first with ``LIMIT``/``OFFSET`` on the scope's creation-time index and one row more than asked, so
whether another page follows is known without counting the whole table (a count walks every row of a large
scope; a page walks about as many rows as it shows, times the filters' selectivity).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .._time import iso
from ..errors import InvalidArgument
from .schema import SCOPE_CLAUSE, SELECT_MEMORY, row_to_memory, scope_params
from .store import MemoryGraph
from .types import Memory, MemoryType, parse_memory_type

MAX_PAGE_SIZE = 200


class Status(StrEnum):
    """A memory's state as an inspector shows it. ``active`` (recalled), ``superseded`` (a newer version
    ``updates`` it) and ``forgotten`` partition the memories as :meth:`MemoryGraph.stats` counts them;
    ``disputed`` (a newer memory ``contradicts`` it) and ``pinned`` (never decays) cut across them."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    DISPUTED = "disputed"
    FORGOTTEN = "forgotten"
    PINNED = "pinned"


_UPDATED = "EXISTS (SELECT 1 FROM graph_associations u WHERE u.target_id = m.id AND u.relation = 'updates')"
_NEWER = "(o.forgotten = 0 AND (o.created_at > m.created_at OR (o.created_at = m.created_at AND o.seq > m.seq)))"
# The older of two memories joined by a ``contradicts`` edge (either way round) is the disputed one, as recall
# marks it (see mnemo.graph.recall.mark_disagreements).
_DISPUTED = (
    "(EXISTS (SELECT 1 FROM graph_associations c JOIN graph_memories o ON o.id = c.target_id"
    f" WHERE c.source_id = m.id AND c.relation = 'contradicts' AND {_NEWER})"
    " OR EXISTS (SELECT 1 FROM graph_associations c JOIN graph_memories o ON o.id = c.source_id"
    f" WHERE c.target_id = m.id AND c.relation = 'contradicts' AND {_NEWER}))"
)
_STATUS_SQL = {
    Status.ACTIVE: f"m.forgotten = 0 AND NOT {_UPDATED}",
    Status.SUPERSEDED: f"m.forgotten = 0 AND {_UPDATED}",
    Status.DISPUTED: f"m.forgotten = 0 AND {_DISPUTED}",
    Status.FORGOTTEN: "m.forgotten = 1",
    Status.PINNED: "m.pinned = 1",
}


def parse_status(value: Any, field: str = "status") -> Status:
    """``value`` as a :class:`Status`, or :class:`InvalidArgument` naming ``field`` and the choices."""
    try:
        return Status(value)
    except ValueError:
        raise InvalidArgument(field, f"must be one of {', '.join(s.value for s in Status)}, got {value!r}") from None


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """What a page of the table holds. Empty fields filter nothing; ``since``/``until`` are Unix seconds on
    the creation time; ``subject`` is matched as stored (see :meth:`MemoryGraph.check_subject`)."""

    types: tuple[MemoryType, ...] = ()
    status: Status | None = None
    subject: str = ""
    source: str = ""
    since: float | None = None
    until: float | None = None

    @classmethod
    def parse(cls, *, types: Iterable[str] = (), status: str = "", subject: str = "", source: str = "",
              since: float | None = None, until: float | None = None) -> MemoryFilter:  # fmt: skip
        """A filter from text fields as a form sends them; a bad field raises :class:`InvalidArgument`."""
        return cls(
            types=tuple(parse_memory_type(t, "type") for t in types if t),
            status=parse_status(status) if status else None,
            subject=MemoryGraph.check_subject(subject) if subject else "",
            source=source,
            since=since,
            until=until,
        )

    def sql(self) -> tuple[list[str], list[Any]]:
        """The WHERE clauses (beyond the scope) and their bind values."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.types:
            clauses.append(f"m.type IN ({', '.join('?' * len(self.types))})")
            params.extend(t.value for t in self.types)
        if self.status is not None:
            clauses.append(_STATUS_SQL[self.status])
        for column, value in (("m.subject", self.subject), ("m.source", self.source)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.since is not None:
            clauses.append("m.created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("m.created_at <= ?")
            params.append(self.until)
        return clauses, params

    def admits(self, memory: Memory, disputed: bool) -> bool:
        """Whether ``memory`` (``disputed`` or not) passes this filter: the same test :meth:`sql` makes, for
        memories found another way (a search)."""
        if self.types and memory.type not in self.types:
            return False
        if self.subject and memory.subject != self.subject:
            return False
        if self.source and memory.source != self.source:
            return False
        if (self.since is not None and memory.created_at < self.since) or (
            self.until is not None and memory.created_at > self.until
        ):
            return False
        return self.status is None or self.status in statuses(memory, disputed)


def statuses(memory: Memory, disputed: bool) -> tuple[Status, ...]:
    """Every status ``memory`` has: one of active / superseded / forgotten, then disputed and pinned."""
    main = Status.FORGOTTEN if memory.forgotten else (Status.SUPERSEDED if memory.superseded else Status.ACTIVE)
    extra = [Status.DISPUTED] if disputed and not memory.forgotten else []
    return (main, *extra, *([Status.PINNED] if memory.pinned else []))


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of the table, newest first; ``disputed`` holds the ids on it a newer memory contradicts."""

    memories: tuple[Memory, ...]
    offset: int
    limit: int
    has_more: bool
    disputed: frozenset[str]


def _check_window(offset: Any, limit: Any) -> tuple[int, int]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidArgument("limit", f"must be an integer between 1 and {MAX_PAGE_SIZE}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidArgument("offset", "must be a non-negative integer")
    return offset, limit


def page(graph: MemoryGraph, where: MemoryFilter = MemoryFilter(), *, offset: int = 0, limit: int = 50) -> MemoryPage:
    """The memories of ``graph``'s scope that pass ``where``, newest first, ``limit`` from ``offset``."""
    offset, limit = _check_window(offset, limit)
    clauses, params = where.sql()
    # The page's rows are picked first, on the scope's index alone (a deep offset then skips index entries,
    # not whole rows with their computed columns), and only those rows are read in full.
    order = "ORDER BY m.created_at DESC, m.seq DESC"
    picked = (
        f"SELECT m.seq FROM graph_memories m WHERE {' AND '.join([SCOPE_CLAUSE, *clauses])} {order} LIMIT ? OFFSET ?"
    )
    with graph._lock:
        rows = graph._conn.execute(
            f"{SELECT_MEMORY} WHERE m.seq IN ({picked}) {order}",
            (*scope_params(graph.scope), *params, limit + 1, offset),
        ).fetchall()
    found = tuple(row_to_memory(row) for row in rows[:limit])
    return MemoryPage(found, offset, limit, len(rows) > limit, disputed_among(graph, [m.id for m in found]))


def disputed_among(graph: MemoryGraph, memory_ids: Sequence[str]) -> frozenset[str]:
    """Which of ``memory_ids`` (in ``graph``'s scope) a newer, unforgotten memory contradicts."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return frozenset()
    marks = ", ".join("?" * len(ids))
    # The scope is checked here rather than in SQL: given both, SQLite walks the whole scope's index.
    with graph._lock:
        rows = graph._conn.execute(
            f"SELECT m.id, m.user_id, m.agent_id, m.channel_id FROM graph_memories m"
            f" WHERE m.id IN ({marks}) AND m.forgotten = 0 AND {_DISPUTED}",
            ids,
        ).fetchall()
    scope = scope_params(graph.scope)
    return frozenset(row[0] for row in rows if tuple(row[1:]) == scope)


def subjects(graph: MemoryGraph) -> list[str]:
    """The subjects ``graph``'s scope has memories about, most memories first (the scope's tally)."""
    with graph._lock:
        rows = graph._conn.execute(
            "SELECT value FROM graph_tallies WHERE user_id = ? AND agent_id = ? AND channel_id = ? AND field = 'subject'"
            " ORDER BY memories DESC, value",
            scope_params(graph.scope),
        ).fetchall()
    return [row[0] for row in rows]


@dataclass(frozen=True, slots=True)
class MaintenanceState:
    """When a maintenance pass last finished in a scope (``None``: never), whether one is under way, and the
    newest entries of what passes did (``at``, ``action``, ``memory``, ``other``, ``detail``), newest first."""

    last_pass_at: float | None
    in_progress: bool
    recent: tuple[dict[str, Any], ...]


def maintenance_state(graph: MemoryGraph, recent: int = 10) -> MaintenanceState:
    """The :class:`MaintenanceState` of ``graph``'s scope."""
    params = scope_params(graph.scope)
    with graph._lock:
        row = graph._conn.execute(
            "SELECT last_pass_at, pass_at FROM graph_maintenance WHERE user_id = ? AND agent_id = ? AND channel_id = ?",
            params,
        ).fetchone()
        # Newest log entries first, each checked for the scope (CROSS JOIN keeps SQLite walking the log, not
        # every memory of the scope looking for entries).
        log = graph._conn.execute(
            "SELECT l.at, l.action, l.memory_id, l.other_id, l.detail FROM graph_maintenance_log l"
            f" CROSS JOIN graph_memories m WHERE m.id = l.memory_id AND {SCOPE_CLAUSE} ORDER BY l.seq DESC LIMIT ?",
            (*params, recent),
        ).fetchall()
    entries = tuple({"at": iso(r[0]), "action": r[1], "memory": r[2], "other": r[3], "detail": r[4]} for r in log)
    return MaintenanceState(row[0] if row else None, bool(row and row[1] is not None), entries)
