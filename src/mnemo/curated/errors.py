"""Why a curated-memory edit was refused: one class per cause, each carrying what fixes it.

Every refusal leaves the files untouched. The attributes are what a caller (or the model, through the
tool's JSON) needs to try again sensibly: the current entries and usage, previews of the competing
matches, the scanner's findings, or the path of a backup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MnemoError, excerpt
from ..safety.scan import finding_labels
from .entries import joined_length
from .ops import usage_text

if TYPE_CHECKING:
    from ..safety.scan import Finding

_PREVIEW_CHARS = 80


def _preview(entry: str) -> str:
    """A one-line, bounded rendering of ``entry`` for error messages."""
    flat = " ".join(entry.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


class MemoryOpError(MnemoError):
    """A curated-memory edit was refused; nothing was written.

    ``current_entries`` are the target's entries as found under the lock; ``op_index`` is the
    position of the failing operation inside a batch (``None`` for a single operation).
    """

    def __init__(self, message: str, *, target: str, current_entries: Iterable[str] = (), char_limit: int = 0) -> None:
        super().__init__(message)
        self.target = target
        self.current_entries: tuple[str, ...] = tuple(current_entries)
        self.used_chars = joined_length(self.current_entries)
        self.char_limit = char_limit
        self.op_index: int | None = None

    @property
    def usage(self) -> str:
        """The target's usage when the edit was refused, e.g. ``98% — 2,160/2,200 chars``."""
        return usage_text(self.used_chars, self.char_limit)

    def details(self) -> dict[str, Any]:
        """JSON-ready recovery data for a tool result or ``--json`` output."""
        found: dict[str, Any] = {"target": self.target}
        if self.op_index is not None:
            found["operation"] = self.op_index
        return found

    def _with_entries(self) -> dict[str, Any]:
        return {**MemoryOpError.details(self), "usage": self.usage, "current_entries": list(self.current_entries)}


class NoMatchingEntry(MemoryOpError):
    """``old_text`` is in no entry."""

    def __init__(self, old_text: str, **state: Any) -> None:
        super().__init__(
            f"no {state['target']} entry contains {excerpt(old_text)}; use a short unique substring of one of the current entries",
            **state,
        )
        self.old_text = old_text

    def details(self) -> dict[str, Any]:
        return self._with_entries()


class StaleEntryId(MemoryOpError):
    """No current entry has this id: the entry was changed or removed since its id was shown."""

    def __init__(self, entry_id: str, **state: Any) -> None:
        super().__init__(
            f"no {state['target']} entry has id {entry_id!r} (it was changed or removed since); "
            "use an id from the current entries",
            **state,
        )
        self.entry_id = entry_id

    def details(self) -> dict[str, Any]:
        return self._with_entries()


class UnknownHistoryRecord(MemoryOpError):
    """``restore`` was given an id no history record has."""

    def __init__(self, record_id: str, **state: Any) -> None:
        super().__init__(f"no curated history record has id {record_id!r}; see `mnemo memory history`", **state)
        self.record_id = record_id


class AmbiguousMatch(MemoryOpError):
    """``old_text`` is in several different entries; ``matches`` previews them."""

    def __init__(self, old_text: str, matches: Sequence[str], **state: Any) -> None:
        super().__init__(
            f"{len(matches)} different {state['target']} entries contain {excerpt(old_text)}; "
            "make old_text specific to one of them",
            **state,
        )
        self.old_text = old_text
        self.matches: tuple[str, ...] = tuple(_preview(m) for m in matches)

    def details(self) -> dict[str, Any]:
        return {**super().details(), "matches": list(self.matches)}


class OverBudget(MemoryOpError):
    """The edit would take the target past its character limit; ``needed_chars`` is what it would use."""

    def __init__(self, needed_chars: int, **state: Any) -> None:
        limit = state["char_limit"]
        super().__init__(
            f"{state['target']} would use {needed_chars:,}/{limit:,} chars, over its limit by {needed_chars - limit:,}; "
            "consolidate first: replace entries with shorter ones or remove stale ones "
            "(one batch of operations can remove and add together); current entries are listed",
            **state,
        )
        self.needed_chars = needed_chars

    def details(self) -> dict[str, Any]:
        return {**self._with_entries(), "needed_chars": self.needed_chars}


class BlockedContent(MemoryOpError):
    """The scanner flagged the content as a threat (injection, exfiltration, hidden characters...)."""

    def __init__(self, findings: Sequence[Finding], **state: Any) -> None:
        self.findings: tuple[Finding, ...] = tuple(findings)
        self.categories: tuple[str, ...] = tuple(dict.fromkeys(f.category for f in self.findings))
        super().__init__(
            f"content blocked by the safety scan ({', '.join(self.categories)}); memory must hold plain notes, "
            "not instructions, secrets-handling commands or hidden characters",
            **state,
        )

    def details(self) -> dict[str, Any]:
        # Rules and categories only: echoing the flagged excerpt would put the payload back in context.
        return {**super().details(), "findings": finding_labels(self.findings)}


class EmptyContent(MemoryOpError):
    """``field`` (``content`` or ``old_text``) is empty or only whitespace."""

    def __init__(self, field: str, **state: Any) -> None:
        super().__init__(f"{field} is empty", **state)
        self.field = field

    def details(self) -> dict[str, Any]:
        return {**super().details(), "field": self.field}


class DelimiterInContent(MemoryOpError):
    """The content holds the entry delimiter, so it would come back as several entries."""

    def __init__(self, delimiter: str, **state: Any) -> None:
        super().__init__(f"content contains the entry delimiter {delimiter!r}; store one entry per operation", **state)


class MemoryFileDrifted(MemoryOpError):
    """The file holds text a rewrite would not preserve (a manual edit?); it was backed up, not touched."""

    def __init__(self, path: Path, backup_path: Path, **state: Any) -> None:
        super().__init__(
            f"{path} was edited outside mnemo and a rewrite would change it; left it as is and saved a copy to "
            f"{backup_path}; fix the file by hand (entries separated by a line holding only §) and retry",
            **state,
        )
        self.path = path
        self.backup_path = backup_path

    def details(self) -> dict[str, Any]:
        return {**super().details(), "path": str(self.path), "backup_path": str(self.backup_path)}


class MemoryReadFailed(MemoryOpError):
    """The file exists but could not be read or decoded; it is never overwritten while so."""

    def __init__(self, path: Path, reason: str, **state: Any) -> None:
        super().__init__(f"cannot read {path} ({reason}); refusing to write over it", **state)
        self.path = path
        self.reason = reason

    def details(self) -> dict[str, Any]:
        return {**super().details(), "path": str(self.path)}


class MemoryWriteFailed(MemoryOpError):
    """The new content could not be made durable; the previous file is still in place."""

    def __init__(self, path: Path, reason: str, **state: Any) -> None:
        super().__init__(f"cannot write {path} ({reason}); the previous content is unchanged", **state)
        self.path = path
        self.reason = reason

    def details(self) -> dict[str, Any]:
        return {**super().details(), "path": str(self.path)}
