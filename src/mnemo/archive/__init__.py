"""The session archive: every message of every session, searchable in milliseconds. What an archive does is
written once in :class:`Archive`; its backends (SQLite with FTS5 by default, PostgreSQL for a
``postgresql://`` database URL) live in :mod:`mnemo.backends`, and :func:`mnemo.storage.open_archive` opens
one."""

from __future__ import annotations

from .base import Archive, SessionNotFound
from .importer import ImportReport, import_jsonl
from .records import Hit, SessionHits, SessionInfo, StoredMessage

__all__ = [
    "Archive",
    "Hit",
    "ImportReport",
    "SessionHits",
    "SessionInfo",
    "SessionNotFound",
    "StoredMessage",
    "import_jsonl",
]

