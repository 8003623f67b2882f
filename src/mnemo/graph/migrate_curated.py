"""The one-time import of curated memory into the graph: ``MEMORY.md`` -> fact, ``USER.md`` -> preference.

Runs on the graph's first use with a memories directory and never again for that scope (a marker is
recorded in the same transaction as the imported memories). Later curated writes reach the graph through
the provider's ``on_memory_write`` mirror instead. Entries the threat scan blocks are skipped and logged,
and a file that cannot be read postpones the whole import rather than recording a partial one.

Every session start calls :func:`import_curated`, so once the marker is there it is the only thing read: one
key looked up, neither the curated files nor the scope's memories (comparing the files with what the graph
holds walks the whole scope: tens of milliseconds at 100k memories).
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..curated import MemoryStore
from ..errors import MnemoError
from .schema import meta_key
from .store import MemoryGraph
from .types import MemoryType

log = logging.getLogger("mnemo.graph")

MARKER = "curated_import"
TARGET_TYPES = {"memory": MemoryType.FACT, "user": MemoryType.PREFERENCE}


CURATED_PREFIX = "curated:"
"""How the ``source`` of every graph memory that mirrors a curated entry begins."""


def curated_source(target: str) -> str:
    """The ``source`` of graph memories that mirror curated target ``target``."""
    return f"{CURATED_PREFIX}{target}"


def import_curated(graph: MemoryGraph, memories_dir: str | Path) -> int | None:
    """Import the curated entries in ``memories_dir`` once; returns how many memories were created, or
    ``None`` when this scope already imported (or a file could not be read, so it will retry later)."""
    if _imported(graph):
        return None
    store = MemoryStore(memories_dir)
    store.load()
    items = []
    for target, kind in TARGET_TYPES.items():
        failure = store.read_failure(target)
        if failure is not None:
            log.warning("curated import postponed: %s", failure)
            return None
        # A graph restored from an export may already hold these entries without the import marker.
        present = {m.content for m in graph.memories(source=curated_source(target))}
        for entry in store.entries(target):
            if entry in present:
                continue
            try:
                graph.check_content(entry)
            except MnemoError as exc:
                log.warning("curated import skipped an entry of %s: %s", target, exc)
                continue
            items.append((entry, kind, curated_source(target)))
    return graph.remember_once(MARKER, items)


def _imported(graph: MemoryGraph) -> bool:
    # The marker is only ever added, so finding it needs no lock held across the import that follows:
    # ``remember_once`` checks it again under the write lock.
    with graph._lock:
        found = graph._conn.execute("SELECT 1 FROM graph_meta WHERE key = ?", (meta_key(MARKER, graph.scope),))
        return found.fetchone() is not None
