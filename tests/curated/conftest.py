"""Shared fixtures for the curated-memory tests: a fresh memories directory and ways to seed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import ENTRY_DELIMITER, MemoryStore


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    """An empty memories directory (it exists; the files do not)."""
    directory = tmp_path / "memories"
    directory.mkdir()
    return directory


@pytest.fixture
def store(memories: Path) -> MemoryStore:
    """A loaded store with the default limits on ``memories``."""
    store = MemoryStore(memories)
    store.load()
    return store


def seed(directory: Path, target: str, *entries: str) -> Path:
    """Write ``entries`` to the target's file the way Hermes Agent does, and return its path."""
    path = directory / ("MEMORY.md" if target == "memory" else "USER.md")
    path.write_text(ENTRY_DELIMITER.join(entries), encoding="utf-8")
    return path


def loaded(directory: Path, **limits: int) -> MemoryStore:
    """A new store on ``directory``, loaded."""
    store = MemoryStore(directory, **limits)
    store.load()
    return store
