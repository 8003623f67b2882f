"""The history file keeps what each write changed, so it grows with the edits, not with their square; files
written in the first format (whole lists before and after) still read, and history continues after them."""

from __future__ import annotations

import json
from pathlib import Path

from mnemo import Add, MemoryStore, Remove, Replace
from mnemo.curated.history import REWRITE_FIRST_FORMAT_AT, CuratedHistory

from .conftest import loaded, seed

RAISED = {"memory_char_limit": 10_000_000, "user_char_limit": 10_000_000}


def _lines(history: CuratedHistory) -> list[bytes]:
    return history.path.read_bytes().splitlines()


def test_history_bytes_per_write_stay_flat_as_the_store_fills(memories: Path) -> None:
    store = loaded(memories, **RAISED)
    sizes = []
    for i in range(600):
        store.apply("memory", Add(f"note {i:05d}: port {6000 + i}"))
        sizes.append(store.history.path.stat().st_size)
    first, last = sizes[199], sizes[-1] - sizes[-201]  # bytes the first 200 and the last 200 writes added
    assert last < 1.5 * first  # a whole copy per write would make the last 200 cost about five times more
    assert sizes[-1] < 600 * 1_000


def test_a_write_stores_the_entries_it_changed_and_not_the_ones_it_kept(memories: Path) -> None:
    store = loaded(memories, **RAISED)
    store.apply_batch("memory", [Add(f"kept entry {i:03d}") for i in range(50)])
    store.apply("memory", Replace("kept entry 025", "the replacement"))
    last = _lines(store.history)[-1]
    assert b"the replacement" in last
    assert b"kept entry 024" not in last and b"kept entry 026" not in last
    record = store.history.records()[-1]
    assert record.removed == ("kept entry 025",) and record.added == ("the replacement",)
    assert record.after[25] == "the replacement" and record.before[25] == "kept entry 025"


