"""Locked, atomic, durable access to one curated-memory file.

Readers never see a half-written file: a write goes to a temp file in the same directory, is fsynced,
renamed over the target and the directory is fsynced. Writers serialise on an exclusive ``flock`` of a
separate ``<file>.lock`` (the data file itself is replaced on every write, so it cannot carry the lock).
A symlinked file is resolved first, so the write lands on the link's target and the link survives.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from .._files import atomic_write, remove_stale_temp_files


class UnreadableFile(Exception):
    """The file exists but its bytes could not be read or are not UTF-8; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode(raw: bytes) -> str:
    """``raw`` as UTF-8 text; raise :class:`UnreadableFile` if it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not valid UTF-8 at byte {exc.start}") from exc


class MemoryFile:
    """One of ``MEMORY.md`` / ``USER.md``: read, lock, write atomically, back up."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def target(self) -> Path:
        """The real file behind ``path`` (symlinks followed, even dangling ones)."""
        return Path(os.path.realpath(self.path))

    @property
    def lock_path(self) -> Path:
        """The lock file; keyed on the real file so every alias of it shares one lock."""
        target = self.target
        return target.with_name(target.name + ".lock")

    def read_bytes(self) -> bytes | None:
        """The file's bytes, or ``None`` when it does not exist; raise :class:`UnreadableFile`."""
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UnreadableFile(exc.strerror or type(exc).__name__) from exc

    def read_text(self) -> str:
        """The file's text, ``""`` when missing; raise :class:`UnreadableFile` on I/O or UTF-8 errors."""
        raw = self.read_bytes()
        return "" if raw is None else decode(raw)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive cross-process lock; creates the directory and a 0600 lock file if needed."""
        lock_path = self.lock_path
        lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            # Closing the descriptor releases the flock.
            os.close(fd)

    def write_text(self, text: str) -> None:
        """Replace the file's content durably; call only while holding :meth:`locked`. Raises ``OSError``."""
        target = self.target
        remove_stale_temp_files(target, 0)  # under the lock no other writer is mid-write: any is a crash's
        atomic_write(target, text.encode("utf-8"))

    def backup(self, raw: bytes) -> Path:
        """Save ``raw`` as a timestamped copy next to the file and return its path.

        A model retrying a refused edit would otherwise leave one identical copy per attempt, so an
        existing backup with the same bytes is reused.
        """
        for existing in sorted(self.path.parent.glob(f"{self.path.name}.drift-*.bak"), reverse=True):
            try:
                if existing.read_bytes() == raw:
                    return existing
            except OSError:
                continue
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        backup = self.path.with_name(f"{self.path.name}.drift-{stamp}.bak")
        atomic_write(backup, raw)
        return backup
