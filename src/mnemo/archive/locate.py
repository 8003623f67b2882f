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

# Texts matched per query: well under SQLite's bound-parameter limit with the lineage's session ids beside them.
_TEXTS_PER_QUERY = 500


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
    marks = ", ".join("?" * len(sessions))
    wanted = [
        (index, message.get("role"), message.get("content"))
        for index, message in enumerate(messages)
        if isinstance(message.get("role"), str) and isinstance(message.get("content"), str)
    ]
    # One query per chunk of texts rather than one per message: a compression hands over a whole session.
    texts = list({content for _, _, content in wanted})
    rows: dict[tuple[str, str], list[tuple[int, str, float]]] = {}
    for start in range(0, len(texts), _TEXTS_PER_QUERY):
        chunk = texts[start : start + _TEXTS_PER_QUERY]
        for message_id, session, created_at, role, content in conn.execute(
            f"SELECT id, session_id, created_at, role, content FROM messages WHERE session_id IN ({marks})"
            f" AND content IN ({', '.join('?' * len(chunk))})",
            (*sessions, *chunk),
        ).fetchall():
            rows.setdefault((role, content), []).append((message_id, session, created_at))
    for same in rows.values():
        same.sort()  # by id: the n-th occurrence of a text maps to its n-th row
    used: set[int] = set()
    for index, role, content in wanted:
        row = next((r for r in rows.get((role, content), []) if r[0] not in used), None)
        if row is not None:
            used.add(row[0])
            found[index] = ArchivedRef(row[0], row[1], row[2])
    return found
