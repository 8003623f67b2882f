"""The memory graph store: typed memories and their associations in mnemo's database (``mnemo.db``, or
PostgreSQL: the engine seam is :mod:`mnemo.graph.engine`).

Every write is one transaction that writers of the same scope take one at a time (SQLite's ``BEGIN
IMMEDIATE``, a per-scope advisory lock on PostgreSQL), so several processes can share the database without
losing each other's memories; the full-text index is kept in step inside the same transaction, so a memory
is searchable the moment its write commits. Embedding is deferred: vectors are
computed in batches (at the next recall, or by :meth:`MemoryGraph.embed_pending`) and stored with the
model's name and dimension, so a change of model re-embeds instead of mixing vector spaces.

Nothing is hard-deleted through the normal API: :meth:`~MemoryGraph.forget` keeps the row and
replacing keeps the old version behind an ``updates`` edge. :meth:`~MemoryGraph.purge` is the separate,
explicit way to really delete.

The graph is written in parts, one concept each, that :class:`MemoryGraph` puts together:
:mod:`~mnemo.graph.core` (opening, scope, validation, embedding), :mod:`~mnemo.graph.reads` (reads and
recall), :mod:`~mnemo.graph.writes` (changes and restore) and :mod:`~mnemo.graph.maintenance` (the
maintenance pass, above the writes it uses).
"""

from __future__ import annotations

from .core import (
    EMBED_BATCH,
    EMBED_PER_RECALL,
    MAX_CONTENT_CHARS,
    MAX_SUBJECT_CHARS,
    Link,
    parse_time,
)
from .maintenance import GraphMaintenance
from .reads import SCAN_PER_RECALL, GraphReads
from .writes import RestoreCounts

__all__ = [
    "EMBED_BATCH",
    "EMBED_PER_RECALL",
    "MAX_CONTENT_CHARS",
    "MAX_SUBJECT_CHARS",
    "SCAN_PER_RECALL",
    "Link",
    "MemoryGraph",
    "RestoreCounts",
    "parse_time",
]


class MemoryGraph(GraphMaintenance, GraphReads):
    """Typed memories with importance, timestamps, typed associations and hybrid recall.

    ``engine`` is the database holding it (see :mod:`mnemo.graph.engine`): open one, and the graph on it, with
    :func:`mnemo.storage.open_graph` (a path to mnemo's SQLite database, an open SQLite connection, or a
    ``postgresql://`` URL); :meth:`close` closes the engine. Every read and write is confined to ``scope``. With
    ``embedder=None`` recall uses full text and the graph only, and is still complete. Each recall first
    embeds at most ``embed_per_recall`` pending memories.
    """

