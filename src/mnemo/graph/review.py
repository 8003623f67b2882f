"""The review queue: writes kept out of every prompt until the user approves them.

A write whose origin is untrusted (see :mod:`mnemo.provenance`), or a user's write the threat scan flags,
is not applied: it is queued here, in mnemo's database beside the graph and in the same scope, as a
*payload* (what the write would do: a curated edit, or a graph memory) with the digest of that payload,
its provenance, the scan's findings and an expiry. Nothing reads the queue into a prompt, per-turn context
or tool result: recall, the bulletin and the curated blocks never see it. The operator lists, searches,
approves or rejects items (see :mod:`mnemo.review`, which applies an approved write).

An item moves once, from ``pending`` to ``approved``, ``rejected`` or ``expired``, in a transaction that
checks it is still pending, so two processes deciding at once cannot both win. Approval names the digest
of what the reviewer saw, so it binds that exact content.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .._time import iso
from ..errors import InvalidArgument, MnemoError, excerpt
from ..provenance import Provenance
from ..safety.scan import finding_labels, scan_many
from ..taint import details
from .schema import scope_params
from .store import MemoryGraph

DEFAULT_EXPIRE_DAYS = 30.0
_DAY = 86_400.0
_COLUMNS = (
    "id, kind, payload, digest, origin, origin_detail, findings, created_at, expires_at, state, decided_at, outcome"
)
_SCOPE = "user_id = ? AND agent_id = ? AND channel_id = ?"


class ReviewState(StrEnum):
    """Where an item stands."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class WriteKind(StrEnum):
    """What an item would write."""

    CURATED = "curated"  # payload: {"target", "operations": [{"action", "content", "old_text" | "id"}]}
    GRAPH = "graph"  # payload: {"content", "memory_type", "importance", "subject", "source"}


class ReviewNotFound(InvalidArgument):
    """No review item with this id in this scope."""

    def __init__(self, field: str, item_id: str) -> None:
        self.item_id = item_id
        super().__init__(field, f"no review item with id {excerpt(item_id)} in this scope")


class ReviewConflict(MnemoError):
    """The item cannot be decided as asked: it is no longer pending, or its content is not what the
    reviewer was shown (the digest differs)."""


