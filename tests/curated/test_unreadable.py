"""Point 12: unreadable files are never overwritten; missing or empty files are empty stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import Add, MemoryReadFailed, MemoryStore, Remove

from .conftest import loaded

NOT_UTF8 = b"name: Ada\n\xa7\nlikes \xe9t\xe9"  # Latin-1 text: someone saved it in the wrong encoding


def test_an_undecodable_file_loads_empty_and_reports_why(memories: Path) -> None:
    (memories / "USER.md").write_bytes(NOT_UTF8)
    store = loaded(memories)
    assert store.entries("user") == ()
    assert store.render_snapshot("user") is None
    assert "UTF-8" in str(store.read_failure("user"))
    assert store.read_failure("memory") is None


@pytest.mark.parametrize("op", [Add("new"), Remove("Ada")])
def test_every_write_to_an_undecodable_file_is_refused(memories: Path, op: Add | Remove) -> None:
    path = memories / "USER.md"
    path.write_bytes(NOT_UTF8)
    store = loaded(memories)
    with pytest.raises(MemoryReadFailed) as refused:
        store.apply("user", op)
    assert refused.value.path == path
    assert path.read_bytes() == NOT_UTF8


def test_a_path_that_cannot_be_read_as_a_file_is_never_replaced(memories: Path) -> None:
    (memories / "MEMORY.md").mkdir()
    store = loaded(memories)
    assert store.read_failure("memory") is not None
    with pytest.raises(MemoryReadFailed):
        store.apply_batch("memory", [Add("x")])
    assert (memories / "MEMORY.md").is_dir()


def test_a_missing_directory_is_an_empty_store_created_on_first_write(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "fresh" / "memories")
    store.load()
    assert store.entries("memory") == () and store.render_snapshot("memory") is None
    store.apply("memory", Add("first"))
    assert (tmp_path / "fresh" / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "first"


def test_an_empty_file_is_an_empty_store(memories: Path) -> None:
    (memories / "MEMORY.md").write_bytes(b"")
    (memories / "USER.md").write_text("\n \n", encoding="utf-8")
    store = loaded(memories)
    assert store.entries("memory") == () == store.entries("user")
    assert store.render_snapshot("user") is None
