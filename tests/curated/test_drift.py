"""Point 11: a file edited outside mnemo into a shape a rewrite would change is backed up, not rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import Add, MemoryFileDrifted, Remove, Replace

from .conftest import loaded, seed

DRIFTED = "first\n§\nsecond\n§\n\n§\nappended by a shell\n§\n"


def _drifted_file(memories: Path) -> Path:
    path = memories / "MEMORY.md"
    path.write_text(DRIFTED, encoding="utf-8")
    return path


@pytest.mark.parametrize("edit", ["replace", "remove", "batch"])
def test_edits_refuse_on_a_drifted_file_and_leave_it_byte_identical(memories: Path, edit: str) -> None:
    path = _drifted_file(memories)
    store = loaded(memories)
    with pytest.raises(MemoryFileDrifted):
        if edit == "replace":
            store.apply("memory", Replace("first", "one"))
        elif edit == "remove":
            store.apply("memory", Remove("second"))
        else:
            store.apply_batch("memory", [Add("third")])
    assert path.read_text(encoding="utf-8") == DRIFTED


def test_drift_refusal_saves_a_timestamped_backup_and_names_it(memories: Path) -> None:
    path = _drifted_file(memories)
    with pytest.raises(MemoryFileDrifted) as refused:
        loaded(memories).apply("memory", Remove("second"))
    backup = refused.value.backup_path
    assert backup.parent == memories
    assert backup.name.startswith("MEMORY.md.drift-") and backup.name.endswith(".bak")
    assert backup.read_bytes() == path.read_bytes()
    assert str(backup) in str(refused.value)
    assert refused.value.details()["backup_path"] == str(backup)


def test_entries_padded_by_hand_count_as_drift(memories: Path) -> None:
    (memories / "USER.md").write_text("name: Ada   \n§\n  likes tea", encoding="utf-8")
    with pytest.raises(MemoryFileDrifted):
        loaded(memories).apply("user", Remove("tea"))


def test_whitespace_at_the_ends_of_the_file_is_not_drift(memories: Path) -> None:
    (memories / "MEMORY.md").write_text("\n\nfirst\n§\nsecond\n\n", encoding="utf-8")
    store = loaded(memories)
    store.apply("memory", Remove("second"))
    assert store.entries("memory") == ("first",)


def test_duplicates_written_by_another_tool_are_not_drift(memories: Path) -> None:
    seed(memories, "memory", "a", "a", "b")
    store = loaded(memories)
    store.apply("memory", Remove("b"))
    assert store.entries("memory") == ("a",)
    assert list(memories.glob("*.bak")) == []


def test_repeated_refusals_reuse_one_backup_until_the_file_changes(memories: Path) -> None:
    path = _drifted_file(memories)
    store = loaded(memories)
    backups = set()
    for _ in range(3):
        with pytest.raises(MemoryFileDrifted) as refused:
            store.apply("memory", Remove("second"))
        backups.add(refused.value.backup_path)
    path.write_text(DRIFTED + "\n§\n\n§\nanother append", encoding="utf-8")
    with pytest.raises(MemoryFileDrifted) as refused:
        store.apply("memory", Remove("second"))
    assert len(backups) == 1 and refused.value.backup_path not in backups
    assert len(list(memories.glob("MEMORY.md.drift-*.bak"))) == 2
