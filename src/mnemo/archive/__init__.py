"""The session archive: every message of every session, searchable in milliseconds: in SQLite with FTS5 by
default, in PostgreSQL when a ``postgresql://`` database URL is given (see :func:`open_archive`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .base import Archive, SessionNotFound
from .importer import ImportReport, import_jsonl
from .records import Hit, SessionHits, SessionInfo, StoredMessage
from .store import SessionArchive

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder
    from ..scope import Scope

__all__ = [
    "Archive",
    "Hit",
    "ImportReport",
    "SessionArchive",
    "SessionHits",
    "SessionInfo",
    "SessionNotFound",
    "StoredMessage",
    "import_jsonl",
    "open_archive",
]


def open_archive(
    target: str | Path, *, embedder: Embedder | None = None, scope: Scope | None = None, embed_at_search: bool = True
) -> Archive:
    """The archive at ``target``: a ``postgresql://`` URL opens :class:`~mnemo.postgres.PostgresArchive`,
    anything else is the path of an SQLite file (:class:`SessionArchive`). ``embed_at_search=False`` for an
    archive whose new messages something else embeds (a search then never waits on a backlog)."""
    from ..postgres.connection import is_url

    if is_url(target):
        from ..postgres.archive import PostgresArchive

        return PostgresArchive(str(target), embedder=embedder, scope=scope, embed_at_search=embed_at_search)
    return SessionArchive(target, embedder=embedder, scope=scope, embed_at_search=embed_at_search)
