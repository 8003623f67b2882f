"""Points 4 and 5: which entry replace/remove act on, and adding duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import Add, AmbiguousMatch, MemoryStore, NoMatchingEntry, Remove, Replace

from .conftest import loaded, seed


def test_replace_acts_on_the_one_entry_containing_old_text(memories: Path) -> None:
    seed(memories, "memory", "uses pytest", "deploys with ansible")
    store = loaded(memories)
    outcome = store.apply("memory", Replace(old_text="ansible", content="deploys with terraform"))
    assert store.entries("memory") == ("uses pytest", "deploys with terraform")
    assert outcome.message == "Entry replaced."


def test_remove_acts_on_the_one_entry_containing_old_text(memories: Path) -> None:
    seed(memories, "memory", "uses pytest", "deploys with ansible")
    store = loaded(memories)
    store.apply("memory", Remove("pytest"))
    assert store.entries("memory") == ("deploys with ansible",)


def test_no_match_refuses_and_lists_the_entries(memories: Path) -> None:
    seed(memories, "memory", "uses pytest")
    store = loaded(memories)
    with pytest.raises(NoMatchingEntry) as refused:
        store.apply("memory", Remove("nose"))
    assert refused.value.current_entries == ("uses pytest",)
    assert store.entries("memory") == ("uses pytest",)


def test_several_distinct_matches_refuse_and_touch_nothing(memories: Path) -> None:
    path = seed(memories, "memory", "python 3.11 on laptop", "python 3.12 on server", "other")
    before = path.read_bytes()
    store = loaded(memories)
    with pytest.raises(AmbiguousMatch) as refused:
        store.apply("memory", Replace("python", "python 3.13 everywhere"))
    assert refused.value.matches == ("python 3.11 on laptop", "python 3.12 on server")
    assert path.read_bytes() == before


def test_identical_duplicate_matches_act_on_the_first(memories: Path) -> None:
    path = seed(memories, "memory", "alpha", "dup note", "beta", "dup note")
    store = loaded(memories)
    store.apply("memory", Replace("dup", "changed note"))
    assert path.read_text(encoding="utf-8").split("\n§\n") == ["alpha", "changed note", "beta", "dup note"]


def test_an_exact_entry_wins_over_entries_that_merely_contain_it(memories: Path) -> None:
    seed(memories, "memory", "tabs, not spaces", "tabs")
    store = loaded(memories)
    store.apply("memory", Remove("tabs"))
    assert store.entries("memory") == ("tabs, not spaces",)


def test_old_text_is_matched_after_stripping(memories: Path) -> None:
    seed(memories, "memory", "a", "b")
    store = loaded(memories)
    store.apply("memory", Remove("  b\n"))
    assert store.entries("memory") == ("a",)


def test_adding_an_existing_entry_adds_nothing_and_succeeds(store: MemoryStore) -> None:
    store.apply("memory", Add("likes tea"))
    outcome = store.apply("memory", Add("  likes tea  "))
    assert store.entries("memory") == ("likes tea",)
    assert "no duplicate added" in outcome.message
    assert outcome.entry_count == 1
