"""Which backend holds each store: the one place that knows the backends, above them and below the doors.

Each domain declares the storage it needs (the curated pair: :class:`~mnemo.curated.storage.CuratedStorage`;
the archive: :class:`~mnemo.archive.base.Archive`; the graph: :class:`~mnemo.graph.engine.GraphEngine`) and
never imports an implementation. The backends (:mod:`mnemo.backends.sqlite`, :mod:`mnemo.backends.postgres`)
implement them. The functions here choose one from a database name or the settings; the agent, the CLI, the
MCP server, the providers and the integrations open their stores through them. A ``postgresql://`` URL means
PostgreSQL (its modules, and psycopg, load only then); anything else is a path to mnemo's SQLite database.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backends.postgres.connection import is_url

if TYPE_CHECKING:
    from .archive import Archive
    from .config import Settings
    from .curated import MemoryStore
    from .embeddings.protocol import Embedder
    from .graph import MemoryGraph
    from .graph.engine import GraphEngine
    from .scope import Scope

__all__ = ["is_url", "open_archive", "open_curated", "open_graph", "open_graph_engine", "open_home_archive"]

Database = str | Path | sqlite3.Connection


def open_graph_engine(database: Database) -> GraphEngine:
    """The engine holding the graph in ``database``: a ``postgresql://`` URL (tables in mnemo's schema of that
    database, vectors searched by pgvector), a path to mnemo's SQLite database (opened and owned, vector files
    beside it), or an open SQLite connection (borrowed: closing the graph leaves it open)."""
    if is_url(database):
        from .backends.postgres.graph import PostgresEngine

        return PostgresEngine(str(database))
    from .backends.sqlite.graph import SqliteEngine

    return SqliteEngine(database)


def open_graph(database: Database, *, scan_threshold: float | None = None, **options: Any) -> MemoryGraph:
    """A :class:`~mnemo.graph.MemoryGraph` on ``database`` (see :func:`open_graph_engine`); ``options`` are the
    graph's own keywords (``scope``, ``embedder``, ``max_content_chars``, ``embed_per_recall``, ``clock``)."""
    from .graph import MemoryGraph
    from .safety.scan import check_threshold

    check_threshold(scan_threshold)  # a bad threshold is refused before the database is opened
    return MemoryGraph(open_graph_engine(database), scan_threshold=scan_threshold, **options)


def open_archive(
    target: str | Path, *, embedder: Embedder | None = None, scope: Scope | None = None, embed_at_search: bool = True
) -> Archive:
    """The archive at ``target``: a ``postgresql://`` URL opens
    :class:`~mnemo.backends.postgres.archive.PostgresArchive`, anything else is the path of an SQLite file
    (:class:`~mnemo.backends.sqlite.archive.SessionArchive`). ``embed_at_search=False`` for an archive whose
    new messages something else embeds (a search then never waits on a backlog)."""
    if is_url(target):
        from .backends.postgres.archive import PostgresArchive

        return PostgresArchive(str(target), embedder=embedder, scope=scope, embed_at_search=embed_at_search)
    from .backends.sqlite.archive import SessionArchive

    return SessionArchive(target, embedder=embedder, scope=scope, embed_at_search=embed_at_search)


def open_home_archive(home: str | Path | None = None) -> Archive:
    """The archive of ``home`` (default: ``$MNEMO_HOME`` or ``~/.mnemo``) in the configured scope: the SQLite
    archive, or PostgreSQL's when the ``database_url`` setting names a server."""
    from .config import load_settings

    settings = load_settings(home)
    return open_archive(settings.database_target, scope=settings.scope)


def open_curated(settings: Settings) -> MemoryStore:
    """The curated store the settings name: ``MEMORY.md`` / ``USER.md`` in ``settings.memories_dir``, or, with
    ``curated_backend = "postgres"``, rows of the ``database_url``'s database; with the configured limits and
    scan threshold."""
    from .curated import MemoryStore

    storage = None
    if settings.curated_backend == "postgres":
        from .backends.postgres.curated import postgres_storage

        storage = postgres_storage(str(settings.database_url), settings.curated_scope)
    return MemoryStore(
        settings.memories_dir,
        settings.memory_char_limit,
        settings.user_char_limit,
        scan_threshold=settings.scan_threshold,
        storage=storage,
    )
