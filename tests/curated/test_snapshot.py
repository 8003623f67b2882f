"""Points 1 and 2: the snapshot is frozen at load and has the documented block format."""

from __future__ import annotations

from pathlib import Path

from mnemo import Add, MemoryStore, Remove, Replace

from .conftest import loaded, seed

RULE = "═" * 46


def test_snapshot_is_byte_identical_after_writes_while_disk_and_entries_change(memories: Path) -> None:
    seed(memories, "memory", "uses pytest", "deploys on fridays")
    store = loaded(memories)
    before = store.render_snapshot("memory")

    store.apply("memory", Add("prefers small commits"))
    store.apply("memory", Replace("pytest", "uses pytest with -x"))
    store.apply("memory", Remove("fridays"))

    assert store.render_snapshot("memory") == before
    assert store.entries("memory") == ("uses pytest with -x", "prefers small commits")
    on_disk = (memories / "MEMORY.md").read_text(encoding="utf-8")
    assert "prefers small commits" in on_disk and "fridays" not in on_disk


def test_next_load_picks_up_the_writes(memories: Path) -> None:
    store = loaded(memories)
    store.apply("user", Add("name is Ada"))
    assert store.render_snapshot("user") is None
    store.load()
    assert store.render_snapshot("user").endswith("\nname is Ada")


def test_snapshot_is_none_for_a_target_empty_at_load(store: MemoryStore) -> None:
    assert store.render_snapshot("memory") is None
    assert store.render_snapshot("user") is None


def test_memory_block_format(memories: Path) -> None:
    seed(memories, "memory", "aaa", "bbb")
    store = loaded(memories, memory_char_limit=2200)
    assert store.render_snapshot("memory") == (
        f"{RULE}\nMEMORY (your personal notes) [0% — 9/2,200 chars]\n{RULE}\naaa\n§\nbbb"
    )


def test_user_block_format(memories: Path) -> None:
    seed(memories, "user", "x" * 1000)
    store = loaded(memories, user_char_limit=1375)
    assert store.render_snapshot("user") == (
        f"{RULE}\nUSER PROFILE (who the user is) [72% — 1,000/1,375 chars]\n{RULE}\n" + "x" * 1000
    )


def test_percent_is_truncated_not_rounded(memories: Path) -> None:
    seed(memories, "memory", "x" * 199)  # 99.5%
    assert "[99% — 199/200 chars]" in loaded(memories, memory_char_limit=200).render_snapshot("memory")


def test_percent_is_capped_at_100_when_over_the_limit(memories: Path) -> None:
    seed(memories, "memory", "x" * 3000)
    assert "[100% — 3,000/2,200 chars]" in loaded(memories).render_snapshot("memory")
