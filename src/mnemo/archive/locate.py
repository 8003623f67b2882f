"""Finding archived messages again from their text: which archive row a message handed around by the agent
loop (``{"role", "content"}``, no id) is.

Context compression shows providers plain message dicts, so the memory graph asks here which rows they
are before linking what it extracts to them. Matching is by session (and the sessions it continues),
role and exact text, in order: the n-th occurrence of a repeated message maps to the n-th matching row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..scope import Scope


@dataclass(frozen=True, slots=True)
class ArchivedRef:
    """Where an archived message lives and when it was said."""

    message_id: int
    session_id: str
    created_at: float


def _lineage(conn: Any, session_id: str, scope: Scope) -> list[str]:
    """``session_id`` and the sessions it continues, newest first, all in ``scope``."""
    chain, current = [], session_id
    while current is not None and current not in chain:
        row = conn.execute(
            "SELECT parent_session_id FROM sessions WHERE id = ? AND user_id = ? AND agent_id = ? AND channel_id = ?",
            (current, *scope.as_params()),
        ).fetchone()
        if row is None:
            break
        chain.append(current)
        current = row[0]
    return chain


def locate_messages(
    conn: Any, scope: Scope, session_id: str, messages: Sequence[Mapping[str, Any]]
) -> list[ArchivedRef | None]:
    """The archive row of each message (``None`` where the archive has none): matched by ``session_id`` or
    a session it continues, in ``scope``, by role and exact text; each row is used at most once."""
    found: list[ArchivedRef | None] = [None] * len(messages)
    if not messages:
        return found
    sessions = _lineage(conn, session_id, scope)
    if not sessions:
        return found
    used: set[int] = set()
    marks = ", ".join("?" * len(sessions))
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            continue
        rows = conn.execute(
            f"SELECT id, session_id, created_at FROM messages WHERE session_id IN ({marks}) AND role = ? AND content = ?"
            " ORDER BY id",
            (*sessions, role, content),
        ).fetchall()
        row = next((r for r in rows if r[0] not in used), None)
        if row is not None:
            used.add(row[0])
            found[index] = ArchivedRef(row[0], row[1], row[2])
    return found
