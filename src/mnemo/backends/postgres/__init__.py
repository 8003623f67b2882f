"""mnemo on PostgreSQL: the session archive (and, as they move over, the other stores) in one database that
several hosts share, chosen by the ``database_url`` setting (``postgresql://...``; ``MNEMO_DATABASE_URL``).

Needs the ``postgres`` extra (psycopg 3 and its pool) and, in the database, the ``vector`` (pgvector) and
``pg_trgm`` extensions. SQLite in the home stays the default: nothing here is loaded unless a URL is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .connection import is_url, redact

if TYPE_CHECKING:
    from .archive import PostgresArchive
    from .connection import PostgresDatabase

__all__ = ["PostgresArchive", "PostgresDatabase", "is_url", "redact"]


def __getattr__(name: str) -> Any:
    # The stores load only when a URL is used, so `import mnemo` stays as light as before.
    if name == "PostgresArchive":
        from .archive import PostgresArchive

        return PostgresArchive
    if name == "PostgresDatabase":
        from .connection import PostgresDatabase

        return PostgresDatabase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
