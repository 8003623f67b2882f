"""The vectors of one partition of a SQLite vector table, searchable the moment a process starts.

A :class:`SyncedVectors` serves one partition (the graph's vectors of one scope and model, say) from a
memory-mapped :mod:`vector file <mnemo.embeddings.vector_file>` beside the database, plus the few rows
newer than the file, held in memory until they are appended to it. Nothing is read into memory
wholesale: a new process maps the file (microseconds), checks that its last rows are still the
database's, and reads from SQLite only the rows written since the file's cursor.

The database stays the truth. A search yields table ``seq`` numbers; :meth:`SyncedVectors.resolve` asks
the database which owner (memory, message) each belongs to, drops rows whose seq is gone (purged,
re-embedded) and checks each row's owner checksum and CRC, so a stale or damaged file can cost a
candidate, never a wrong one. A file that is missing, cut short, of another partition, older than the
database or from another database is rebuilt (or, when it cannot be written, the partition is read into
memory as before, and the log says so).

Once a file holds :data:`~mnemo.embeddings.coarse.MIN_ROWS` rows, background steps give its rows int8
:mod:`codes <mnemo.embeddings.coarse>` that choose which rows a search scores exactly; the answer is the same.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .coarse import CHUNK_ROWS, LAG_ROWS, MIN_ROWS, CoarseCodes, available, nearest_rows
from .index import BruteForceIndex, _dot, _top_k
from .queries import background
from .vector_file import (
    MappedVectors,
    VectorFileBusy,
    VectorFileError,
    append_rows,
    erase_rows,
    first_mismatch,
    locked,
    log_fallback,
    make_rows,
    owner_hash,
    row_dtype,
    write_file,
)

log = logging.getLogger("mnemo.vectors")

# A search's own append waits this long for another writer before keeping its new rows in memory.
APPEND_WAIT = 0.01
# Building a file, or erasing purged rows, waits for another writer this long before giving up.
BUILD_WAIT = 60.0
# The cursor of a file is moved on without new rows of its own once the table is this far ahead, so a
# new process does not walk other partitions' newer rows.
CURSOR_STEP = 256
# Last rows of a file checked against the database when it is opened.
CONTINUITY_ROWS = 64


class VectorSource(Protocol):
    """One partition of a vector table: how to read it, and which owner a ``seq`` belongs to."""

    key: str  # names the partition in the file's header (table, scope, model, dimension)
    dim: int

    def rows_after(self, conn: sqlite3.Connection, seq: int) -> list[tuple[int, Hashable, bytes]]:
        """``(seq, owner, vector bytes)`` of the partition's rows above ``seq``, in ``seq`` order."""
        ...

    def top(self, conn: sqlite3.Connection) -> int:
        """The highest ``seq`` the table ever assigned (never lower after a delete)."""
        ...

    def owners(self, conn: sqlite3.Connection, seqs: Sequence[int]) -> dict[int, Hashable]:
        """The owner of each ``seq`` that still exists."""
        ...


def owners_of(conn: sqlite3.Connection, table: str, owner: str, seqs: Sequence[int]) -> dict[int, Hashable]:
    """``{seq: owner}`` for the rows of ``table`` (a vector table with a ``seq`` key and an ``owner``
    column, both named by mnemo's code) that still exist."""
    found: dict[int, Hashable] = {}
    for start in range(0, len(seqs), 500):  # stay under SQLite's bound-parameter limit
        chunk = seqs[start : start + 500]
        found.update(conn.execute(
            f"SELECT seq, {owner} FROM {table} WHERE seq IN ({', '.join('?' * len(chunk))})", chunk
        ).fetchall())  # fmt: skip
    return found


def table_top(conn: sqlite3.Connection, table: str) -> int:
    """The highest ``seq`` an AUTOINCREMENT ``table`` ever assigned: unlike ``MAX(seq)`` it never goes
    back after a delete, so a cursor at it can never be passed again by an older row."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
    return row[0] if row else 0


@dataclass(frozen=True, slots=True)
class Candidates:
    """Rows a search found, best first, as ``(seq, score, row in the file or -1)``, and the file view
    they came from."""

    found: list[tuple[int, float, int]]
    mapped: MappedVectors | None
    asked: int


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot for the enclosed reads (the caller's own transaction, when it has one open).

    Seqs are assigned under the write lock, so once the table's highest seq is read in a snapshot, every
    vector committed later has a higher one: a cursor can never skip a row.
    """
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


