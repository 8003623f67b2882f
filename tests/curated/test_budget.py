"""Points 3 and 7: limits count the joined text, and an over-budget refusal explains how to recover."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import Add, OverBudget, Remove, Replace

from .conftest import loaded, seed


def test_two_entries_of_three_chars_use_nine_with_the_delimiter(memories: Path) -> None:
    store = loaded(memories, memory_char_limit=9)
    store.apply("memory", Add("aaa"))
    outcome = store.apply("memory", Add("bbb"))
    assert (outcome.used_chars, outcome.char_limit, outcome.entry_count) == (9, 9, 2)


def test_a_limit_one_below_the_joined_length_refuses(memories: Path) -> None:
    store = loaded(memories, memory_char_limit=8)
    store.apply("memory", Add("aaa"))
    with pytest.raises(OverBudget) as refused:
        store.apply("memory", Add("bbb"))
    assert refused.value.needed_chars == 9
    assert store.entries("memory") == ("aaa",)
    assert (memories / "MEMORY.md").read_text(encoding="utf-8") == "aaa"


def test_user_target_has_its_own_limit(memories: Path) -> None:
    store = loaded(memories, memory_char_limit=100, user_char_limit=5)
    store.apply("memory", Add("x" * 50))
    with pytest.raises(OverBudget):
        store.apply("user", Add("x" * 6))


def test_over_budget_error_lists_every_entry_and_the_usage(memories: Path) -> None:
    seed(memories, "memory", "first note", "second note")
    store = loaded(memories, memory_char_limit=30)
    with pytest.raises(OverBudget) as refused:
        store.apply("memory", Add("a note that does not fit"))
    error = refused.value
    assert error.current_entries == ("first note", "second note")
    assert (error.used_chars, error.char_limit) == (24, 30)
    assert error.usage == "80% — 24/30 chars"
    assert "replace" in str(error) and "remove" in str(error) and "batch" in str(error)


def test_batch_budget_is_checked_on_the_final_state(memories: Path) -> None:
    seed(memories, "memory", "x" * 10, "y" * 10)
    store = loaded(memories, memory_char_limit=23)
    # Adding first would overflow on its own; removing in the same batch makes it fit.
    outcome = store.apply_batch("memory", [Add("z" * 10), Remove("xxx")])
    assert store.entries("memory") == ("y" * 10, "z" * 10)
    assert outcome.used_chars == 23


def test_a_store_already_over_its_limit_still_accepts_edits_that_shrink_it(memories: Path) -> None:
    seed(memories, "memory", "x" * 40, "y" * 40)
    store = loaded(memories, memory_char_limit=50)
    store.apply("memory", Replace("xxx", "short"))
    assert store.entries("memory") == ("short", "y" * 40)
    with pytest.raises(OverBudget):
        store.apply("memory", Add("more"))
