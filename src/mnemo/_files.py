"""Atomic, durable file replacement, shared by every tier that writes whole files, and the leftovers of writers
that were killed.

A reader of ``target`` sees the old file or the new one, never a mix: the bytes go to a temp file in the
same directory, which is fsynced, renamed over the target, and then the directory is fsynced so the rename
itself survives a crash. A writer killed midway leaves only a temp file named ``.<target>.<random>.tmp``
(vector files written before they used this module left ``<target>.<pid>.tmp``, found with ``pid_names``).

Such a file is partial and nothing reads it, but it can be large (a model's converted weights are 21-55 MB),
so the next writer of the same target removes it (:func:`remove_stale_temp_files`), and ``mnemo doctor``
reports it (:func:`stale_temp_files`). A temp file is stale when no
live writer holds it: a writer holds an exclusive ``flock`` on its temp file from just after creating it until
it is renamed into place, and the kernel drops that lock the moment the writer dies, however it dies. The only
moment a live writer's file is unlocked is between its creation and the lock (or, for a writer of an older
mnemo, all along), so a file must also be :data:`STALE_SECONDS` old, unless the caller holds the target's own
writer lock, which keeps every other writer of that target out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

TEMP_SUFFIX = ".tmp"

STALE_SECONDS = 60.0
"""How old an unlocked temp file must be before it counts as a killed writer's: no writer leaves its file
unlocked for more than an instant, and one from an older mnemo rewrites its file well within a minute."""

_PID_TEMP = re.compile(r"\.\d+" + re.escape(TEMP_SUFFIX) + r"\Z")


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
            # Held until the rename: while this process lives, no cleaner takes the file for a leftover. (A
            # file system without flock refuses it, and then refuses the cleaners' test too: nothing is removed.)
            with contextlib.suppress(OSError):
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
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


def temp_files(target: Path, *, pid_names: bool = False) -> list[Path]:
    """The temp files writers of ``target`` have left beside it: writes under way in other threads or
    processes, or left behind by a writer that was killed (with ``pid_names``, the old vector files' too)."""
    return _temp_files_like(target.parent, target.name, pid_names)


def stale_temp_files(
    directory: Path, name: str = "*", *, recursive: bool = False, pid_names: bool = False
) -> list[Path]:
    """The stale temp files in ``directory`` (and below it, when ``recursive``) of targets whose names match
    the glob ``name``: for reporting; nothing is removed, nor waited for."""
    directories: Iterable[Path] = [directory]
    if recursive:
        directories = (Path(root) for root, _, _ in os.walk(directory))
    return [
        path
        for folder in directories
        for path in _temp_files_like(folder, name, pid_names)
        if _stale(path, STALE_SECONDS)
    ]


def remove_stale_temp_files(target: Path, stale_after: float = STALE_SECONDS, *, pid_names: bool = False) -> list[Path]:
    """Remove the temp files of ``target`` that no live writer holds and are at least ``stale_after`` seconds
    old (0 when the caller holds ``target``'s writer lock), and return them. Never raises: a leftover that
    cannot be removed now waits for the next write."""
    return [path for path in temp_files(target, pid_names=pid_names) if _stale(path, stale_after, remove=True)]


def fsync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries to disk: a rename is only durable once the entry itself is."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_files_like(directory: Path, name: str, pid_names: bool) -> list[Path]:
    try:
        found = list(directory.glob(f".{name}.*{TEMP_SUFFIX}"))
        if pid_names:
            found += [path for path in directory.glob(f"{name}.*{TEMP_SUFFIX}") if _PID_TEMP.search(path.name)]
    except OSError:
        return []
    return sorted(set(found))


def _stale(path: Path, stale_after: float, *, remove: bool = False) -> bool:
    """Whether ``path`` is a temp file no live writer holds and at least ``stale_after`` seconds old; with
    ``remove``, removed too (under its lock, and only if the name still leads to the file that was checked)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # gone already (renamed into place), or not a file this user may touch
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        checked = os.fstat(fd)
        if time.time() - checked.st_mtime < stale_after:
            return False
        current = os.stat(path, follow_symlinks=False)
        if (current.st_dev, current.st_ino) != (checked.st_dev, checked.st_ino):
            return False
        if remove:
            os.unlink(path)
        return True
    except OSError:  # held by a live writer (BlockingIOError), or gone meanwhile
        return False
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
