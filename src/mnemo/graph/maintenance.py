"""Memory that maintains itself: one pass of decay, pruning, associations and consolidation over a scope.

* **Decay.** A memory loses ``DECAY_PER_DAY`` of its importance per day since it was last used (recalled)
  or, if never, written; one pass takes at most ``MAX_DECAY_PER_PASS`` of it. Staleness is counted from
  the last time decay was applied, so passes compound exactly and a second pass with nothing new changes
  nothing. A memory used since the last pass gets its original importance back (the access boost).
  ``identity`` memories and pinned ones never decay. Only ``importance`` changes (recall's ranking prior);
  the importance a memory was written with stays in ``base_importance``.
* **Pruning.** A memory whose importance fell below ``prune_below`` and that has not been used for
  ``prune_after_days`` is forgotten (soft: :meth:`MemoryGraph.unforget` brings it back), and the log says
  why.
* **Associations.** Each memory written since the last pass gets a ``related_to`` edge to its nearest
  neighbours (cosine >= ``link_threshold``, same scope; the vector index is per scope), marked as made by
  maintenance. Recall does not follow these: on LoCoMo following them cost 1.5 points of turn any@5, and
  the vector channel already finds a memory's near neighbours. They are there to browse (``mnemo graph
  show``) and for the agent's own ``relate``.
* **Consolidation.** A neighbour at cosine >= ``merge_threshold`` with the same subject is a near-duplicate:
  the newer memory supersedes the older through an ``updates`` edge and takes over its access count,
  importance and pin; both stay in history. Unless the two differ in a number, a date, a negation or a
  named value (:func:`conflict`): then they disagree, and get a ``contradicts`` edge instead. Memories whose
  origins are trusted differently (see :mod:`mnemo.provenance`) are never merged, only linked.

A pass runs under a lease (one row per scope, taken in a write transaction, with an expiry): one process
runs, the others skip, and a killed pass's lease runs out. Work is committed in batches together with the
cursors, so a pass that is killed, or stops at its work budget, resumes where it stopped. A bounded pass (the
one a session starts) never runs the embedding model: the link cursor waits at the first memory without a
vector until recall or an unbounded pass has embedded it.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..provenance import parse_origin
from .schema import scope_params
from .types import MemoryType, Relation
from .writes import GraphWrites

if TYPE_CHECKING:
    from .engine import GraphEngine

DAY = 86_400.0
DECAY_PER_DAY = 0.05
MAX_DECAY_PER_PASS = 0.5
PRUNE_BELOW = 0.1
PRUNE_AFTER_DAYS = 30.0
LINK_THRESHOLD = 0.85
MERGE_THRESHOLD = 0.95
# Neighbours looked at per new memory: the nearest few are the only ones that can pass the thresholds
# often enough to matter, and each edge costs recall a little.
NEIGHBOURS = 5
LEASE_SECONDS = 300.0
DECAY_BATCH = 2_000
LINK_BATCH = 256
# What a pass started with a session does at most per phase; the rest waits for the next session.
SESSION_BUDGET = 1_000
EXEMPT_TYPES = (MemoryType.IDENTITY.value,)
LINK_ORIGIN = "maintenance"


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    """What one call did. The counts are this call's new work; ``complete`` is false when the work budget
    ran out first (the pass resumes next time); ``skipped`` says why nothing ran (``"not due"``, ``"off"``,
    ``"busy"``: another process holds the lease); ``dry_run`` reports what would have been done."""

    decayed: int = 0
    boosted: int = 0
    pruned: int = 0
    linked: int = 0
    merged: int = 0
    contradictions: int = 0
    seconds: float = 0.0
    complete: bool = True
    skipped: str | None = None
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (``seconds`` rounded to the millisecond)."""
        found = asdict(self)
        found["seconds"] = round(self.seconds, 3)
        return found


# ---------------------------------------------------------------------------------------------- the guard

