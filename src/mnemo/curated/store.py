"""``MemoryStore``: the bounded ``MEMORY.md`` / ``USER.md`` pair an agent curates for itself.

Two views of each target: the *snapshot*, rendered once by :meth:`MemoryStore.load` for the system
prompt and frozen until the next load (so the prompt cache stays valid for a whole session), and the
*live entries*, which follow every write at once. Every edit is a read-modify-write under the file's
exclusive lock, re-reading the file first, so concurrent processes never lose each other's updates.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._db import DatabaseError
from ..errors import InvalidArgument, check_text, excerpt
from ..provenance import Origin, Provenance
from ..safety.scan import check_threshold, scan
from .entries import (
    ENTRY_DELIMITER,
    dedupe,
    entry_id,
    join_entries,
    joined_length,
    parse_entries,
    survives_round_trip,
)
from .errors import (
    AmbiguousMatch,
    BlockedContent,
    DelimiterInContent,
    EmptyContent,
    MemoryFileDrifted,
    MemoryOpError,
    MemoryReadFailed,
    MemoryWriteFailed,
    NoMatchingEntry,
    OverBudget,
    StaleEntryId,
    UnknownHistoryRecord,
)
from .files import UnreadableFile, decode
from .history import HistoryRecord
from .ops import Add, MemoryOp, MemoryOpOutcome, Remove, Replace
from .render import blocked_placeholder, render_block
from .storage import CuratedStorage, file_storage

DEFAULT_MEMORY_CHAR_LIMIT = 2200
DEFAULT_USER_CHAR_LIMIT = 1375

TARGETS = ("memory", "user")

_log = logging.getLogger(__name__)


def check_target(target: object) -> str:
    """Return ``target`` if it names a store; raise :class:`InvalidArgument` (a ``ValueError``) otherwise."""
    if target not in TARGETS:
        raise InvalidArgument("target", f"must be 'memory' or 'user', got {excerpt(target)}")
    return target  # type: ignore[return-value]


class MemoryStore:
    """The curated memory in ``directory`` (``MEMORY.md`` and ``USER.md``), or in ``storage`` when given
    (see :mod:`mnemo.curated.storage`; :func:`mnemo.storage.open_curated` picks it from ``curated_backend``).

    Safe to share between threads; several processes (and, on PostgreSQL, hosts) may use it at once.
    """

    def __init__(
        self,
        directory: str | Path,
        memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT,
        user_char_limit: int = DEFAULT_USER_CHAR_LIMIT,
        *,
        scan_threshold: float | None = None,
        storage: CuratedStorage | None = None,
    ) -> None:
        for name, limit in (("memory_char_limit", memory_char_limit), ("user_char_limit", user_char_limit)):
            if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
                raise InvalidArgument(name, f"must be a positive integer, got {limit!r}")
        self.directory = Path(directory)
        self._storage = storage if storage is not None else file_storage(self.directory)
        self._files = self._storage.documents
        self.history = self._storage.history
        self._limits = {"memory": memory_char_limit, "user": user_char_limit}
        self._entries: dict[str, tuple[str, ...]] = {t: () for t in TARGETS}
        self._snapshots: dict[str, str | None] = {t: None for t in TARGETS}
        self._frozen: dict[str, tuple[str, ...]] = {t: () for t in TARGETS}
        self._read_failures: dict[str, MemoryReadFailed] = {}
        # One thread at a time per store; the flock (per open file) then orders processes and stores.
        self._lock = threading.RLock()
        self._counted_failures = 0
        self._scan_threshold = scan_threshold
        check_threshold(scan_threshold)  # a bad threshold is refused here, not at the first write

    def close(self) -> None:
        """Release what the storage holds open (a database connection); the files need nothing."""
        self._storage.close()

    # -- reading ------------------------------------------------------------------------------

    def load(self) -> None:
        """Read both files, de-duplicate, and freeze the snapshot for the system prompt.

        A file that exists but cannot be read loads as empty (its snapshot is ``None``) and every write
        to it is refused; :meth:`read_failure` tells why.
        """
        with self._lock:
            for target in TARGETS:
                try:
                    entries = tuple(dedupe(parse_entries(self._files[target].read_text())))
                except UnreadableFile as exc:
                    failure = self._read_failed(target, exc, ())
                    _log.warning("%s", failure)
                    self._read_failures[target] = failure
                    entries = ()
                else:
                    self._read_failures.pop(target, None)
                self._entries[target] = entries
                self._frozen[target] = entries
                self._snapshots[target] = self._render(target, entries) if entries else None

    def render_snapshot(self, target: str) -> str | None:
        """The block frozen at the last :meth:`load`; ``None`` if the target was empty (or not loaded)."""
        return self._snapshots[check_target(target)]

    def frozen_entries(self, target: str) -> tuple[str, ...]:
        """The entries the snapshot was rendered from at the last :meth:`load` (raw text, unblocked)."""
        return self._frozen[check_target(target)]

    def entries(self, target: str) -> tuple[str, ...]:
        """The live entries: as of the last load or edit through this store, whichever came later."""
        return self._entries[check_target(target)]

    def char_limit(self, target: str) -> int:
        """The target's character limit."""
        return self._limits[check_target(target)]

    def path(self, target: str) -> Path | str:
        """The target's file (on PostgreSQL: the database and row, as a path-like name for messages)."""
        return self._files[check_target(target)].path

    def read_failure(self, target: str) -> MemoryReadFailed | None:
        """Why the target's file could not be read at the last :meth:`load`, or ``None``."""
        return self._read_failures.get(check_target(target))

    # -- editing ------------------------------------------------------------------------------

    def apply(self, target: str, op: MemoryOp, *, origin: Mapping[str, Any] | None = None) -> MemoryOpOutcome:
        """Apply one operation; raise a :class:`MemoryOpError` subclass, writing nothing, on refusal.

        ``origin`` (who asked: ``via``, ``session_id``, ``tool_call_id``...) goes into the history record.
        """
        return self._edit(check_target(target), [op], batch=False, origin=origin)

    def apply_batch(
        self, target: str, ops: Sequence[MemoryOp], *, origin: Mapping[str, Any] | None = None
    ) -> MemoryOpOutcome:
        """Apply ``ops`` in order as one write: all or nothing, the budget checked on the final state.

        A refusal carries ``op_index``, the position of the operation that failed.
        """
        target = check_target(target)
        ops = list(ops)
        if not ops:
            raise InvalidArgument("operations", "must hold at least one operation")
        return self._edit(target, ops, batch=True, origin=origin)

    def restore(
        self, record_id: str, *, whole: bool = False, origin: Mapping[str, Any] | None = None
    ) -> MemoryOpOutcome:
        """Bring back what history record ``record_id`` took away, as a new write under the same limit and
        scan as any other (so it can be refused, with the reason).

        By default the entries that write removed or replaced are added back; with ``whole`` the target
        is set back to its entries from just before that write.
        """
        record = self.history.get(record_id) if isinstance(record_id, str) else None
        if record is None:
            raise UnknownHistoryRecord(str(record_id), target="memory")
        target = record.target
        current = self._read_current(target)
        if whole:
            wanted = set(record.before)
            ops: list[MemoryOp] = [Remove(e) for e in current if e not in wanted]
            ops += [Add(e) for e in record.before if e not in current]
        else:
            ops = [Add(e) for e in record.removed if e not in current]
        if not ops:
            entries = tuple(current)
            return MemoryOpOutcome(
                target, "Nothing to restore: those entries are already there.", len(entries),
                joined_length(entries), self._limits[target], entries,
            )  # fmt: skip
        return self._edit(target, ops, batch=True, origin={**(origin or {}), "restored": record.id}, label="restore")

    def provenance_of(self, target: str, entry: str) -> Provenance:
        """Who wrote ``entry`` of ``target``: the provenance the history recorded for the newest write that
        added it; ``unknown`` for an entry no recorded write added (a hand edit, another program's write,
        or a write from before mnemo recorded provenance)."""
        target = check_target(target)
        wanted = entry.strip()
        for record in reversed(self.history.records(target)):
            if wanted in record.added:
                recorded = record.origin.get("provenance")
                return Provenance.from_dict(recorded) if isinstance(recorded, Mapping) else Provenance()
        return Provenance()

    def recent_removals(self, target: str, limit: int = 10) -> list[HistoryRecord]:
        """The newest history records of ``target`` that took entries away, newest first."""
        target = check_target(target)
        return [r for r in reversed(self.history.records(target)) if r.removed][:limit]

    def _read_current(self, target: str) -> list[str]:
        try:
            return dedupe(parse_entries(self._files[target].read_text()))
        except UnreadableFile as exc:
            raise self._read_failed(target, exc, self._entries[target]) from exc

    # -- per-turn failure count (the tool's retry brake) --------------------------------------

    def new_turn(self) -> None:
        """Start a new conversational turn: forget the failures counted so far."""
        with self._lock:
            self._counted_failures = 0

    def count_failure(self) -> int:
        """Count one more failed attempt in this turn and return the count."""
        with self._lock:
            self._counted_failures += 1
            return self._counted_failures

    # -- internals ----------------------------------------------------------------------------

    def _render(self, target: str, entries: tuple[str, ...]) -> str:
        shown = []
        for entry in entries:
            findings = scan(entry, threshold=self._scan_threshold)
            shown.append(blocked_placeholder(dict.fromkeys(f.category for f in findings)) if findings else entry)
        return render_block(target, shown, joined_length(entries), self._limits[target])

    def _read_failed(self, target: str, exc: UnreadableFile, entries: Iterable[str]) -> MemoryReadFailed:
        return MemoryReadFailed(
            self._files[target].path, exc.reason, target=target, current_entries=entries, char_limit=self._limits[target]
        )

    def _edit(
        self,
        target: str,
        ops: list[MemoryOp],
        *,
        batch: bool,
        origin: Mapping[str, Any] | None = None,
        label: str | None = None,
    ) -> MemoryOpOutcome:
        for index, op in enumerate(ops):
            if not isinstance(op, (Add, Replace, Remove)):
                field = f"operations[{index}]" if batch else "op"
                raise InvalidArgument(field, f"must be Add, Replace or Remove, got {type(op).__name__}")
        file = self._files[target]
        limit = self._limits[target]
        origin = _stamped(origin)
        try:
            return self._edit_locked(target, ops, batch=batch, origin=origin, label=label)
        except (OSError, DatabaseError) as exc:
            # Locking, backing up or writing failed: the old text is untouched, and the caller must know.
            reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
            raise MemoryWriteFailed(
                file.path, reason, target=target, current_entries=self._entries[target], char_limit=limit
            ) from exc

    def _edit_locked(
        self, target: str, ops: list[MemoryOp], *, batch: bool, origin: Mapping[str, Any] | None, label: str | None
    ) -> MemoryOpOutcome:
        file = self._files[target]
        limit = self._limits[target]
        with self._lock, file.locked():
            try:
                raw = file.read_bytes() or b""
                text = decode(raw)
            except UnreadableFile as exc:
                raise self._read_failed(target, exc, self._entries[target]) from exc
            parsed = parse_entries(text)
            current = dedupe(parsed)
            self._entries[target] = tuple(current)
            state: dict[str, Any] = {"target": target, "current_entries": current, "char_limit": limit}
            guarded = batch or not isinstance(ops[0], Add)
            if guarded and not survives_round_trip(text):
                raise MemoryFileDrifted(file.path, file.backup(raw), **state)

            working = list(parsed)
            messages = []
            for index, op in enumerate(ops):
                try:
                    messages.append(_apply_one(working, op, state, self._scan_threshold))
                except MemoryOpError as exc:
                    if batch:
                        exc.op_index = index
                    raise
            result = dedupe(working)
            needed = joined_length(result)
            # Over the limit already (a lowered limit, a hand edit): still allow edits that shrink it.
            if needed > limit and needed > joined_length(current):
                raise OverBudget(needed, **state)

            new_text = join_entries(result)
            if new_text != text:
                # Recorded first, under the file's lock: what this write overwrites is kept before it is gone.
                operation = label or (ops[0].action if not batch else "batch")
                self.history.append(target, operation, current, result, origin)
                file.write_text(new_text)
            self._entries[target] = tuple(result)
            self._counted_failures = 0
        message = messages[0] if not batch else f"Applied {len(ops)} operations: " + " ".join(messages)
        return MemoryOpOutcome(target, message, len(result), needed, limit, tuple(result))


