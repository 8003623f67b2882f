"""Reading the memory graph: one memory, listings, history, statistics, and hybrid recall."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..embeddings.queries import PrefetchedEmbedder, query_vectors_of
from ..errors import InvalidArgument
from . import recall as _recall
from .core import GraphCore, parse_time
from .errors import MemoryNotFound
from .schema import SCOPE_CLAUSE, SELECT_MEMORY, row_to_memory, scope_params
from .types import (
    Association,
    Memory,
    MemoryType,
    Relation,
    Scope,
    parse_memory_type,
)

# The newest memories (by seq) a recall checks for missing vectors while it does not yet know how far all
# are embedded.
SCAN_PER_RECALL = 2_000
# Vector hits searched ahead per recall; recall's own pool is smaller (a bigger request searches again).
PREFETCH_HITS = 200


class GraphReads(GraphCore):
    """What a graph answers without changing anything (recall counts an access, a hint written apart)."""

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