def digest_of(kind: str, payload: Mapping[str, Any]) -> str:
    """The SHA-256 of a payload in canonical JSON: what an approval names."""
    text = json.dumps({"kind": kind, "payload": payload}, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """One queued write."""

    id: str
    kind: WriteKind
    payload: Mapping[str, Any]
    digest: str
    provenance: Provenance
    findings: tuple[Mapping[str, Any], ...]
    created_at: float
    expires_at: float | None
    state: ReviewState
    decided_at: float | None = None
    outcome: str = ""

    @property
    def texts(self) -> list[str]:
        """The content the write would store (one text per added or replacing entry)."""
        return _texts(self.kind, self.payload)

    @property
    def summary(self) -> str:
        """What the write would do, in a line: ``memory add: ...`` or ``graph fact: ...``."""
        if self.kind is WriteKind.GRAPH:
            return f"graph {self.payload.get('memory_type', 'fact')}: {self.payload.get('content', '')}"
        actions = ", ".join(
            f"{op['action']} {op.get('content') or op.get('old_text') or op.get('id') or ''}".strip()
            for op in self.payload.get("operations", ())
        )
        return f"{self.payload.get('target')} {actions}"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (times as ISO 8601)."""
        return {
            "id": self.id,
            "kind": self.kind.value,
            "state": self.state.value,
            "summary": self.summary,
            "payload": dict(self.payload),
            "digest": self.digest,
            "provenance": self.provenance.as_dict(),
            "findings": [dict(f) for f in self.findings],
            "created": iso(self.created_at),
            "expires": iso(self.expires_at),
            "decided": iso(self.decided_at),
            "outcome": self.outcome,
        }


def _texts(kind: WriteKind, payload: Mapping[str, Any]) -> list[str]:
    if kind is WriteKind.GRAPH:
        return [str(payload.get("content", ""))]
    return [str(op["content"]) for op in payload.get("operations", ()) if op.get("content")]


def _repeats(texts: list[str], pending: list[str]) -> bool:
    if texts == pending:
        return True
    wanted = details(" ".join(texts))
    return bool(wanted) and wanted <= details(" ".join(pending))


def _item(row: Sequence[Any], now: float) -> ReviewItem:
    item_id, kind, payload, digest, origin, detail, findings, created, expires, state, decided, outcome = row
    state = ReviewState(state)
    if state is ReviewState.PENDING and expires is not None and expires <= now:
        state = ReviewState.EXPIRED  # read as expired at once; the row is marked by the next expire()
    return ReviewItem(
        item_id, WriteKind(kind), json.loads(payload), digest, Provenance.stored(origin, detail),
        tuple(json.loads(findings)) if findings else (), created, expires, state, decided, outcome,
    )  # fmt: skip


class ReviewQueue:
    """The review queue of ``graph``'s database and scope; ``expire_days`` is how long an item waits
    (``None``: forever)."""

    def __init__(self, graph: MemoryGraph, *, expire_days: float | None = DEFAULT_EXPIRE_DAYS) -> None:
        if expire_days is not None and (isinstance(expire_days, bool) or not expire_days > 0):
            raise InvalidArgument("review_expire_days", f"must be a positive number of days, got {expire_days!r}")
        self.graph = graph
        self.expire_days = expire_days

    def submit(
        self,
        kind: WriteKind | str,
        payload: Mapping[str, Any],
        provenance: Provenance,
        findings: Sequence[Mapping[str, Any]] = (),
        *,
        conn: Any = None,
    ) -> ReviewItem:
        """Queue a write; inside the caller's write transaction when ``conn`` is given (extraction).

        A write that repeats one already awaiting review in this scope (the same text, or details all found in
        it: an extraction of the code a ``memory`` write holds) is not queued again, so the user confirms a
        fact once: the pending item is returned."""
        kind = WriteKind(kind)
        now = self.graph._clock()
        texts = _texts(kind, payload)
        twin = next((item for item in self.items(limit=1_000) if _repeats(texts, item.texts)), None) if texts else None
        if twin is not None:
            return twin
        if not findings:  # the scan is a second signal: the reviewer sees what it thinks of the text too
            findings = [
                f for found in scan_many(texts, threshold=self.graph.scan_threshold) for f in finding_labels(found)
            ]
        expires = None if self.expire_days is None else now + self.expire_days * _DAY
        item = ReviewItem(
            "r" + uuid.uuid4().hex[:12], kind, dict(payload), digest_of(kind.value, payload), provenance,
            tuple(dict(f) for f in findings), now, expires, ReviewState.PENDING,
        )  # fmt: skip
        values = (
            item.id, *scope_params(self.graph.scope), kind.value, json.dumps(item.payload, ensure_ascii=False),
            item.digest, provenance.origin.value, provenance.detail_json(),
            json.dumps(list(item.findings), ensure_ascii=False) if item.findings else "", now, expires,
        )  # fmt: skip
        sql = (
            "INSERT INTO graph_review (id, user_id, agent_id, channel_id, kind, payload, digest, origin, origin_detail,"
            " findings, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        if conn is not None:
            conn.execute(sql, values)
        else:
            with self.graph._write() as db:
                db.execute(sql, values)
        return item

    def items(
        self, state: ReviewState | str | None = ReviewState.PENDING, *, query: str | None = None, limit: int = 100
    ) -> list[ReviewItem]:
        """Items of this scope, newest first: those in ``state`` (all for ``None``) whose content contains
        ``query`` (case-insensitive) when given."""
        wanted = None if state is None else ReviewState(state)
        if query is not None and not isinstance(query, str):
            raise InvalidArgument("query", f"must be a string, got {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgument("limit", "must be a positive integer")
        now = self.graph._clock()
        with self.graph._lock:
            rows = self.graph._conn.execute(
                f"SELECT {_COLUMNS} FROM graph_review WHERE {_SCOPE} ORDER BY created_at DESC, id",
                scope_params(self.graph.scope),
            ).fetchall()
        found = []
        needle = (query or "").casefold()
        for row in rows:
            item = _item(row, now)
            if wanted is not None and item.state is not wanted:
                continue
            if needle and not any(needle in text.casefold() for text in item.texts):
                continue
            found.append(item)
            if len(found) >= limit:
                break
        return found

    def pending_count(self) -> int:
        """How many writes await review in this scope."""
        now = self.graph._clock()
        with self.graph._lock:
            return int(
                self.graph._conn.execute(
                    f"SELECT COUNT(*) FROM graph_review WHERE {_SCOPE} AND state = 'pending'"
                    " AND (expires_at IS NULL OR expires_at > ?)",
                    (*scope_params(self.graph.scope), now),
                ).fetchone()[0]
            )

    def get(self, item_id: Any, *, field: str = "id") -> ReviewItem:
        """The item ``item_id`` of this scope, or :class:`ReviewNotFound` naming ``field``."""
        if not isinstance(item_id, str) or not item_id.strip():
            raise InvalidArgument(field, "must be a non-empty review item id")
        with self.graph._lock:
            row = self.graph._conn.execute(
                f"SELECT {_COLUMNS} FROM graph_review WHERE id = ? AND {_SCOPE}",
                (item_id.strip(), *scope_params(self.graph.scope)),
            ).fetchone()
        if row is None:
            raise ReviewNotFound(field, item_id)
        return _item(row, self.graph._clock())

    def claim(self, item_id: Any, digest: str | None = None) -> ReviewItem:
        """Check ``item_id`` is pending, unexpired and (when ``digest`` is given) exactly what the reviewer
        saw, for an approval about to apply it; raises :class:`ReviewConflict` otherwise."""
        item = self.get(item_id)
        if item.state is not ReviewState.PENDING:
            raise ReviewConflict(f"review item {item.id} is {item.state.value}, not pending")
        if digest_of(item.kind.value, item.payload) != item.digest:
            raise ReviewConflict(f"review item {item.id} was altered after it was queued; it cannot be approved")
        if digest is not None and digest != item.digest:
            raise ReviewConflict(f"review item {item.id} is not the content you were shown (digest differs)")
        return item

    def decide(self, item: ReviewItem, state: ReviewState, outcome: str = "", *, conn: Any = None) -> ReviewItem:
        """Move a pending ``item`` to ``state``, once: raises :class:`ReviewConflict` if another decision
        came first (inside the caller's transaction when ``conn`` is given)."""
        now = self.graph._clock()
        sql = "UPDATE graph_review SET state = ?, decided_at = ?, outcome = ? WHERE id = ? AND state = 'pending'"
        if conn is not None:
            changed = conn.execute(sql, (state.value, now, outcome, item.id)).rowcount
        else:
            with self.graph._write() as db:
                changed = db.execute(sql, (state.value, now, outcome, item.id)).rowcount
        if changed != 1:
            raise ReviewConflict(f"review item {item.id} was decided by someone else meanwhile")
        return dataclasses.replace(item, state=state, decided_at=now, outcome=outcome)

    def reject(self, item_id: Any) -> ReviewItem:
        """Reject a pending item: it is kept (as rejected) and never applied."""
        return self.decide(self.claim(item_id), ReviewState.REJECTED)

    def expire(self) -> int:
        """Mark the pending items past their expiry as expired; returns how many."""
        now = self.graph._clock()
        with self.graph._write() as db:
            return db.execute(
                f"UPDATE graph_review SET state = 'expired', decided_at = ? WHERE {_SCOPE} AND state = 'pending'"
                " AND expires_at IS NOT NULL AND expires_at <= ?",
                (now, *scope_params(self.graph.scope), now),
            ).rowcount
