"""A big vector file gets int8 codes in the background; searches answer the same before and after, and keep
up with rows appended and purged since."""

from __future__ import annotations

import builtins
import os
import sqlite3
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from mnemo.embeddings import coarse, synced
from mnemo.embeddings.coarse import available
from mnemo.embeddings.synced import SyncedVectors, owners_of, table_top

pytestmark = pytest.mark.skipif(not available(), reason="no SIMD int8 kernel on this machine")

DIM = 384


@dataclass(frozen=True)
class _Table:
    """A vector table of one partition, as the graph's and the archive's are."""

    key: str = "test\x1fvectors"
    dim: int = DIM

    def rows_after(self, conn: sqlite3.Connection, seq: int) -> list[tuple[int, Hashable, bytes]]:
        return conn.execute("SELECT seq, owner, vector FROM vecs WHERE seq > ? ORDER BY seq", (seq,)).fetchall()

    def top(self, conn: sqlite3.Connection) -> int:
        return table_top(conn, "vecs")

    def owners(self, conn: sqlite3.Connection, seqs: Sequence[int]) -> dict[int, Hashable]:
        return owners_of(conn, "vecs", "owner", seqs)


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    """Codes from 1,000 rows on, in steps of 700, caught up 300 rows behind: the real thresholds, scaled down."""
    monkeypatch.setattr(synced, "MIN_ROWS", 1_000)
    monkeypatch.setattr(synced, "CHUNK_ROWS", 700)
    monkeypatch.setattr(synced, "LAG_ROWS", 300)


@pytest.fixture
def conn(tmp_path):
    connection = sqlite3.connect(tmp_path / "vectors.db", isolation_level=None)
    connection.execute("CREATE TABLE vecs (seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT, vector BLOB)")
    yield connection
    connection.close()


def _add(conn: sqlite3.Connection, vectors: np.ndarray, start: int) -> None:
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO vecs (owner, vector) VALUES (?, ?)",
        [(f"m{start + i}", vector.astype(np.float32).tobytes()) for i, vector in enumerate(vectors)],
    )
    conn.execute("COMMIT")


def _vectors(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((8, DIM))
    rows = centres[rng.integers(0, 8, count)] + 0.6 * rng.standard_normal((count, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _coded(vectors: SyncedVectors, rows: int) -> bool:
    """Wait (at most 30 s) until the background steps have coded ``rows`` rows of the file."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        codes = vectors._codes
        if codes is not None and codes.count >= rows and not vectors._coding:
            return True
        time.sleep(0.01)
    return False


def _answers(vectors: SyncedVectors, conn: sqlite3.Connection, probes: np.ndarray) -> list[list[Hashable]]:
    return [[owner for owner, _ in vectors.search(conn, probe, 10)] for probe in probes]


def test_searches_answer_the_same_once_the_file_is_coded(conn, tmp_path):
    _add(conn, _vectors(2_500, seed=1), 0)
    vectors = SyncedVectors(_Table(), tmp_path / "test.vec")
    vectors.refresh(conn)
    probes = _vectors(15, seed=2)
    exact = _answers(vectors, conn, probes)
    assert _coded(vectors, 2_500)
    assert _answers(vectors, conn, probes) == exact


def test_a_small_file_gets_no_codes(conn, tmp_path):
    _add(conn, _vectors(900, seed=3), 0)
    vectors = SyncedVectors(_Table(), tmp_path / "test.vec")
    vectors.refresh(conn)
    vectors.search(conn, _vectors(1, seed=4)[0], 5)
    assert vectors._codes is None


def test_rows_appended_after_coding_are_found_and_coded_in_turn(conn, tmp_path):
    _add(conn, _vectors(1_500, seed=5), 0)
    vectors = SyncedVectors(_Table(), tmp_path / "test.vec")
    vectors.refresh(conn)
    vectors.search(conn, _vectors(1, seed=6)[0], 5)
    assert _coded(vectors, 1_500)
    late = _vectors(400, seed=7)
    _add(conn, late, 1_500)
    vectors.refresh(conn)
    assert vectors.search(conn, late[123], 1)[0][0] == "m1623"
    assert _coded(vectors, 1_900)
    assert vectors.search(conn, late[321], 1)[0][0] == "m1821"


def test_purged_rows_never_come_back_from_the_codes(conn, tmp_path):
    stored = _vectors(1_500, seed=8)
    _add(conn, stored, 0)
    vectors = SyncedVectors(_Table(), tmp_path / "test.vec")
    vectors.refresh(conn)
    vectors.search(conn, stored[0], 5)
    assert _coded(vectors, 1_500)
    seq = conn.execute("SELECT seq FROM vecs WHERE owner = 'm42'").fetchone()[0]
    conn.execute("DELETE FROM vecs WHERE seq = ?", (seq,))
    vectors.erase(conn, [seq])
    hits = vectors.search(conn, stored[42], 5)
    assert "m42" not in [owner for owner, _ in hits] and len(hits) == 5


def test_a_forked_child_codes_the_file_itself_when_its_parent_was_coding(conn, tmp_path):
    _add(conn, _vectors(1_500, seed=9), 0)
    vectors = SyncedVectors(_Table(), tmp_path / "test.vec")
    vectors.refresh(conn)
    vectors._coding = os.getpid()  # as if a background step were on its way at the fork
    child = os.fork()
    if child == 0:  # the child: its parent's step never comes, so its own search must start the coding
        try:
            vectors.search(conn, _vectors(1, seed=10)[0], 5)
            os._exit(0 if _coded(vectors, 1_500) else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_without_numkong_searches_scan_the_float32_rows(conn, tmp_path, monkeypatch, caplog):
    real_import = builtins.__import__

    def no_numkong(name, *args, **kwargs):
        if name == "numkong":
            raise ImportError("numkong is not installed")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_numkong)
    coarse._kernels.cache_clear()
    try:
        stored = _vectors(1_500, seed=11)
        _add(conn, stored, 0)
        vectors = SyncedVectors(_Table(), tmp_path / "test.vec")
        vectors.refresh(conn)
        assert vectors.search(conn, stored[77], 1)[0][0] == "m77"
        assert vectors._codes is None and "cannot be loaded" in caplog.text
    finally:
        coarse._kernels.cache_clear()
