"""The curated store's history: one JSON line per write, appended, fsynced, never rewritten.

Every accepted write to ``MEMORY.md`` / ``USER.md`` (tool, CLI, API, batch, restore) appends a
:class:`HistoryRecord` holding the entries before and after, so an entry removed or rewritten by mistake
can be brought back. A refused write writes nothing here either.

The record is appended while the target file's lock is held, before the file is replaced, under a
second lock of its own (always taken after a target's, so never in the other order): writers to
either target, in any process, never interleave or lose records, and the entries a write overwrites are on
disk before they are gone. A crash mid-append leaves at most a torn last line; readers skip it, and the
next append first ends it with a newline so it can never merge with a good record.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files import fsync_directory
from .._time import iso
from .files import MemoryFile

HISTORY_FILENAME = ".mnemo-history.jsonl"


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One curated write: when, which target, what operation(s), the entries before and after, and where
    it came from (``origin``: e.g. ``{"via": "tool", "session_id": ..., "tool_call_id": ...}``)."""

    id: str
    time: float
    target: str
    operation: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    origin: Mapping[str, Any] = field(default_factory=dict)

    @property
    def removed(self) -> tuple[str, ...]:
        """Entries this write took away (removed, or replaced by other text)."""
        kept = set(self.after)
        return tuple(e for e in self.before if e not in kept)

    @property
    def added(self) -> tuple[str, ...]:
        """Entries this write introduced."""
        had = set(self.before)
        return tuple(e for e in self.after if e not in had)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (time as ISO 8601)."""
        return {
            "id": self.id,
            "time": iso(self.time),
            "target": self.target,
            "operation": self.operation,
            "removed": list(self.removed),
            "added": list(self.added),
            "before": list(self.before),
            "after": list(self.after),
            "origin": dict(self.origin),
        }

    def _line(self) -> bytes:
        payload = {
            "id": self.id, "time": self.time, "target": self.target, "operation": self.operation,
            "before": list(self.before), "after": list(self.after), "origin": dict(self.origin),
        }  # fmt: skip
        return (json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _parse(line: bytes) -> HistoryRecord | None:
    try:
        data = json.loads(line)
        return HistoryRecord(
            id=str(data["id"]),
            time=float(data["time"]),
            target=str(data["target"]),
            operation=str(data["operation"]),
            before=tuple(str(e) for e in data["before"]),
            after=tuple(str(e) for e in data["after"]),
            origin=dict(data.get("origin") or {}),
        )
    except (ValueError, KeyError, TypeError):
        return None


class CuratedHistory:
    """The history file of one memories directory."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / HISTORY_FILENAME

    def append(
        self, target: str, operation: str, before: Sequence[str], after: Sequence[str], origin: Mapping[str, Any] | None
    ) -> HistoryRecord:
        """Append one record durably and return it; raises ``OSError`` when it cannot be persisted."""
        record = HistoryRecord(
            "h" + secrets.token_hex(4), time.time(), target, operation, tuple(before), tuple(after), dict(origin or {})
        )
        with MemoryFile(self.path).locked():
            created = not self.path.exists()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                size = os.fstat(fd).st_size
                data = record._line()
                if size and not _ends_with_newline(self.path, size):
                    data = b"\n" + data  # a crash tore the last record: keep ours on a line of its own
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                fsync_directory(self.path.parent)
        return record

    def records(self, target: str | None = None) -> list[HistoryRecord]:
        """Every intact record, oldest first (only ``target``'s when given); torn or damaged lines are skipped."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        found = []
        for line in raw.split(b"\n"):
            record = _parse(line) if line.strip() else None
            if record is not None and (target is None or record.target == target):
                found.append(record)
        return found

    def get(self, record_id: str) -> HistoryRecord | None:
        """The record ``record_id``, or ``None``."""
        return next((r for r in self.records() if r.id == record_id), None)


def _ends_with_newline(path: Path, size: int) -> bool:
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        return handle.read(1) == b"\n"
