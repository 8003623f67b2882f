"""The session archive: every message of every session in SQLite, searchable through FTS5."""

from .importer import import_jsonl
from .records import Hit, SessionHits, SessionInfo, StoredMessage
from .store import SessionArchive, SessionNotFound

__all__ = [
    "Hit",
    "SessionArchive",
    "SessionHits",
    "SessionInfo",
    "SessionNotFound",
    "StoredMessage",
    "import_jsonl",
]