_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred"
    " thousand million billion first second third once twice half".split()
)
_DATE_WORDS = frozenset(
    "january february march april may june july august september october november december jan feb mar apr"
    " jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday today"
    " yesterday tomorrow morning evening night weekend week month year".split()
)
_NEGATIONS = frozenset("not no never none nobody nothing neither nor without cannot".split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_QUOTED = re.compile(r"[\"“”'‘’]([^\"“”'‘’]{1,80})[\"“”'‘’]")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _negated(words: list[str]) -> bool:
    count = sum(1 for w in words if w.casefold() in _NEGATIONS or w.casefold().endswith("n't"))
    return count % 2 == 1


def _names(text: str) -> set[str]:
    """Capitalised words that do not start a sentence, and quoted values: the named values of a text."""
    found = {w.casefold() for q in _QUOTED.findall(text) for w in _words(q)}
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        for word in _words(sentence)[1:]:
            if word[0].isupper() and word.casefold() not in _DATE_WORDS:
                found.add(word.casefold())
    return found


def conflict(a: str, b: str) -> str | None:
    """Why two near-identical texts disagree rather than repeat each other: ``"number"``, ``"date"``,
    ``"negation"`` or ``"name"`` when they differ in one (checked in that order), else ``None``."""
    words_a, words_b = _words(a), _words(b)
    lower_a, lower_b = {w.casefold() for w in words_a}, {w.casefold() for w in words_b}
    if set(_NUMBER.findall(a)) != set(_NUMBER.findall(b)) or lower_a & _NUMBER_WORDS != lower_b & _NUMBER_WORDS:
        return "number"
    if lower_a & _DATE_WORDS != lower_b & _DATE_WORDS:
        return "date"
    if _negated(words_a) != _negated(words_b):
        return "negation"
    # A name in one text that the other does not hold at all, even lowercased.
    if _names(a) - lower_b or _names(b) - lower_a:
        return "name"
    return None


# ---------------------------------------------------------------------------------------------- the pass


@dataclass(frozen=True, slots=True)
class _Rules:
    prune_below: float
    prune_after: float  # seconds
    link_threshold: float
    merge_threshold: float


def maintain(
    graph: GraphWrites,
    *,
    now: float | None = None,
    due_only: bool = False,
    interval_hours: float = 24.0,
    budget: int | None = None,
    dry_run: bool = False,
    prune_below: float = PRUNE_BELOW,
    prune_after_days: float = PRUNE_AFTER_DAYS,
    link_threshold: float = LINK_THRESHOLD,
    merge_threshold: float = MERGE_THRESHOLD,
    lease_seconds: float = LEASE_SECONDS,
) -> MaintenanceReport:
    """Run (or resume) a maintenance pass over ``graph``'s scope, dated ``now`` (default: the graph's clock).

    With ``due_only`` it runs only when a pass is in progress or the last one finished ``interval_hours``
    ago or more (``interval_hours <= 0``: never); the check is one indexed read. ``budget`` bounds the
    memories each phase examines in this call (``None``: no bound). ``dry_run`` computes the pass inside a
    transaction that is rolled back: the report says what a pass would do, and nothing changes.
    """
    started = time.perf_counter()
    rules = _Rules(
        _fraction(prune_below, "prune_below"), _non_negative(prune_after_days, "prune_after_days") * DAY,
        _fraction(link_threshold, "link_threshold"), _fraction(merge_threshold, "merge_threshold"),
    )  # fmt: skip
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise InvalidArgument("budget", "must be a positive integer or None")
    when = graph._clock() if now is None else _non_negative(now, "now")
    if due_only:
        if interval_hours <= 0:
            return MaintenanceReport(skipped="off")
        if not _due(graph, when, interval_hours):
            return MaintenanceReport(skipped="not due", seconds=time.perf_counter() - started)
    if graph.embedder is not None and budget is None:
        # Linking needs the new memories' vectors. A bounded pass (a session start) does not embed: the model
        # is slow (about 65 texts/s), so it links what recall has embedded and leaves the rest for later.
        graph.embed_pending()
    counts: Counter[str] = Counter()
    if dry_run:
        with graph._write() as conn:
            run = _Pass(graph, when, rules, _state(conn, graph), counts, None)
            try:
                _decay_phase(conn, run, budget)
                _link_phase(conn, run, budget)
            finally:
                conn.execute("ROLLBACK")
                conn.execute("BEGIN")  # write_transaction commits on the way out: give it an empty one
        return _report(counts, started, complete=True, dry_run=True)
    owner = uuid.uuid4().hex
    lease = _Lease(graph, owner, lease_seconds)
    if not lease.take():
        return MaintenanceReport(skipped="busy", seconds=time.perf_counter() - started)
    try:
        with graph._write() as conn:
            state = _state(conn, graph)
            if state["pass_at"] is None:
                conn.execute(
                    "UPDATE graph_maintenance SET pass_at = ?, decay_cursor = 0"
                    " WHERE user_id = ? AND agent_id = ? AND channel_id = ?",
                    (when, *scope_params(graph.scope)),
                )
                state["decay_cursor"] = 0
        run = _Pass(graph, when, rules, state, counts, owner)
        decayed_all = _in_batches(lambda conn, limit: _decay_phase(conn, run, limit), graph, lease, budget, DECAY_BATCH)
        linked_all = decayed_all and _in_batches(
            lambda conn, limit: _link_phase(conn, run, limit), graph, lease, budget, LINK_BATCH
        )
        if linked_all:
            with graph._write() as conn:
                conn.execute(
                    "UPDATE graph_maintenance SET last_pass_at = ?, pass_at = NULL"
                    " WHERE user_id = ? AND agent_id = ? AND channel_id = ? AND lease_owner = ?",
                    (when, *scope_params(graph.scope), owner),
                )
    finally:
        lease.release()
    return _report(counts, started, complete=linked_all)


def _report(counts: Counter[str], started: float, *, complete: bool, dry_run: bool = False) -> MaintenanceReport:
    return MaintenanceReport(
        **counts, seconds=time.perf_counter() - started, complete=complete, dry_run=dry_run
    )


def _fraction(value: Any, field: str) -> float:
    number = _non_negative(value, field)
    if number > 1:
        raise InvalidArgument(field, f"must be between 0 and 1, got {value!r}")
    return number


def _non_negative(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidArgument(field, f"must be a non-negative number, got {value!r}")
    return float(value)


_WHERE_SCOPE = "user_id = ? AND agent_id = ? AND channel_id = ?"


def _due(graph: GraphWrites, now: float, interval_hours: float) -> bool:
    with graph._lock:
        row = graph._conn.execute(
            f"SELECT last_pass_at, pass_at FROM graph_maintenance WHERE {_WHERE_SCOPE}", scope_params(graph.scope)
        ).fetchone()
    if row is None or row[1] is not None or row[0] is None:
        return True
    return now - row[0] >= interval_hours * 3600.0


def _state(conn: Any, graph: GraphWrites) -> dict[str, Any]:
    conn.execute(
        "INSERT INTO graph_maintenance (user_id, agent_id, channel_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        scope_params(graph.scope),
    )
    row = conn.execute(
        f"SELECT pass_at, decay_cursor, link_cursor FROM graph_maintenance WHERE {_WHERE_SCOPE}",
        scope_params(graph.scope),
    ).fetchone()
    return {"pass_at": row[0], "decay_cursor": row[1], "link_cursor": row[2]}


class _Lease:
    """The right to run this scope's pass, held until released or until it expires (a killed process)."""

    def __init__(self, graph: GraphWrites, owner: str, seconds: float) -> None:
        self.graph, self.owner, self.seconds = graph, owner, seconds

    def take(self) -> bool:
        now = self.graph._clock()
        with self.graph._write() as conn:
            _state(conn, self.graph)
            return (
                conn.execute(
                    "UPDATE graph_maintenance SET lease_owner = ?, lease_expires = ?"
                    f" WHERE {_WHERE_SCOPE} AND (lease_owner IS NULL OR lease_expires <= ?)",
                    (self.owner, now + self.seconds, *scope_params(self.graph.scope), now),
                ).rowcount
                == 1
            )

    def renew(self, conn: Any) -> bool:
        """Extend the lease inside the caller's write transaction; false if it was lost (expired and taken)."""
        return (
            conn.execute(
                f"UPDATE graph_maintenance SET lease_expires = ? WHERE {_WHERE_SCOPE} AND lease_owner = ?",
                (self.graph._clock() + self.seconds, *scope_params(self.graph.scope), self.owner),
            ).rowcount
            == 1
        )

    def release(self) -> None:
        with self.graph._write() as conn:
            conn.execute(
                "UPDATE graph_maintenance SET lease_owner = NULL, lease_expires = NULL"
                f" WHERE {_WHERE_SCOPE} AND lease_owner = ?",
                (*scope_params(self.graph.scope), self.owner),
            )


def _in_batches(step: Any, graph: GraphWrites, lease: _Lease, budget: int | None, batch: int) -> bool:
    """Run ``step`` (one batch in one write transaction, cursors included) until it reports the phase done,
    the budget is spent or the lease is lost; true when the phase is done."""
    spent = 0
    while budget is None or spent < budget:
        limit = batch if budget is None else min(batch, budget - spent)
        with graph._write() as conn:
            if not lease.renew(conn):
                return False
            examined, done = step(conn, limit)
        spent += max(examined, 1)
        if done:
            return True
    return False


def _log(conn: Any, at: float, memory_id: str, action: str, other: str | None, detail: str) -> None:
    conn.execute(
        "INSERT INTO graph_maintenance_log (at, memory_id, action, other_id, detail) VALUES (?, ?, ?, ?, ?)",
        (at, memory_id, action, other, detail),
    )


@dataclass(slots=True)
class _Pass:
    """One call's pass: its scope's graph, date, rules, cursors and counts; ``owner`` holds the lease (None:
    a dry run, whose cursors are not saved)."""

    graph: GraphWrites
    now: float
    rules: _Rules
    state: dict[str, Any]
    counts: Counter[str]
    owner: str | None

    def advance(self, conn: Any, cursor: str, seq: int) -> None:
        """Move ``cursor`` (``decay_cursor`` or ``link_cursor``) past ``seq``, in the caller's transaction."""
        self.state[cursor] = seq
        if self.owner is not None:
            conn.execute(
                f"UPDATE graph_maintenance SET {cursor} = ? WHERE {_WHERE_SCOPE}", (seq, *scope_params(self.graph.scope))
            )


# Decay, written once as SQL over one memory's columns (``:now`` the pass's time), so a pass over 100k memories
# is a few set-wise statements, not a Python loop with one UPDATE per row.
_BASE = "COALESCE(base_importance, importance)"
_BOOST = (
    "(last_accessed_at IS NOT NULL AND decayed_at IS NOT NULL AND last_accessed_at >= decayed_at"
    f" AND importance < {_BASE})"
)


@dataclass(frozen=True, slots=True)
class _DecaySql:
    """The decay expressions in one engine's dialect."""

    days: str
    level: str
    decaying: str

    @classmethod
    def of(cls, engine: GraphEngine) -> _DecaySql:
        days = f"((:now - {engine.greatest('COALESCE(decayed_at, 0)', 'COALESCE(last_accessed_at, 0)', 'created_at')}) / {DAY})"
        factor = engine.greatest(engine.power(str(1.0 - DECAY_PER_DAY), days), str(1.0 - MAX_DECAY_PER_PASS))
        level = f"(CASE WHEN {_BOOST} THEN {_BASE} ELSE importance END) * (CASE WHEN {days} >= 1 THEN {factor} ELSE 1 END)"
        plain = engine.plain
        # Keep the planner on the seq range (a batch) instead of the scope index (the whole scope).
        decaying = (
            f"seq > :after AND seq <= :upto AND {plain('user_id')} = :user AND {plain('agent_id')} = :agent"
            f" AND {plain('channel_id')} = :channel AND forgotten = 0 AND pinned = 0"
            f" AND type NOT IN ({', '.join(repr(t) for t in EXEMPT_TYPES)})"
        )
        return cls(days, level, decaying)


def _decay_phase(conn: Any, run: _Pass, limit: int | None) -> tuple[int, bool]:
    """Decay, boost and prune the next ``limit`` memories after the decay cursor; (examined, phase done)."""
    graph, now, rules, state, counts = run.graph, run.now, run.rules, run.state, run.counts
    user, agent, channel = scope_params(graph.scope)
    engine = graph._engine
    sql = _DecaySql.of(engine)
    examined, upto = conn.execute(
        f"SELECT count(*), max(seq) FROM (SELECT seq FROM graph_memories WHERE seq > ? AND {engine.plain('user_id')} = ?"
        f" AND {engine.plain('agent_id')} = ? AND {engine.plain('channel_id')} = ? AND forgotten = 0 ORDER BY seq"
        + ("" if limit is None else " LIMIT ?") + ") AS batch",
        (state["decay_cursor"], user, agent, channel, *(() if limit is None else (limit,))),
    ).fetchone()
    if not examined:
        return 0, True
    where = {"after": state["decay_cursor"], "upto": upto, "user": user, "agent": agent, "channel": channel, "now": now}
    boosted, decayed = conn.execute(
        f"SELECT coalesce(sum(CASE WHEN {_BOOST} THEN 1 ELSE 0 END), 0),"
        f" coalesce(sum(CASE WHEN {sql.days} >= 1 THEN 1 ELSE 0 END), 0) FROM graph_memories WHERE {sql.decaying}",
        where,
    ).fetchone()
    conn.execute(
        f"UPDATE graph_memories SET importance = {sql.level}, base_importance = {_BASE}, decayed_at = :now"
        f" WHERE {sql.decaying} AND ({_BOOST} OR {sql.days} >= 1)",
        where,
    )
    counts["boosted"] += boosted
    counts["decayed"] += decayed
    pruned = conn.execute(
        f"SELECT id, importance, {_BASE}, COALESCE(last_accessed_at, created_at) FROM graph_memories"
        f" WHERE {sql.decaying} AND importance < :below AND :now - COALESCE(last_accessed_at, created_at) >= :after_idle",
        {**where, "below": rules.prune_below, "after_idle": rules.prune_after},
    ).fetchall()
    for memory_id, level, base, used in pruned:
        _log(conn, now, memory_id, "pruned", None, f"importance {level:.3f} of {base:.3f}, unused for "
             f"{(now - used) / DAY:.0f} days")  # fmt: skip
    conn.executemany("UPDATE graph_memories SET forgotten = 1, updated_at = ? WHERE id = ?", [(now, p[0]) for p in pruned])
    counts["pruned"] += len(pruned)
    run.advance(conn, "decay_cursor", upto)
    return examined, limit is None or examined < limit


_NEIGHBOUR_FIELDS = (
    "m.seq, m.id, m.content, m.subject, m.forgotten, m.importance, m.base_importance, m.pinned, m.access_count,"
    " m.last_accessed_at, m.origin"
)


def _link_phase(conn: Any, run: _Pass, limit: int | None) -> tuple[int, bool]:
    """Link and consolidate the next ``limit`` memories written after the link cursor; (examined, done)."""
    graph, rules, state = run.graph, run.rules, run.state
    embedder = graph.embedder
    if embedder is None:
        return 0, True  # nothing to compare by; the cursor waits for an embedder
    engine, plain = graph._engine, graph._engine.plain
    rows = conn.execute(
        f"SELECT {_NEIGHBOUR_FIELDS}, {engine.vector_values('v.vector')} AS vector FROM graph_memories m"
        " LEFT JOIN graph_vectors v ON v.memory_id = m.id AND v.model = ? AND v.dim = ?"
        f" WHERE m.seq > ? AND {plain('m.user_id')} = ? AND {plain('m.agent_id')} = ? AND {plain('m.channel_id')} = ?"
        " ORDER BY m.seq" + ("" if limit is None else " LIMIT ?"),
        (embedder.name, embedder.dim, state["link_cursor"], *scope_params(graph.scope),
         *(() if limit is None else (limit,))),
    ).fetchall()  # fmt: skip
    waiting = next((i for i, r in enumerate(rows) if r["vector"] is None and not r["forgotten"]), None)
    if waiting is not None:
        rows = rows[:waiting]  # the cursor stops before the first memory not embedded yet
    live = [r for r in rows if not r["forgotten"]]
    if live:
        probes = engine.matrix([r["vector"] for r in live], embedder.dim)
        hits = graph._vectors.search_many(conn, graph.scope, embedder, probes, NEIGHBOURS + 1, rules.link_threshold)
        _connect(conn, graph, rules, live, hits, run.counts)
    if rows:
        run.advance(conn, "link_cursor", rows[-1]["seq"])
    return len(rows), waiting is not None or limit is None or len(rows) < limit


def _connect(
    conn: Any,
    graph: GraphWrites,
    rules: _Rules,
    new: list[Any],
    hits: list[list[tuple[Any, float]]],
    counts: Counter[str],
) -> None:
    wanted = {str(i) for found in hits for i, score in found if score >= rules.link_threshold}
    others = _rows_by_id(conn, wanted)
    gone: set[str] = set()  # superseded here or before: neither merged into nor linked again
    gone.update(_superseded(conn, wanted | {r["id"] for r in new}))
    now = graph._clock()
    for memory, found in zip(new, hits, strict=True):
        if memory["id"] in gone:
            continue
        for other_id, cosine in found:
            other = others.get(str(other_id))
            # The pair is handled once, by its newer memory, whether or not the older one is new too.
            if other is None or other["seq"] >= memory["seq"] or other["forgotten"] or other["id"] in gone:
                continue
            if cosine < rules.link_threshold or _connected(conn, memory["id"], other["id"]):
                continue
            weight = round(min(float(cosine), 1.0), 4)
            if cosine >= rules.merge_threshold and memory["subject"] == other["subject"] and _same_trust(memory, other):
                reason = conflict(memory["content"], other["content"])
                if reason is not None:
                    graph._link(conn, memory["id"], other["id"], Relation.CONTRADICTS, weight)
                    _log(conn, now, other["id"], "contradicted", memory["id"], f"differs in a {reason}")
                    counts["contradictions"] += 1
                else:
                    _merge(conn, graph, memory, other, now, weight)
                    gone.add(other["id"])
                    counts["merged"] += 1
                continue
            graph._link(conn, memory["id"], other["id"], Relation.RELATED_TO, weight)
            conn.execute(
                "UPDATE graph_associations SET origin = ? WHERE source_id = ? AND target_id = ? AND relation = ?",
                (LINK_ORIGIN, memory["id"], other["id"], Relation.RELATED_TO.value),
            )
            counts["linked"] += 1


def _same_trust(one: Any, other: Any) -> bool:
    """Whether two memories' origins are trusted alike: a merge never lets one stand in for the other."""
    return parse_origin(one["origin"]).trust is parse_origin(other["origin"]).trust


def _merge(conn: Any, graph: GraphWrites, newer: Any, older: Any, now: float, weight: float) -> None:
    """``newer`` supersedes its near-duplicate ``older`` and takes over its use and weight."""
    graph._link(conn, newer["id"], older["id"], Relation.UPDATES, 1.0)
    current = conn.execute(
        "SELECT importance, base_importance, access_count, last_accessed_at, pinned FROM graph_memories WHERE id = ?",
        (newer["id"],),
    ).fetchone()
    base_new = current[0] if current[1] is None else current[1]
    base_old = older["importance"] if older["base_importance"] is None else older["base_importance"]
    last_used = max((t for t in (current[3], older["last_accessed_at"]) if t is not None), default=None)
    conn.execute(
        "UPDATE graph_memories SET importance = ?, base_importance = ?, access_count = ?, last_accessed_at = ?,"
        " pinned = ? WHERE id = ?",
        (max(current[0], older["importance"]), max(base_new, base_old), current[2] + older["access_count"],
         last_used, int(bool(current[4] or older["pinned"])), newer["id"]),
    )  # fmt: skip
    _log(conn, now, older["id"], "merged", newer["id"], f"near-duplicate (cosine {weight:.3f})")


def _rows_by_id(conn: Any, ids: set[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    listed = sorted(ids)
    for start in range(0, len(listed), 500):  # stay under SQLite's bound-parameter limit
        chunk = listed[start : start + 500]
        for row in conn.execute(
            f"SELECT {_NEIGHBOUR_FIELDS} FROM graph_memories m WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk
        ):
            found[row["id"]] = row
    return found


def _superseded(conn: Any, ids: set[str]) -> set[str]:
    listed = sorted(ids)
    found: set[str] = set()
    for start in range(0, len(listed), 500):
        chunk = listed[start : start + 500]
        found.update(
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT target_id FROM graph_associations WHERE relation = 'updates'"
                f" AND target_id IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
        )
    return found


def _connected(conn: Any, a: str, b: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM graph_associations WHERE (source_id = ? AND target_id = ?) OR (source_id = ? AND target_id = ?)"
            " LIMIT 1",
            (a, b, b, a),
        ).fetchone()
        is not None
    )


def maintenance_log(graph: GraphWrites, memory_id: str) -> list[dict[str, Any]]:
    """What maintenance did to ``memory_id`` (pruned, merged into, contradicted by), oldest first."""
    from .._time import iso

    with graph._lock:
        rows = graph._conn.execute(
            "SELECT at, action, other_id, detail FROM graph_maintenance_log WHERE memory_id = ? ORDER BY seq",
            (memory_id,),
        ).fetchall()
    return [{"at": iso(r[0]), "action": r[1], "other": r[2], "detail": r[3]} for r in rows]


class GraphMaintenance(GraphWrites):
    """The graph's maintenance pass, as a method of the graph it maintains."""

    def maintain(self, now: float | None = None, **options: Any) -> MaintenanceReport:
        """Run a maintenance pass over this scope: see :func:`maintain`."""
        return maintain(self, now=now, **options)
