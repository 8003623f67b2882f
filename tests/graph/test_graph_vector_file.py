"""The graph's vector files: a new process maps them instead of reading SQLite, and whatever happens to a
file (deleted, cut short, older than the database, from another database, damaged, half-written by a
process that was killed) recall answers exactly as a fresh build does, and the file is repaired."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from mnemo import _db
from mnemo.backends.sqlite.graph import SqliteEngine
from mnemo.embeddings import synced
from mnemo.embeddings.vector_file import (
    HEADER_BYTES,
    directory_for,
    row_dtype,
    vector_file_status,
    vector_files,
)
from mnemo.graph import MemoryGraph, Scope, reads
from mnemo.storage import open_graph

from ._support import Clock, ConceptEmbedder

WORDS = ("dog", "puppy", "car", "sedan", "coffee", "latte", "paris", "french", "berlin", "german", "hound", "vehicle")
QUERIES = ("canine", "automobile", "espresso", "france", "germany", "a dog in paris", "german coffee")
TESTS = Path(__file__).resolve().parents[1]

@pytest.fixture
def db_path(sqlite_path):
    """Vector files and the in-process vector cache are SQLite's (on PostgreSQL, pgvector searches)."""
    return sqlite_path



def _fill(graph: MemoryGraph, count: int, start: int = 0) -> None:
    graph.remember_many(
        {"content": f"note {i}: {WORDS[i % len(WORDS)]} and {WORDS[(i * 7 + 3) % len(WORDS)]} #{i}"}
        for i in range(start, start + count)
    )
    graph.flush()


def _answers(graph: MemoryGraph) -> list[list[tuple[str, float]]]:
    return [[(r.memory.id, round(r.score, 6)) for r in graph.recall(q, limit=8, touch=False)] for q in QUERIES]


def _fresh(db_path: Path) -> list[list[tuple[str, float]]]:
    """What a process that reads every vector from SQLite answers (a borrowed connection keeps no file)."""
    conn = _db.connect(db_path)
    try:
        with open_graph(conn, embedder=ConceptEmbedder(), clock=Clock()) as graph:
            return _answers(graph)
    finally:
        conn.close()


def _open(db_path: Path) -> MemoryGraph:
    return open_graph(db_path, embedder=ConceptEmbedder(), clock=Clock())


def _the_file(db_path: Path) -> Path:
    (path,) = vector_files(db_path)
    return path


@pytest.fixture
def filled(db_path) -> Path:
    with _open(db_path) as graph:
        _fill(graph, 60)
        graph.recall("dog", touch=False)  # writes the file
    return db_path


def test_a_recall_writes_a_vector_file_beside_the_database(filled):
    path = _the_file(filled)
    assert path.parent == directory_for(filled) == filled.with_name(f"{filled.name}-vectors")
    status = vector_file_status(path)
    assert status.state == "ok" and status.rows == 60 and status.dim == 8


def test_a_new_process_answers_from_the_file_as_a_fresh_build_does(filled):
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)


def test_a_graph_on_a_borrowed_connection_writes_no_file(db_path):
    conn = _db.connect(db_path)
    try:
        with open_graph(conn, embedder=ConceptEmbedder()) as graph:
            _fill(graph, 5)
            assert graph.recall("dog")
    finally:
        conn.close()
    assert not directory_for(db_path).exists()


def test_a_deleted_file_is_rebuilt(filled):
    _the_file(filled).unlink()
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
    assert vector_file_status(_the_file(filled)).rows == 60


def test_a_file_cut_short_is_rebuilt_and_logged(filled, caplog):
    path = _the_file(filled)
    with open(path, "r+b") as damaged:
        damaged.truncate(HEADER_BYTES + row_dtype(8).itemsize * 10 + 5)
    with caplog.at_level(logging.WARNING, logger="mnemo.vectors"), _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
    assert "cut short" in caplog.text
    assert vector_file_status(path).state == "ok"
    assert vector_file_status(path).rows == 60


def test_a_file_older_than_the_database_catches_up(filled):
    older = filled.with_name("older.vec")
    shutil.copy(_the_file(filled), older)
    with _open(filled) as graph:
        _fill(graph, 30, start=60)
        graph.recall("dog", touch=False)
    os.replace(older, _the_file(filled))
    assert vector_file_status(_the_file(filled)).rows == 60
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
    assert vector_file_status(_the_file(filled)).rows == 90


def test_a_file_from_another_database_is_not_trusted(filled, tmp_path, caplog):
    other = tmp_path / "other" / "state.db"
    with _open(other) as graph:
        _fill(graph, 80, start=500)
        graph.recall("dog", touch=False)
    shutil.copy(_the_file(other), _the_file(filled))
    with caplog.at_level(logging.WARNING, logger="mnemo.vectors"), _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
    assert "rebuilding" in caplog.text
    assert vector_file_status(_the_file(filled)).rows == 60


