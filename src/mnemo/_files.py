"""Atomic, durable file replacement, shared by every tier that writes whole files.

A reader of ``target`` sees the old file or the new one, never a mix: the bytes go to a temp file in the
same directory, which is fsynced, renamed over the target, and then the directory is fsynced so the rename
itself survives a crash. A writer killed midway leaves only a temp file named ``.<target>.<random>.tmp``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def atomic_write(target: Path, *chunks: bytes | memoryview) -> None:
    """Replace ``target`` with ``chunks`` written one after another (bytes, or memoryviews such as an
    array's, so large data is never joined first). A new file is private (0600); an existing
    file keeps its mode."""
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    fsync_directory(target.parent)


def temp_files(target: Path) -> list[Path]:
    """The temp files :func:`atomic_write` has left beside ``target``: writes under way in other threads or
    processes, or left behind by a writer that was killed."""
    return list(target.parent.glob(f".{target.name}.*{TEMP_SUFFIX}"))


def fsync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries to disk: a rename is only durable once the entry itself is."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
