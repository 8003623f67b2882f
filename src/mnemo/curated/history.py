"""The curated store's history: one JSON line per write, appended, fsynced, never rewritten.

Every accepted write to ``MEMORY.md`` / ``USER.md`` (tool, CLI, API, batch, restore) appends a
:class:`HistoryRecord` holding the entries before and after, so an entry removed or rewritten by mistake
can be brought back. A refused write writes nothing here either.

A line keeps what its write changed, not the whole list twice, so the file grows with the edits and not with
their square: ``edits`` are the ranges of the entries before that the write replaced, with what replaced them,
and the entries before are those after the target's previous record (``parent``, by id). A line keeps the
entries before in full instead when they are not that (a hand edit between two writes, the target's first
record, a record that cannot be read) and once the lines since the target's last full copy outweigh one
more, so a damaged line costs at most that much of the history after it and the file stays within about
twice what the edits alone take. Lines of the first format, whole ``before`` and ``after``, read as before
and mix with these. Once they hold more than :data:`REWRITE_FIRST_FORMAT_AT` bytes, the next append rewrites
the file in this form first (atomically and durably, under the history's lock; a line that cannot be read is
kept as it is), so a home that grew a large history before keeps it and gets the space back; otherwise the
file is only ever appended to.

The record is appended while the target file's lock is held, before the file is replaced, under a
second lock of its own (always taken after a target's, so never in the other order): writers to
either target, in any process, never interleave or lose records, and the entries a write overwrites are on
disk before they are gone. A crash mid-append leaves at most a torn last line; readers skip it, and the
next append first ends it with a newline so it can never merge with a good record.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from .._files import atomic_write, fsync_directory, remove_stale_temp_files
from .._time import iso
from .files import MemoryFile

HISTORY_FILENAME = ".mnemo-history.jsonl"

_log = logging.getLogger(__name__)

# A full copy of a small target is cheap: below this many bytes of changes since the last one, none is due.
_FULL_COPY_FLOOR = 4096

REWRITE_FIRST_FORMAT_AT = 1 << 20
"""Bytes of first-format lines above which an append rewrites the history file in the current form: a
one-time cost (about a second for 85 MB) that spares every later process reading them all."""


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


def _entry_edits(before: Sequence[str], after: Sequence[str]) -> list[list[Any]]:
    """What turns ``before`` into ``after``: ``[start, stop, replacement]`` ranges of ``before``, in order."""
    head, tail = 0, 0
    shorter = min(len(before), len(after))
    while head < shorter and before[head] == after[head]:
        head += 1
    while tail < shorter - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    old, new = before[head : len(before) - tail], after[head : len(after) - tail]
    return [
        [head + i1, head + i2, list(new[j1:j2])]
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        if tag != "equal"
    ]


def _apply_edits(before: tuple[str, ...], edits: Any) -> tuple[str, ...]:
    """``before`` with :func:`_entry_edits`' ``edits`` made; raises ``ValueError`` when they do not fit it."""
    result: list[str] = []
    done = 0
    for start, stop, replacement in edits:
        if not (type(start) is int and type(stop) is int and done <= start <= stop <= len(before)):
            raise ValueError("an edit outside the entries it applies to")
        if not isinstance(replacement, list) or not all(isinstance(entry, str) for entry in replacement):
            raise ValueError("an edit whose entries are not text")
        result += before[done:start]
        result += replacement
        done = stop
    result += before[done:]
    return tuple(result)


@dataclass(slots=True)
class _Tip:
    """A target's newest readable record: its id, its entries after, and the bytes stored since the last
    record to hold its entries in full."""

    id: str
    entries: tuple[str, ...]
    since_full_copy: int


