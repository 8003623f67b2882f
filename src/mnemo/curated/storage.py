"""Where a curated pair lives: the seam between :class:`~mnemo.curated.MemoryStore` and its storage.

The store's semantics (frozen snapshot, limits, substring and id edits, refusal, history) are written once
against a :class:`Document` per target and a :class:`History`. A document is read and written only inside
its :meth:`~Document.locked` block, which writers of that document in every process take one at a time; the
store re-reads under the lock, so no host ever loses another's update. :func:`file_storage` keeps them as
``MEMORY.md`` / ``USER.md`` and a JSON-lines history in a directory; :mod:`mnemo.backends.postgres.curated` as rows
of a PostgreSQL database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .files import MemoryFile
from .history import CuratedHistory, HistoryRecord

FILENAMES = {"memory": "MEMORY.md", "user": "USER.md"}


class Document(Protocol):
    """One target's text."""

    @property
    def path(self) -> Path | str:
        """Where it lives, for messages (a file's path, or the database and row it names)."""
        ...

    def read_bytes(self) -> bytes | None:
        """Its bytes, ``None`` when it does not exist yet; raises ``UnreadableFile``."""
        ...

    def read_text(self) -> str:
        """Its text, ``""`` when it does not exist; raises ``UnreadableFile``."""
        ...

    def locked(self) -> AbstractContextManager[None]:
        """Hold the document's write lock (across processes and hosts)."""
        ...

    def write_text(self, text: str) -> None:
        """Replace its text durably; only inside :meth:`locked`. Raises ``OSError``."""
        ...

    def backup(self, raw: bytes) -> Path | str:
        """Keep a copy of ``raw`` and say where it is."""
        ...


class History(Protocol):
    """The record of every accepted write."""

    def append(
        self, target: str, operation: str, before: Sequence[str], after: Sequence[str], origin: Mapping[str, Any] | None
    ) -> HistoryRecord:
        """Record one write (inside the target's :meth:`Document.locked`); raises ``OSError`` on failure."""
        ...

    def records(self, target: str | None = None) -> list[HistoryRecord]:
        """Every record, oldest first (``target``'s only when given)."""
        ...

    def get(self, record_id: str) -> HistoryRecord | None:
        """The record ``record_id``, or ``None``."""
        ...


@dataclass(frozen=True)
class CuratedStorage:
    """A target's document for each of ``memory`` and ``user``, their history, and what closes them."""

    documents: Mapping[str, Document]
    history: History
    close: Callable[[], None] = field(default=lambda: None)


def file_storage(directory: str | Path) -> CuratedStorage:
    """``MEMORY.md``, ``USER.md`` and the history file in ``directory``."""
    directory = Path(directory)
    return CuratedStorage({t: MemoryFile(directory / name) for t, name in FILENAMES.items()}, CuratedHistory(directory))
