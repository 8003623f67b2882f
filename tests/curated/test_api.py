"""The fixed public API: names, op types, outcome fields, target validation and batches."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import mnemo
from mnemo import (
    Add,
    DelimiterInContent,
    EmptyContent,
    MemoryOpError,
    MemoryStore,
    NoMatchingEntry,
    Remove,
    Replace,
)

from .conftest import loaded, seed


def test_every_fixed_name_is_importable_from_mnemo() -> None:
    for name in (
        "MemoryStore", "Add", "Replace", "Remove", "MemoryOpOutcome", "ENTRY_DELIMITER",
        "DEFAULT_MEMORY_CHAR_LIMIT", "DEFAULT_USER_CHAR_LIMIT", "MemoryOpError",
        "MEMORY_TOOL_SCHEMA", "handle_memory_call",
    ):  # fmt: skip
        assert hasattr(mnemo, name), name


def test_every_refusal_cause_is_its_own_memory_op_error_subclass() -> None:
    causes = {
        mnemo.NoMatchingEntry, mnemo.AmbiguousMatch, mnemo.OverBudget, mnemo.BlockedContent,
        mnemo.EmptyContent, mnemo.MemoryFileDrifted, mnemo.MemoryReadFailed, mnemo.MemoryWriteFailed,
    }  # fmt: skip
    assert len(causes) == 8
    assert all(issubclass(cause, MemoryOpError) and issubclass(cause, mnemo.MnemoError) for cause in causes)


def test_ops_are_frozen_dataclasses() -> None:
    op = Replace(old_text="a", content="b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.content = "c"  # type: ignore[misc]
    assert Remove("x") == Remove(old_text="x")
    assert Add("x").content == "x"


def test_outcome_reports_target_message_count_and_usage(store: MemoryStore) -> None:
    outcome = store.apply("user", Add("name is Ada"))
    assert (outcome.target, outcome.message, outcome.entry_count) == ("user", "Entry added.", 1)
    assert (outcome.used_chars, outcome.char_limit) == (11, 1375)
    assert outcome.usage == "0% — 11/1,375 chars"


@pytest.mark.parametrize("call", ["entries", "render_snapshot", "apply"])
def test_an_unknown_target_raises_value_error(store: MemoryStore, call: str) -> None:
    args = ("notes", Add("x")) if call == "apply" else ("notes",)
    with pytest.raises(ValueError, match="target"):
        getattr(store, call)(*args)


def test_an_unknown_target_writes_nothing(memories: Path, store: MemoryStore) -> None:
    with pytest.raises(ValueError):
        store.apply_batch("MEMORY", [Add("x")])
    assert list(memories.iterdir()) == []


@pytest.mark.parametrize("op", [Add("   "), Replace("a", "\n"), Remove(""), Replace("", "new")])
def test_empty_content_or_old_text_is_refused(memories: Path, op: Add | Replace | Remove) -> None:
    seed(memories, "memory", "a")
    with pytest.raises(EmptyContent):
        loaded(memories).apply("memory", op)


def test_content_holding_the_delimiter_is_refused(store: MemoryStore) -> None:
    with pytest.raises(DelimiterInContent):
        store.apply("memory", Add("one\n§\ntwo"))
    assert store.entries("memory") == ()


def test_batch_is_all_or_nothing(memories: Path) -> None:
    path = seed(memories, "memory", "keep", "drop")
    before = path.read_bytes()
    store = loaded(memories)
    with pytest.raises(NoMatchingEntry) as refused:
        store.apply_batch("memory", [Remove("drop"), Add("new"), Remove("missing")])
    assert refused.value.op_index == 2
    assert path.read_bytes() == before
    assert store.entries("memory") == ("keep", "drop")


def test_batch_applies_operations_in_order_with_one_write(memories: Path) -> None:
    seed(memories, "memory", "a", "b")
    store = loaded(memories)
    outcome = store.apply_batch("memory", [Remove("a"), Add("c"), Replace("b", "B")])
    assert store.entries("memory") == ("B", "c")
    assert outcome.entry_count == 2


def test_an_empty_batch_is_an_argument_error(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="operations"):
        store.apply_batch("memory", [])


def test_limits_must_be_positive(memories: Path) -> None:
    with pytest.raises(ValueError, match="memory_char_limit"):
        MemoryStore(memories, memory_char_limit=0)


def test_each_op_names_its_action() -> None:
    assert (Add("x").action, Replace("a", "b").action, Remove("a").action) == ("add", "replace", "remove")
    assert [f.name for f in dataclasses.fields(Replace)] == ["old_text", "content", "entry_id"]