class HistoryReplay:
    """Stored records, fed oldest first, read back as :class:`HistoryRecord`\\ s; and how to store the next.

    Both backends store a record as the same JSON object (see the module docstring): ``id``, ``time``,
    ``target``, ``operation``, ``origin``, ``edits``, and ``parent`` or ``before``; or, in the first format,
    ``before`` and ``after``. A replay keeps each target's newest record, from which the next continues.
    """

    def __init__(self) -> None:
        self._tips: dict[str, _Tip] = {}
        self.first_format_bytes = 0
        """How many bytes of the records fed were in the first format."""

    def feed(self, data: Any, size: int) -> HistoryRecord | None:
        """The record stored as ``data`` (taking ``size`` bytes), or ``None`` when it is damaged or continues
        from a record that was not read (its target's next full copy picks the history up again)."""
        try:
            target = str(data["target"])
            tip = self._tips.get(target)
            if "after" in data:  # the first format: both lists whole
                before, after = _texts(data["before"]), _texts(data["after"])
                grown = 0
                self.first_format_bytes += size
            else:
                if "before" in data:
                    before, grown = _texts(data["before"]), 0
                elif tip is not None and data.get("parent") == tip.id:
                    before, grown = tip.entries, tip.since_full_copy + size
                else:
                    return None
                after = _apply_edits(before, data["edits"])
            record = HistoryRecord(
                str(data["id"]), float(data["time"]), target, str(data["operation"]), before, after,
                dict(data.get("origin") or {}),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None
        self._tips[target] = _Tip(record.id, after, grown)
        return record

    def stored(self, record: HistoryRecord) -> dict[str, Any]:
        """How to store ``record``, the next write to its target after those fed: continuing from the
        target's newest record when that left the entries this write found, else with them in full."""
        fields: dict[str, Any] = {
            "id": record.id, "time": record.time, "target": record.target, "operation": record.operation,
            "edits": _entry_edits(record.before, record.after), "origin": dict(record.origin),
        }  # fmt: skip
        tip = self._tips.get(record.target)
        if tip is not None and tip.entries == record.before:
            full_copy = sum(len(entry.encode("utf-8", "surrogatepass")) + 4 for entry in record.before)
            if tip.since_full_copy + len(_encode(fields)) <= max(_FULL_COPY_FLOOR, full_copy):
                return {**fields, "parent": tip.id}
        return {**fields, "before": list(record.before)}


def _texts(values: Any) -> tuple[str, ...]:
    if not isinstance(values, list):
        raise TypeError("entries must be a list")
    return tuple(str(value) for value in values)


def _encode(fields: Mapping[str, Any]) -> bytes:
    return (json.dumps(fields, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _feed_line(replay: HistoryReplay, line: bytes) -> HistoryRecord | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return replay.feed(data, len(line))


class CuratedHistory:
    """The history file of one memories directory."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / HISTORY_FILENAME
        # What this object has read of the file (its identity and first bytes, how far, the targets' tips
        # there), so an append reads only the lines written since its last one, by any process.
        self._read_of: tuple[int, int] | None = None
        self._head = b""
        self._read_to = 0
        self._replay = HistoryReplay()

    def append(
        self, target: str, operation: str, before: Sequence[str], after: Sequence[str], origin: Mapping[str, Any] | None
    ) -> HistoryRecord:
        """Append one record durably and return it; raises ``OSError`` when it cannot be persisted."""
        record = HistoryRecord(
            "h" + secrets.token_hex(4), time.time(), target, operation, tuple(before), tuple(after), dict(origin or {})
        )
        with MemoryFile(self.path).locked():
            created = not self.path.exists()
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                torn = self._catch_up(fd)
                if self._replay.first_format_bytes > REWRITE_FIRST_FORMAT_AT and self._rewritten():
                    os.close(fd)  # the file it had open is gone
                    fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
                    torn = self._catch_up(fd)
                data = _encode(self._replay.stored(record))
                if torn:
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

    def _rewritten(self) -> bool:
        """Replace the file (under its lock) with the same records in the current form, keeping any line that
        cannot be read as it is; whether it was (when it could not be, the old file stays and is appended to)."""
        reading, writing = HistoryReplay(), HistoryReplay()
        lines = []
        for line in self.path.read_bytes().split(b"\n"):
            if not line.strip():
                continue
            record = _feed_line(reading, line)
            if record is None:
                lines.append(line + b"\n")
                continue
            fields = writing.stored(record)
            lines.append(_encode(fields))
            writing.feed(fields, len(lines[-1]))
        remove_stale_temp_files(self.path, 0)  # an earlier rewrite's, killed midway
        try:
            atomic_write(self.path, *lines)
        except OSError as exc:
            _log.warning("could not rewrite the curated history %s in its compact form: %s", self.path, exc)
            return False
        return True

    def _catch_up(self, fd: int) -> bool:
        """Read the lines added to the file open at ``fd`` since this object last did (all of them for a file
        it has not seen), as a reader would; whether the file ends in a torn line, which the caller ends."""
        stat = os.fstat(fd)
        # A file removed and made again can get the inode back; not its first bytes (a record's random id).
        head = os.pread(fd, 64, 0)
        same = self._read_of == (stat.st_dev, stat.st_ino) and head.startswith(self._head)
        if not same or stat.st_size < self._read_to:
            self._read_to, self._replay = 0, HistoryReplay()
        self._read_of, self._head = (stat.st_dev, stat.st_ino), head
        for line in os.pread(fd, stat.st_size - self._read_to, self._read_to).split(b"\n"):
            if line.strip():
                _feed_line(self._replay, line)
        self._read_to = stat.st_size
        return stat.st_size > 0 and os.pread(fd, 1, stat.st_size - 1) != b"\n"

    def records(self, target: str | None = None) -> list[HistoryRecord]:
        """Every intact record, oldest first (only ``target``'s when given); torn or damaged lines are skipped."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        replay = HistoryReplay()
        found = []
        for line in raw.split(b"\n"):
            record = _feed_line(replay, line) if line.strip() else None
            if record is not None and (target is None or record.target == target):
                found.append(record)
        return found

    def get(self, record_id: str) -> HistoryRecord | None:
        """The record ``record_id``, or ``None``."""
        return next((r for r in self.records() if r.id == record_id), None)