def test_a_damaged_row_is_caught_before_it_answers_and_the_file_rebuilt(filled, caplog):
    path = _the_file(filled)
    with _open(filled) as graph:
        canine = graph.recall("canine", limit=1, touch=False)[0].memory.id
    rows = np.memmap(path, dtype=row_dtype(8), mode="r+", offset=HEADER_BYTES)
    # Make every row look like the perfect match for "car" without fixing its checksum.
    rows["vector"] = np.eye(8, dtype=np.float32)[1]
    rows.flush()
    del rows
    with caplog.at_level(logging.WARNING, logger="mnemo.vectors"), _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
        assert graph.recall("canine", limit=1, touch=False)[0].memory.id == canine
    assert "does not match the database" in caplog.text
    assert vector_file_status(path).state == "ok"


def test_a_torn_header_falls_back_to_the_previous_generation(filled):
    path = _the_file(filled)
    with _open(filled) as graph:
        _fill(graph, 10, start=60)
        graph.recall("dog", touch=False)  # appends: generation 2 in the second slot
    assert vector_file_status(path).generation == 2
    with open(path, "r+b") as torn:
        torn.seek(HEADER_BYTES // 2 + 20)
        torn.write(b"\xff\xff\xff")
    status = vector_file_status(path)
    assert status.state == "ok" and status.generation == 1 and status.rows == 60
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
    assert vector_file_status(path).rows == 70


_KILLED_MID_APPEND = """
import os, sys, time
from mnemo.storage import open_graph
from graph._support import Clock, ConceptEmbedder

def stall(fd):
    print("rows written", flush=True)
    time.sleep(60)

with open_graph(sys.argv[1], embedder=ConceptEmbedder(), clock=Clock()) as graph:
    graph.remember_many({"content": f"late {i}: a puppy drives a sedan to berlin"} for i in range(25))
    graph.flush()
    os.fsync = stall  # the vector file's append writes its rows, then stalls before committing them
    graph.recall("dog", touch=False)
"""


def test_a_file_left_by_a_process_killed_mid_append_gives_the_fresh_answers(filled):
    path = _the_file(filled)
    size = path.stat().st_size
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED_MID_APPEND), str(filled)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)])},
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "rows written"
        assert path.stat().st_size > size  # the rows are there, uncommitted
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert vector_file_status(path).rows == 60
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
        assert any("late" in r.memory.content for r in graph.recall("canine", limit=30, touch=False))
    status = vector_file_status(path)
    assert status.state == "ok" and status.rows == 85
    assert path.stat().st_size == HEADER_BYTES + 85 * row_dtype(8).itemsize  # the half-written rows are gone


def test_purge_erases_the_vector_from_the_file(filled):
    with _open(filled) as graph:
        victim = graph.remember("A french bulldog named Croissant")
        graph.flush()
        graph.recall("dog", touch=False)
        vector = ConceptEmbedder().embed([victim.content])[0].tobytes()
        assert vector in _the_file(filled).read_bytes()
        graph.purge([victim.id])
        assert vector not in _the_file(filled).read_bytes()
        assert victim.id not in {r.memory.id for r in graph.recall("dog", limit=50, touch=False)}
    assert vector_file_status(_the_file(filled)).state == "ok"
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)


def test_another_process_purge_is_never_answered_from_this_process_file(filled):
    with _open(filled) as reader, _open(filled) as purger:
        found = reader.recall("canine", limit=5, touch=False)
        purger.purge([r.memory.id for r in found])
        assert not {r.memory.id for r in found} & {r.memory.id for r in reader.recall("canine", limit=50, touch=False)}
        assert _answers(reader) == _fresh(filled)


def test_a_purge_that_leaves_most_rows_erased_rebuilds_the_file_with_the_live_ones(filled, monkeypatch):
    monkeypatch.setattr(synced, "COMPACT_ROWS", 16)
    with _open(filled) as reader, _open(filled) as purger:
        reader.recall("dog", touch=False)
        doomed = [m.id for m in purger.memories()][:45]
        purger.purge(doomed)
        status = vector_file_status(_the_file(filled))
        assert (status.rows, status.erased) == (15, 0)
        assert not set(doomed) & {r.memory.id for r in reader.recall("dog", limit=50, touch=False)}
        assert _answers(reader) == _answers(purger) == _fresh(filled)


