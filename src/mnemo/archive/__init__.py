"""The session archive: every message of every session in SQLite, searchable through FTS5."""

from .importer import ImportReport, import_jsonl
from .records import Hit, SessionHits, SessionInfo, StoredMessage
from .store import SessionArchive, SessionNotFound

__all__ = [
    "Hit",
    "ImportReport",
    "SessionArchive",
    "SessionHits",
    "SessionInfo",
    "SessionNotFound",
    "StoredMessage",
    "import_jsonl",
]
