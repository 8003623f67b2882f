"""Shared fixtures for the curated-memory tests: a fresh memories directory and ways to seed it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo import ENTRY_DELIMITER, MemoryStore
from mnemo.scope import Scope


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    """An empty memories directory (it exists; the files do not)."""
    directory = tmp_path / "memories"
    directory.mkdir()
    return directory


@pytest.fixture(params=("files", "postgres"))
def store(request: pytest.FixtureRequest, memories: Path) -> Iterator[MemoryStore]:
    """A loaded store with the default limits, once per backend: files in ``memories``, or rows of a fresh
    PostgreSQL database."""
    storage = None
    if request.param == "postgres":
        from mnemo.backends.postgres.curated import postgres_storage

        storage = postgres_storage(request.getfixturevalue("postgres_url"), Scope())
    store = MemoryStore(memories, storage=storage)
    store.load()
    yield store
    store.close()


@pytest.fixture
def file_store(memories: Path) -> MemoryStore:
    """A loaded store on files in ``memories``, for what only files have (modes, lock files, names)."""
    return loaded(memories)


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
