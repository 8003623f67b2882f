"""The memory graph: unbounded typed memories with importance, timestamps and typed associations,
found by hybrid full-text + vector + graph recall, without an LLM on the write or read path."""

from .bulletin import render_bulletin
from .errors import BlockedContent, ImportConflict, MemoryNotFound
from .maintenance import MaintenanceReport
from .migrate_curated import import_curated
from .recall import RecallResult
from .store import MemoryGraph, RestoreCounts
from .transfer import export_json, export_markdown, import_json
from .types import (
    DEFAULT_IMPORTANCE,
    EDGE_MULTIPLIER,
    Association,
    Memory,
    MemoryType,
    Relation,
    Scope,
)

__all__ = [
    "DEFAULT_IMPORTANCE",
    "EDGE_MULTIPLIER",
    "Association",
    "BlockedContent",
    "ImportConflict",
    "MaintenanceReport",
    "Memory",
    "MemoryGraph",
    "MemoryNotFound",
    "MemoryType",
    "RecallResult",
    "Relation",
    "RestoreCounts",
    "Scope",
    "export_json",
    "export_markdown",
    "import_curated",
    "import_json",
    "render_bulletin",
]