def _stamped(origin: Mapping[str, Any] | None) -> dict[str, Any]:
    """``origin`` with its provenance: an edit made straight on the store is the operator's (the CLI, the
    API, a restore) unless the caller recorded another."""
    stamped = dict(origin or {})
    if "provenance" not in stamped:
        stamped["provenance"] = Provenance(Origin.OPERATOR, str(stamped.get("via", "api"))).as_dict()
    return stamped


def _clean_content(content: object, state: dict[str, Any], scan_threshold: float | None) -> str:
    if not isinstance(content, str):
        raise InvalidArgument("content", f"must be a string, got {type(content).__name__}")
    content = check_text("content", content).strip()
    if not content:
        raise EmptyContent("content", **state)
    # The Hermes format cannot tell these apart from several entries once joined to neighbours.
    if ENTRY_DELIMITER in content or content.startswith("§\n") or content.endswith("\n§"):
        raise DelimiterInContent(ENTRY_DELIMITER, **state)
    findings = scan(content, threshold=scan_threshold)
    if findings:
        raise BlockedContent(findings, **state)
    return content


def _find(working: list[str], op: Replace | Remove, state: dict[str, Any]) -> int:
    if op.entry_id is not None:
        return _find_by_id(working, op.entry_id, state)
    old_text = op.old_text
    if not isinstance(old_text, str):
        raise InvalidArgument("old_text", f"must be a string, got {type(old_text).__name__}")
    old_text = check_text("old_text", old_text).strip()
    if not old_text:
        raise EmptyContent("old_text", **state)
    if old_text in working:
        return working.index(old_text)
    hits = [i for i, entry in enumerate(working) if old_text in entry]
    if not hits:
        raise NoMatchingEntry(old_text, **state)
    distinct = dedupe(working[i] for i in hits)
    if len(distinct) > 1:
        raise AmbiguousMatch(old_text, distinct, **state)
    return hits[0]


def _find_by_id(working: list[str], wanted: object, state: dict[str, Any]) -> int:
    if not isinstance(wanted, str) or not wanted.strip():
        raise InvalidArgument("id", "must be a non-empty entry id string")
    wanted = wanted.strip().lower()
    hits = [i for i, entry in enumerate(working) if entry_id(entry) == wanted]
    if not hits:
        raise StaleEntryId(wanted, **state)
    distinct = dedupe(working[i] for i in hits)
    if len(distinct) > 1:
        raise AmbiguousMatch(wanted, distinct, **state)
    return hits[0]


def _apply_one(working: list[str], op: MemoryOp, state: dict[str, Any], scan_threshold: float | None) -> str:
    if isinstance(op, Add):
        content = _clean_content(op.content, state, scan_threshold)
        if content in working:
            return "Entry already exists; no duplicate added."
        working.append(content)
        return "Entry added."
    if isinstance(op, Replace):
        content = _clean_content(op.content, state, scan_threshold)
        working[_find(working, op, state)] = content
        return "Entry replaced."
    del working[_find(working, op, state)]
    return "Entry removed."