# A file is rebuilt once more than this share of its rows are erased, and it has at least COMPACT_ROWS rows
# (a small file costs little to search whatever it holds). Judged from a sample of COMPACT_SAMPLE rows
# spread over the file: reading every row's owner would page the whole file in on each purge.
COMPACT_SHARE = 0.5
COMPACT_ROWS = 4_096
COMPACT_SAMPLE = 512


def _mostly_erased(mapped: MappedVectors) -> bool:
    """Whether most of ``mapped``'s rows are erased (their owner checksum zeroed), judged from a sample."""
    count = len(mapped.rows)
    if count < COMPACT_ROWS:
        return False
    sample = mapped.rows["owner"][np.linspace(0, count - 1, COMPACT_SAMPLE).astype(np.int64)]
    return np.count_nonzero(sample == 0) > COMPACT_SHARE * COMPACT_SAMPLE


# Probes scored against the file in one matrix product: bounds the score matrix to a few tens of MB.
_PROBE_BLOCK = 128


class SyncedVectors:
    """One partition's vectors: a mapped file (when ``path`` is given and usable) and rows in memory.

    The caller serialises use of ``conn``; :meth:`nearest` may run in any thread.
    """

    def __init__(self, source: VectorSource, path: Path | None) -> None:
        self.source = source
        self.path = path
        self.version = 0  # changes whenever the searchable rows do
        self._mapped: MappedVectors | None = None
        self._file_cursor = 0  # the mapped file's cursor: every row up to it is in the file
        self._cursor = 0  # every row up to it is in the file or in memory
        self._pending = np.zeros(0, dtype=row_dtype(source.dim))  # rows in memory, not in the file
        self._memory = BruteForceIndex(source.dim)  # the pending rows, by seq
        self._dead: set[int] = set()  # file rows found stale
        self._codes: CoarseCodes | None = None  # int8 codes of the mapped file's first rows
        # The process whose background step is coding more rows (0: none). A forked child inherits the
        # parent's mark but not its thread, so only its own mark means a step is on the way.
        self._coding = 0
        self._coding_failed = False
        self._opened = False
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- keeping in step

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Open the file on first use, then take in the rows written since the last look."""
        with self._lock:
            if not self._opened:
                self._open(conn)
                self._opened = True
            with snapshot(conn):
                rows = self.source.rows_after(conn, self._cursor)
                top = self.source.top(conn)
            if rows:
                self._keep(make_rows(self.source.dim, rows))
            self._cursor = max(self._cursor, top)
            if self.path is not None and (len(self._pending) or self._cursor - self._file_cursor >= CURSOR_STEP):
                self._store(APPEND_WAIT)

    def _keep(self, rows: np.ndarray) -> None:
        self._pending = np.concatenate([self._pending, rows])
        self._memory.add([int(s) for s in rows["seq"]], rows["vector"])
        self.version += 1

    def _open(self, conn: sqlite3.Connection) -> None:
        if self.path is None:
            return
        try:
            mapped = MappedVectors.open(self.path, self.source.key, self.source.dim)
            problem = self._discontinuity(conn, mapped)
        except FileNotFoundError:
            mapped, problem = None, None
        except VectorFileError as exc:
            mapped, problem = None, str(exc)
        if problem is not None:
            log.warning("vector file %s: %s; rebuilding it from the database", self.path, problem)
            mapped = None
        if mapped is None:
            mapped = self._build(conn)
        if mapped is not None:
            self._use(mapped)

    def _discontinuity(self, conn: sqlite3.Connection, mapped: MappedVectors) -> str | None:
        """Why ``mapped`` is not a copy of this database's partition, or None when it is."""
        with snapshot(conn):
            if self.source.top(conn) < mapped.header.cursor:
                return "it is ahead of the database (a database restored or replaced)"
            rows = mapped.rows
            # Only the file's end is read: touching every row would page the whole file in.
            start = max(0, len(rows) - 4 * CONTINUITY_ROWS)
            live = (start + np.flatnonzero(rows["owner"][start:] != 0))[-CONTINUITY_ROWS:]
            if not len(live):
                return None
            owners = self.source.owners(conn, [int(rows["seq"][i]) for i in live])
        present = [i for i in live if int(rows["seq"][i]) in owners]
        if not present:
            return "none of its last rows are in the database any more"
        if any(owner_hash(owners[int(rows["seq"][i])]) != int(rows["owner"][i]) for i in present):
            return "its rows belong to other owners than the database's (another database's file)"
        return None

    def _build(self, conn: sqlite3.Connection) -> MappedVectors | None:
        """Write the partition's file from the database; None (and a log line) when that cannot be done."""
        assert self.path is not None
        try:
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
            with locked(self.path, BUILD_WAIT):
                # Another process may have built it while this one waited for the lock.
                try:
                    ready = MappedVectors.open(self.path, self.source.key, self.source.dim)
                    if self._discontinuity(conn, ready) is None:
                        return ready
                except (FileNotFoundError, VectorFileError):
                    pass
                # Read after taking the lock, so a purge that erased its rows before cannot be undone here.
                with snapshot(conn):
                    rows = self.source.rows_after(conn, 0)
                    top = self.source.top(conn)
                write_file(self.path, self.source.key, self.source.dim, make_rows(self.source.dim, rows), top)
                return MappedVectors.open(self.path, self.source.key, self.source.dim)
        except (OSError, VectorFileError) as exc:
            log_fallback(self.path, exc)
            self.path = None  # this process reads the database instead, as it did before files
            return None

    def _use(self, mapped: MappedVectors) -> None:
        if self._mapped is None or self._mapped.identity != mapped.identity:
            self._dead = set()
            self._codes = None
        self._mapped = mapped
        self._file_cursor = mapped.header.cursor
        self._cursor = max(self._cursor, mapped.header.cursor)
        still = self._pending[self._pending["seq"] > mapped.header.cursor]
        if len(still) != len(self._pending):
            self._memory.remove([int(s) for s in self._pending["seq"][self._pending["seq"] <= mapped.header.cursor]])
            self._pending = still
        self.version += 1

    def _store(self, wait: float) -> None:
        """Append the rows held in memory to the file and map it again; on failure they stay in memory."""
        assert self.path is not None
        try:
            with locked(self.path, wait):
                append_rows(
                    self.path, self.source.key, self.source.dim, self._pending, self._cursor,
                    known_cursor=self._file_cursor,
                )  # fmt: skip
                mapped = MappedVectors.open(self.path, self.source.key, self.source.dim)
        except VectorFileBusy:
            return  # another process is writing; the next refresh tries again
        except (OSError, VectorFileError) as exc:
            # The file changed under this process (or cannot be written): keep serving what is mapped and
            # in memory, and leave the repair to the next process that opens it.
            log.warning("vector file %s: cannot append (%s); new vectors stay in memory", self.path, exc)
            self.path = None
            return
        self._use(mapped)

    def erase(self, conn: sqlite3.Connection, seqs: Iterable[int]) -> None:
        """Forget purged rows (call after the purge committed): drop them from memory and overwrite them
        in the file, after catching the file up in a snapshot that no longer holds them, so a process
        still holding them from an older snapshot cannot append them again. When that fails the file is
        deleted: it is rebuilt from the database on next use."""
        gone = sorted(set(seqs))
        if not gone:
            return
        with self._lock:
            held = np.isin(self._pending["seq"], gone)
            if held.any():
                self._memory.remove([int(s) for s in self._pending["seq"][held]])
                self._pending = self._pending[~held]
                self.version += 1
            if self.path is None or not self.path.parent.is_dir():
                return
            try:
                with locked(self.path, BUILD_WAIT):
                    try:
                        current = MappedVectors.open(self.path, self.source.key, self.source.dim)
                    except FileNotFoundError:
                        return
                    with snapshot(conn):
                        rows = self.source.rows_after(conn, current.header.cursor)
                        top = self.source.top(conn)
                    append_rows(
                        self.path, self.source.key, self.source.dim, make_rows(self.source.dim, rows), top,
                        known_cursor=current.header.cursor,
                    )  # fmt: skip
                    erase_rows(self.path, self.source.key, self.source.dim, gone)
                    if _mostly_erased(MappedVectors.open(self.path, self.source.key, self.source.dim)):
                        # Every search reads every row: a file of mostly zeroed rows (a purge of extracted
                        # chatter) would cost its full size on each turn until something rebuilt it.
                        with snapshot(conn):
                            rows = self.source.rows_after(conn, 0)
                            top = self.source.top(conn)
                        write_file(self.path, self.source.key, self.source.dim, make_rows(self.source.dim, rows), top)
                        self._start_over()
            except (OSError, VectorFileError) as exc:
                log.warning("vector file %s: cannot erase purged vectors (%s); deleting the file", self.path, exc)
                self.path.unlink(missing_ok=True)
                self._start_over()

    # ----------------------------------------------------------------- searching

    def nearest(self, probe: np.ndarray, k: int) -> Candidates:
        """The ``k`` best rows for ``probe`` (a unit vector), unresolved; safe in any thread."""
        vector = np.asarray(probe, dtype=np.float32).reshape(-1)
        with self._lock:
            mapped, dead, codes = self._mapped, list(self._dead), self._codes
        found: list[tuple[int, float, int]] = []
        if mapped is not None and len(mapped.rows):
            vectors = mapped.rows["vector"]
            if codes is not None and codes.identity == mapped.identity and codes.count:
                rows, scores = nearest_rows(codes, vectors, vector, k, dead)
            else:
                scores = _dot(vectors, vector)
                if dead:
                    scores[dead] = -np.inf
                rows = _top_k(scores, k)
                scores = scores[rows]
            seqs = mapped.rows["seq"]
            found += [
                (int(seqs[row]), score, row) for row, score in zip(rows.tolist(), scores.tolist()) if score > -np.inf
            ]
            self._code_ahead(mapped)
        found += [(int(seq), score, -1) for seq, score in self._memory.search(vector, k)]
        found.sort(key=lambda c: -c[1])
        return Candidates(found[:k], mapped, k)

    def _code_ahead(self, mapped: MappedVectors) -> None:
        """Code a big file's rows for faster scans, in background steps, and keep the codes up with it."""
        if len(mapped.rows) < MIN_ROWS or not available():
            return
        with self._lock:
            if self._coding == os.getpid() or self._coding_failed or mapped is not self._mapped:
                return
            if self._coding:  # a parent's step may have been halfway through extending them at the fork
                self._codes = None
            if self._codes is None:
                self._codes = CoarseCodes(mapped.identity, self.source.dim, len(mapped.rows))
            if len(mapped.rows) - self._codes.count < LAG_ROWS:
                return
            self._coding = os.getpid()
        self._code_later(self._codes)

    def _code_later(self, codes: CoarseCodes) -> None:
        # One step at a time per file (the mark above), so the codes have a single writer.
        try:
            background().submit(self._code_step, codes)
        except RuntimeError:  # the interpreter is shutting down: the codes are not needed any more
            with self._lock:
                self._coding = 0

    def _code_step(self, codes: CoarseCodes) -> None:
        with self._lock:
            mapped = self._mapped
            if mapped is None or codes is not self._codes or codes.identity != mapped.identity:
                self._coding = 0
                return
        try:
            codes.extend(mapped.rows["vector"][codes.count : codes.count + CHUNK_ROWS])
        except Exception as exc:  # noqa: BLE001 - searches stay exact without codes; say why once
            log.warning("vector file %s: cannot code its rows for fast scans (%s); scanning them whole", self.path, exc)
            with self._lock:
                self._codes, self._coding, self._coding_failed = None, 0, True
            return
        if codes.count < len(mapped.rows):
            self._code_later(codes)
        else:
            with self._lock:
                self._coding = 0

    def resolve(self, conn: sqlite3.Connection, candidates: Candidates) -> list[tuple[Hashable, float]] | None:
        """``(owner, score)`` of the candidates the database still holds, best first; None when the
        search must be run again (stale rows took places that live ones should have, or the file turned
        out damaged and is being rebuilt)."""
        found, mapped = candidates.found, candidates.mapped
        owners = self.source.owners(conn, [seq for seq, _, _ in found]) if found else {}
        hits, stale, checked = [], [], []
        for seq, score, row in found:
            owner = owners.get(seq)
            if owner is None:
                stale.append((seq, row))
                continue
            if row >= 0 and mapped is not None:
                checked.append((row, owner, seq))
            hits.append((owner, score))
        if mapped is not None and not self._intact(mapped, checked):
            return None
        if not stale:
            return hits
        with self._lock:
            for seq, row in stale:
                if row < 0:
                    self._memory.remove([seq])
                elif candidates.mapped is self._mapped:
                    self._dead.add(row)
        # A full page of candidates may have hidden live rows behind the stale ones.
        return None if len(found) == candidates.asked else hits

    def _intact(self, mapped: MappedVectors, checked: Sequence[tuple[int, Hashable, int]]) -> bool:
        """Whether the file's rows of ``checked`` (row, owner, seq) match their checksums and owners; the file
        is dropped as damaged (see :meth:`_damaged`) when one does not."""
        bad = first_mismatch(mapped.rows, [row for row, _, _ in checked], [owner for _, owner, _ in checked])
        if bad is None:
            return True
        seq = next(seq for row, _, seq in checked if row == bad)
        self._damaged(mapped, f"row {bad} (seq {seq}) does not match the database")
        return False

    def _damaged(self, mapped: MappedVectors, problem: str) -> None:
        """Stop using a damaged file and delete it (if it is still the one mapped), so the next refresh
        rebuilds it from the database."""
        log_fallback(mapped.path, problem)
        with self._lock:
            if self._mapped is not mapped:
                return
            try:
                with locked(mapped.path, BUILD_WAIT):
                    stat = mapped.path.stat()
                    if (stat.st_dev, stat.st_ino) == mapped.identity:
                        mapped.path.unlink()
            except FileNotFoundError:
                pass  # another process found it first
            except (OSError, VectorFileError) as exc:
                log.warning("vector file %s: cannot delete it (%s)", mapped.path, exc)
                self.path = None
            self._start_over()

    def _start_over(self) -> None:
        """Drop the file view and every row held, so the next refresh opens (or rebuilds) from scratch."""
        self._mapped, self._opened, self._file_cursor, self._cursor = None, False, 0, 0
        self._pending = self._pending[:0]
        self._memory = BruteForceIndex(self.source.dim)
        self._dead = set()
        self._codes = None
        self.version += 1

    def search_many(
        self, conn: sqlite3.Connection, probes: np.ndarray, k: int, min_score: float
    ) -> list[list[tuple[Hashable, float]]]:
        """:meth:`search` for each row of ``probes``, keeping scores of at least ``min_score``: one matrix
        product per block of probes over the mapped rows (maintenance links a thousand new memories at once,
        where a product per probe would pass over the whole file each time), every hit verified against the
        database. A damaged file falls back to one :meth:`search` per probe, which rebuilds it."""
        matrix = np.asarray(probes, dtype=np.float32).reshape(-1, self.source.dim)
        with self._lock:
            mapped, dead = self._mapped, set(self._dead)
        found: list[list[tuple[int, float, int]]] = [[] for _ in range(len(matrix))]
        if mapped is not None and len(mapped.rows):
            vectors, seqs = mapped.rows["vector"], mapped.rows["seq"]
            for start in range(0, len(matrix), _PROBE_BLOCK):
                scores = matrix[start : start + _PROBE_BLOCK] @ vectors.T
                rows, columns = np.nonzero(scores >= min_score)
                for row, column in zip(rows.tolist(), columns.tolist()):
                    if column not in dead:
                        found[start + row].append((int(seqs[column]), float(scores[row, column]), column))
        for index, probe in enumerate(matrix):
            found[index] += [(int(seq), score, -1) for seq, score in self._memory.search(probe, k) if score >= min_score]
        wanted = {seq for hits in found for seq, _, _ in hits}
        owners = self.source.owners(conn, sorted(wanted)) if wanted else {}
        results: list[list[tuple[Hashable, float]]] = []
        for hits in found:
            hits.sort(key=lambda hit: (-hit[1], hit[0]))
            kept: list[tuple[Hashable, float]] = []
            checked = []
            for seq, score, row in hits:
                owner = owners.get(seq)
                if owner is None:
                    continue  # a purged or replaced vector: its row is stale
                if row >= 0 and mapped is not None:
                    checked.append((row, owner, seq))
                kept.append((owner, score))
                if len(kept) == k:
                    break
            if mapped is not None and not self._intact(mapped, checked):
                return [[h for h in self.search(conn, p, k) if h[1] >= min_score] for p in matrix]
            results.append(kept)
        return results

    def search(
        self, conn: sqlite3.Connection, probe: np.ndarray, k: int, ahead: Candidates | None = None
    ) -> list[tuple[Hashable, float]]:
        """The ``k`` nearest owners to ``probe``, verified against the database; ``ahead`` is a
        :meth:`nearest` result computed earlier for the same probe, used when still current."""
        candidates = ahead if ahead is not None else self.nearest(probe, k)
        if len(candidates.found) > k:
            # Only the best k are checked against the database: a stale row among them still sends the search
            # round again below, and one behind them can take no place from a live row.
            candidates = Candidates(candidates.found[:k], candidates.mapped, k)
        asked = k
        for _ in range(8):
            hits = self.resolve(conn, candidates)
            if hits is not None:
                return hits[:k]
            self.refresh(conn)  # a damaged file is rebuilt here
            asked = min(asked * 2, asked + 1_000)
            candidates = self.nearest(probe, asked)
        hits = self.resolve(conn, candidates)
        return (hits or [])[:k]