def test_every_record_reads_back_the_entries_before_and_after_its_write(memories: Path) -> None:
    store = loaded(memories, **RAISED)
    seen = []
    for i in range(120):
        before = store.entries("memory")
        if i % 5 == 4:
            store.apply("memory", Remove(before[0]))
        elif i % 7 == 6:
            store.apply("memory", Replace(before[len(before) // 2], f"n{i:03d}. rewritten"))
        else:
            store.apply("memory", Add(f"n{i:03d}. " + "word " * (i % 9)))
        seen.append((before, store.entries("memory")))
    records = store.history.records("memory")
    assert [(r.before, r.after) for r in records] == seen
    assert any(b'"before"' in line for line in _lines(store.history)[1:])  # a full copy fell due on the way


def test_a_hand_edit_between_writes_is_recorded_as_the_entries_the_next_write_found(memories: Path) -> None:
    store = loaded(memories)
    store.apply("user", Add("likes tea"))
    seed(memories, "user", "likes tea", "edited in by hand")
    store.apply("user", Add("lives in Oslo"))
    last = store.history.records("user")[-1]
    assert last.before == ("likes tea", "edited in by hand")
    assert last.after == ("likes tea", "edited in by hand", "lives in Oslo")


def test_a_line_cut_from_the_middle_hides_records_until_the_next_full_copy_and_shows_none_wrong(memories: Path) -> None:
    store = loaded(memories, **RAISED)
    for i in range(80):
        store.apply("memory", Add(f"entry {i:03d}: " + "x" * 40))
    truth = {r.id: (r.before, r.after) for r in store.history.records()}
    lines = _lines(store.history)
    del lines[10]
    store.history.path.write_bytes(b"\n".join(lines) + b"\n")
    shown = store.history.records()
    assert all((r.before, r.after) == truth[r.id] for r in shown)
    assert 0 < len(truth) - len(shown) < 40  # only up to the next full copy of the entries is hidden
    assert shown[-1].id == list(truth)[-1]
    store.apply("memory", Remove("entry 000"))
    assert store.history.records()[-1].removed == ("entry 000: " + "x" * 40,)


def test_a_history_in_the_first_format_still_reads_restores_and_continues(memories: Path) -> None:
    first_format = [
        {"id": "h00000001", "time": 1.0, "target": "memory", "operation": "add", "before": [],
         "after": ["project uses Bazel"], "origin": {"via": "cli"}},
        {"id": "h00000002", "time": 2.0, "target": "memory", "operation": "remove",
         "before": ["project uses Bazel"], "after": [], "origin": {"via": "tool"}},
    ]  # fmt: skip
    old = b"".join(json.dumps(record).encode() + b"\n" for record in first_format)
    (memories / ".mnemo-history.jsonl").write_bytes(old)
    store = loaded(memories)
    store.apply("memory", Add("deploys on Fridays"))
    store.restore("h00000002")
    assert store.entries("memory") == ("deploys on Fridays", "project uses Bazel")
    records = store.history.records("memory")
    assert [r.id for r in records[:2]] == ["h00000001", "h00000002"]
    assert records[1].removed == ("project uses Bazel",) and records[1].origin == {"via": "tool"}
    assert [r.after for r in records[2:]] == [("deploys on Fridays",), ("deploys on Fridays", "project uses Bazel")]
    assert store.history.path.read_bytes().startswith(old)  # nothing already written is rewritten


def test_records_written_by_another_process_are_continued_not_copied(memories: Path) -> None:
    one, other = loaded(memories, **RAISED), loaded(memories, **RAISED)
    for i in range(10):
        (one if i % 2 else other).apply("memory", Add(f"shared entry {i}"))
    assert sum(b'"before"' in line for line in _lines(one.history)) == 1  # the first write only
    assert MemoryStore(memories).history.records()[-1].after == tuple(f"shared entry {i}" for i in range(10))


def test_a_history_file_emptied_and_refilled_under_an_open_store_is_read_afresh(memories: Path) -> None:
    one, other = loaded(memories), loaded(memories)
    for i in range(3):
        one.apply("memory", Add(f"first life {i}"))
    one.apply("user", Add("first life"))  # so the first store has read its last memory record
    one.history.path.write_bytes(b"")  # the same file (inode), emptied by hand
    for i in range(8):
        other.apply("user", Add(f"second life {i}"))
    one.apply("memory", Add("written by the first store"))
    last = MemoryStore(memories).history.records()[-1]
    assert last.added == ("written by the first store",)
    assert last.before == tuple(f"first life {i}" for i in range(3))


def _first_format_history(memories: Path, writes: int) -> list[bytes]:
    """A history as mnemo wrote it before it kept only what changed: ``writes`` adds, each line holding the
    whole list before and after; the file's lines are returned."""
    entries: list[str] = []
    lines = []
    for i in range(writes):
        before = list(entries)
        entries.append(f"note {i:05d}: the staging port is {6000 + i}")
        record = {"id": f"h{i:08x}", "time": 1.0 + i, "target": "memory", "operation": "add",
                  "before": before, "after": entries, "origin": {"via": "cli"}}  # fmt: skip
        lines.append(json.dumps(record, separators=(",", ":")).encode())
    (memories / ".mnemo-history.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    seed(memories, "memory", *entries)
    return lines


def test_a_large_history_in_the_first_format_is_rewritten_compactly_by_the_next_append(memories: Path) -> None:
    lines = _first_format_history(memories, 300)
    damaged = lines[100][:40]
    history = memories / ".mnemo-history.jsonl"
    history.write_bytes(b"\n".join([*lines[:100], damaged, *lines[100:]]) + b"\n")
    old_size = history.stat().st_size
    assert old_size > REWRITE_FIRST_FORMAT_AT
    store = loaded(memories, **RAISED)
    kept = store.history.records()
    store.apply("memory", Add("the first write after the upgrade"))
    assert history.stat().st_size < old_size / 10
    assert store.history.records()[:-1] == kept  # every record, with its ids, times and origin
    assert damaged + b"\n" in history.read_bytes()  # what cannot be read is kept as it was
    assert store.history.records()[-1].added == ("the first write after the upgrade",)
    assert not list(memories.glob(".*.tmp"))
