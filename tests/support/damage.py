"""Ways to damage a mnemo home for real: cut, overwritten or replaced database files, and file systems
of its own that can be made read-only or full (these need the right to mount, and skip without it)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mnemo.config import load_settings


def database_of(home: Path) -> Path:
    """mnemo's database file in ``home``, by the settings' name for it."""
    return load_settings(home).database_path


def truncate(database: Path) -> None:
    """Cut the file to half its size, as a crash during a copy would."""
    with database.open("r+b") as handle:
        handle.truncate(database.stat().st_size // 2)


def randomise(database: Path) -> None:
    """Overwrite the file with random bytes of the same size."""
    database.write_bytes(os.urandom(database.stat().st_size))


def replace_with_directory(database: Path) -> None:
    """Put a directory where the file was (a failure even root cannot write through)."""
    database.unlink()
    database.mkdir()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": truncate,
    "random bytes": randomise,
    "a directory": replace_with_directory,
}


def fingerprint(path: Path) -> str:
    """The file's SHA-256, or what a directory holds."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else f"directory {sorted(os.listdir(path))}"


def fill(directory: Path) -> None:
    """Write into ``directory`` until its file system is full."""
    with (directory / "filler").open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def remount_read_only(mount_point: Path) -> None:
    """Make the file system at ``mount_point`` read-only (for root too)."""
    subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)


def small_file_system(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs of its own under ``tmp_path``, unmounted afterwards; the test is skipped where
    mounting is not allowed. Use it as the body of a fixture (``yield from``)."""
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    mounted = shutil.which("mount") is not None and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True
    ).returncode == 0
    if not mounted:
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True)