def test_a_purge_that_leaves_most_rows_live_keeps_the_file(filled, monkeypatch):
    monkeypatch.setattr(synced, "COMPACT_ROWS", 16)
    with _open(filled) as graph:
        graph.recall("dog", touch=False)
        graph.purge([m.id for m in graph.memories()][:20])
        status = vector_file_status(_the_file(filled))
        assert (status.rows, status.erased) == (60, 20)
        assert _answers(graph) == _fresh(filled)


def test_each_scope_and_model_has_its_own_file(db_path):
    with _open(db_path) as graph:
        _fill(graph, 5)
        bob = graph.with_scope(Scope(user_id="bob"))
        _fill(bob, 3)
        graph.recall("dog")
        bob.recall("dog")
    with open_graph(db_path, embedder=ConceptEmbedder("concepts-v2", 8)) as graph:
        graph.recall("dog")
    assert sorted(vector_file_status(p).rows for p in vector_files(db_path)) == [3, 5, 5]


def test_status_reports_missing_and_damaged_files(filled, tmp_path):
    assert vector_file_status(tmp_path / "nothing.vec").state == "missing"
    path = _the_file(filled)
    with open(path, "r+b") as damaged:
        damaged.write(b"garbage!")
    status = vector_file_status(path)
    assert status.state == "damaged" and "header" in status.problem


_WRITER = """
import sys
from mnemo.storage import open_graph
from graph._support import Clock, ConceptEmbedder

with open_graph(sys.argv[1], embedder=ConceptEmbedder(), clock=Clock()) as graph:
    for round_ in range(15):
        graph.remember_many(
            {"content": f"{sys.argv[2]} {round_}.{i}: dog car coffee paris berlin"[: 20 + (i * 7) % 30]}
            for i in range(8)
        )
        graph.recall("puppy", touch=False)  # embeds and appends to the file
"""

_RECALLER = """
import sys, numpy as np
from mnemo import _db
from mnemo.embeddings import synced
from mnemo.storage import open_graph
from graph._support import ConceptEmbedder

embedder = ConceptEmbedder()
checked = 0
with open_graph(sys.argv[1], embedder=embedder) as graph:
    truth = _db.connect(sys.argv[1])
    for round_ in range(40):
        for query in ("canine", "sedan", "latte", "france", "germany"):
            probe = embedder.embed([query])
            for memory_id, score in graph._vectors.search(graph._conn, graph.scope, embedder, probe, 20):
                blob = truth.execute("SELECT vector FROM graph_vectors WHERE memory_id = ?", (memory_id,)).fetchone()
                if blob is None:
                    continue  # purged or re-embedded since: nothing to compare with
                real = float(np.frombuffer(blob[0], np.float32) @ probe[0])
                assert abs(real - score) < 1e-5, (memory_id, score, real)
                checked += 1
print(checked)
"""


def test_two_writers_and_a_reader_never_see_a_vector_of_the_wrong_memory(filled):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)])}
    writers = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(_WRITER), str(filled), name], env=env)
        for name in ("left", "right")
    ]
    reader = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_RECALLER), str(filled)], env=env, capture_output=True, text=True
    )
    assert [w.wait() for w in writers] == [0, 0]
    assert reader.returncode == 0, reader.stderr
    assert int(reader.stdout) > 0
    with _open(filled) as graph:
        assert _answers(graph) == _fresh(filled)
    # A writer whose append found the file busy kept its last rows in memory; the recall above appended them.
    # A memory both writers embedded at once has a zeroed row for the vector the second one replaced.
    status = vector_file_status(_the_file(filled))
    assert status.state == "ok" and status.rows - status.erased == 60 + 2 * 15 * 8


def test_a_new_process_embeds_the_newest_memories_at_once_and_the_backlog_once_it_knows_its_cursor(
    db_path, monkeypatch
):
    with open_graph(db_path, clock=Clock()) as plain:  # no embedder: nothing is embedded
        old = plain.remember("An old note about a hound")
        plain.remember_many({"content": f"filler {i}"} for i in range(5))
        new = plain.remember("A new note about a puppy")
    released = threading.Event()
    finding = SqliteEngine.first_pending

    def slow_first_pending(*args):
        released.wait(10)
        return finding(*args)

    monkeypatch.setattr(reads, "SCAN_PER_RECALL", 3)
    monkeypatch.setattr(SqliteEngine, "first_pending", slow_first_pending)
    with _open(db_path) as graph:
        hits = {r.memory.id for r in graph.recall("canine", touch=False) if "vector" in r.channels}
        assert hits == {new.id}  # only the newest seqs were checked while the cursor is unknown
        released.set()
        graph._backlog[(graph.scope, "concepts-v1", 8)][1].result(timeout=10)
        hits = {r.memory.id for r in graph.recall("canine", touch=False) if "vector" in r.channels}
        assert hits == {old.id, new.id}
        assert graph.stats()["pending_embeddings"] == 0
