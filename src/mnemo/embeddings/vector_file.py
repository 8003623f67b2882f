"""A derived file of fixed-width float32 vectors, memory-mapped so a new process searches it at once.

SQLite stays the truth; a vector file is a copy of one partition of a vector table (the graph's vectors of
one scope and model, say), kept beside the database so a process that starts does not read every vector
out of SQLite first (3 s at 100,000 memories). Each row holds the vector's ``seq`` in its table (which is
never reused), a CRC-32 of its owner's id, the vector, and a CRC-32 of the row, so whoever uses a row can
check it against the database: a row whose seq no longer exists is stale, and a row whose owner or
checksum disagrees means the file is damaged, never a wrong answer.

Layout: a 4,096-byte header holding two header slots, then the rows in ascending ``seq``. A slot records
the format, the partition's key, the dimension, how many rows are committed, the highest table ``seq``
the rows cover (the cursor), a generation number, and its own CRC-32. Appending writes the rows past the
committed ones, fsyncs, then writes the next generation into the other slot and fsyncs again, so a
process killed at any point leaves the previous generation intact (and any half-written rows beyond it,
which the next writer cuts off). Readers take no lock: they use the valid slot with the highest
generation and map only the rows it commits. Writers take an exclusive ``flock`` on a lock file beside the
vector file; a file is created or rebuilt whole (temp file, fsync, rename, fsync of the directory).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mmap
import os
import struct
import time
import zlib
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._files import atomic_write, remove_stale_temp_files
from ..errors import MnemoError

log = logging.getLogger("mnemo.vectors")

MAGIC = b"MNEMOVEC"
FORMAT = 1
HEADER_BYTES = 4096
_SLOT_BYTES = HEADER_BYTES // 2
_SLOT = struct.Struct("<8sIIQQqI")  # magic, format, dim, generation, count, cursor, key length
MAX_KEY_BYTES = _SLOT_BYTES - _SLOT.size - 4
SUFFIX = ".vec"


class VectorFileError(MnemoError):
    """A vector file is unreadable, cut short, damaged, or not the one expected; it is rebuilt."""


class VectorFileBusy(VectorFileError):
    """Another process held a vector file's lock for longer than this one would wait."""


def row_dtype(dim: int) -> np.dtype:
    """One row: the vector's table ``seq``, its owner's id checksum, the row checksum, the vector (packed, in
    that order: :func:`_crc` reads the bytes)."""
    return np.dtype([("seq", "<i8"), ("owner", "<u4"), ("crc", "<u4"), ("vector", "<f4", (dim,))])


def owner_hash(owner: Hashable) -> int:
    """The checksum a row keeps of its owner's id (a memory id, a message id)."""
    return zlib.crc32(str(owner).encode("utf-8"))


# Where a row's checksum sits, as bytes: it covers the seq and owner before it and the vector after it.
_CRC_AT, _VECTOR_AT = 12, 16


def _crc(raw: bytes | memoryview) -> int:
    """The checksum of one row's bytes: its seq and owner, then its vector."""
    return zlib.crc32(raw[_VECTOR_AT:], zlib.crc32(raw[:_CRC_AT]))


def _row_crc(row: np.void) -> int:
    return _crc(row.tobytes())


def make_rows(dim: int, rows: Sequence[tuple[int, Hashable, bytes]]) -> np.ndarray:
    """Rows for ``(seq, owner, float32 vector bytes)`` triples (as read from the table), checksummed."""
    out = np.zeros(len(rows), dtype=row_dtype(dim))
    if rows:
        out["seq"] = [r[0] for r in rows]
        out["owner"] = [owner_hash(r[1]) for r in rows]
        out["vector"] = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), dim)
        for row in out:
            row["crc"] = _row_crc(row)
    return out


def row_is_intact(row: np.void) -> bool:
    """Whether a row still matches its checksum."""
    return int(row["crc"]) == _row_crc(row)


def first_mismatch(rows: np.ndarray, positions: Sequence[int], owners: Sequence[Hashable]) -> int | None:
    """The first of ``positions`` (indices into ``rows``) whose row fails its checksum or names another owner
    than its own in ``owners`` (one per position); ``None`` when all of them match. One copy of the rows and
    a checksum over each one's bytes: a search checks a few hundred rows."""
    if not positions:
        return None
    picked = rows[np.asarray(positions, dtype=np.intp)]
    raw = memoryview(picked.tobytes())
    size = picked.dtype.itemsize
    for index, (owner, kept, crc) in enumerate(zip(owners, picked["owner"].tolist(), picked["crc"].tolist(), strict=True)):
        at = index * size
        if kept != owner_hash(owner) or crc != _crc(raw[at : at + size]):
            return positions[index]
    return None


@dataclass(frozen=True, slots=True)
class Header:
    """What a header slot records."""

    key: str
    dim: int
    generation: int
    count: int
    cursor: int

    def pack(self) -> bytes:
        key = self.key.encode("utf-8")
        body = _SLOT.pack(MAGIC, FORMAT, self.dim, self.generation, self.count, self.cursor, len(key)) + key
        return body + struct.pack("<I", zlib.crc32(body))


def _unpack(slot: bytes) -> Header | None:
    if len(slot) < _SLOT.size:
        return None
    magic, version, dim, generation, count, cursor, key_length = _SLOT.unpack_from(slot)
    if magic != MAGIC or version != FORMAT or key_length > MAX_KEY_BYTES:
        return None
    end = _SLOT.size + key_length
    (crc,) = struct.unpack_from("<I", slot, end)
    if crc != zlib.crc32(slot[:end]):
        return None
    return Header(slot[_SLOT.size : end].decode("utf-8"), dim, generation, count, cursor)


def _read_header(fd: int) -> tuple[Header, int]:
    """The committed header and which slot holds it; :class:`VectorFileError` when neither is valid."""
    raw = os.pread(fd, HEADER_BYTES, 0)
    slots = [_unpack(raw[i * _SLOT_BYTES : (i + 1) * _SLOT_BYTES]) for i in (0, 1)]
    valid = [(h.generation, i, h) for i, h in enumerate(slots) if h is not None]
    if not valid:
        raise VectorFileError("no valid header (not a vector file, or damaged)")
    _, slot, header = max(valid)
    return header, slot


def _check(header: Header, key: str, dim: int) -> None:
    if header.key != key or header.dim != dim:
        raise VectorFileError(f"holds {header.key!r} (dim {header.dim}), expected {key!r} (dim {dim})")


class MappedVectors:
    """A read-only, memory-mapped view of the rows a vector file's header commits (never changes)."""

    def __init__(self, path: Path, header: Header, rows: np.ndarray, identity: tuple[int, int]) -> None:
        self.path = path
        self.header = header
        self.rows = rows
        self.identity = identity  # (device, inode): a rebuilt file is another one

    @classmethod
    def open(cls, path: Path, key: str, dim: int) -> MappedVectors:
        """Map ``path``; :class:`FileNotFoundError` when absent, :class:`VectorFileError` when unusable."""
        fd = os.open(path, os.O_RDONLY)
        try:
            header, _ = _read_header(fd)
            _check(header, key, dim)
            stat = os.fstat(fd)
            dtype = row_dtype(dim)
            end = HEADER_BYTES + header.count * dtype.itemsize
            if stat.st_size < end:
                raise VectorFileError(f"cut short: {stat.st_size:,} bytes, its header commits {end:,}")
            if header.count == 0:
                rows = np.zeros(0, dtype=dtype)
            else:
                # Only the committed rows are mapped: a writer may cut off half-written rows past them.
                buffer = mmap.mmap(fd, end, prot=mmap.PROT_READ)
                rows = np.frombuffer(buffer, dtype=dtype, count=header.count, offset=HEADER_BYTES)
            return cls(path, header, rows, (stat.st_dev, stat.st_ino))
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise VectorFileError(f"cannot read: {exc}") from exc
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(path: Path, wait: float) -> Iterator[None]:
    """Hold the exclusive writer lock of vector file ``path`` (its ``.lock`` sibling), waiting at most
    ``wait`` seconds for it; :class:`VectorFileBusy` when that was not enough."""
    import fcntl

    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise VectorFileBusy(f"{path.name} is being written by another process") from None
                time.sleep(0.005)
        # Every writer of the file holds this lock, so a temp file of it now is a killed writer's.
        remove_stale_temp_files(path, 0, pid_names=True)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_file(path: Path, key: str, dim: int, rows: np.ndarray, cursor: int) -> None:
    """Create or replace ``path`` whole, atomically and durably (call with the lock held)."""
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise VectorFileError(f"key of {len(key)} characters is too long for a header")
    header = Header(key, dim, 1, len(rows), cursor).pack()
    atomic_write(path, header.ljust(_SLOT_BYTES, b"\0").ljust(HEADER_BYTES, b"\0"), rows.tobytes())


def append_rows(path: Path, key: str, dim: int, rows: np.ndarray, cursor: int, *, known_cursor: int) -> Header:
    """Append the ``rows`` newer than the file's cursor and move the cursor to ``cursor`` (call with the
    lock held). ``rows`` must hold every row of the partition above ``known_cursor``, a cursor this
    process saw in the file; a file whose cursor is below it is not the one this process knew, and is
    refused. Returns the header now committed."""
    fd = os.open(path, os.O_RDWR)
    try:
        header, slot = _read_header(fd)
        _check(header, key, dim)
        if header.cursor < known_cursor:
            raise VectorFileError(f"cursor {header.cursor} went back below {known_cursor}")
        fresh = rows[rows["seq"] > header.cursor]
        if not len(fresh) and cursor <= header.cursor:
            return header
        end = HEADER_BYTES + header.count * row_dtype(dim).itemsize
        if os.fstat(fd).st_size < end:
            raise VectorFileError(f"cut short below its {header.count:,} committed rows")
        os.ftruncate(fd, end)  # half-written rows of a writer that was killed
        if len(fresh):
            os.pwrite(fd, fresh.tobytes(), end)
            os.fsync(fd)
        committed = Header(key, dim, header.generation + 1, header.count + len(fresh), max(cursor, header.cursor))
        os.pwrite(fd, committed.pack(), (1 - slot) * _SLOT_BYTES)
        os.fsync(fd)
        return committed
    finally:
        os.close(fd)


def erase_rows(path: Path, key: str, dim: int, seqs: Sequence[int]) -> int:
    """Overwrite the rows of ``seqs`` with zeros (their vectors were purged), keeping their seq so the rows
    stay in order, and fsync; returns how many were found (call with the lock held)."""
    mapped = MappedVectors.open(path, key, dim)
    stored = mapped.rows["seq"]
    wanted = np.unique(np.asarray(list(seqs), dtype=np.int64))
    at = np.searchsorted(stored, wanted)
    at = at[at < len(stored)]
    at = at[np.isin(stored[at], wanted)]
    if not len(at):
        return 0
    blank = np.zeros(1, dtype=mapped.rows.dtype)
    fd = os.open(path, os.O_RDWR)
    try:
        for index in at:
            blank["seq"] = stored[index]
            blank["crc"] = _row_crc(blank[0])
            os.pwrite(fd, blank.tobytes(), HEADER_BYTES + int(index) * mapped.rows.dtype.itemsize)
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(at)


@dataclass(frozen=True, slots=True)
class VectorFileStatus:
    """What :func:`vector_file_status` found: ``state`` is ``ok``, ``missing`` or ``damaged``."""

    path: str
    state: str
    key: str | None = None
    dim: int | None = None
    rows: int | None = None
    cursor: int | None = None
    generation: int | None = None
    bytes: int | None = None
    erased: int | None = None  # rows of purged or replaced vectors, zeroed; a rebuild reclaims them
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return asdict(self)


def vector_file_status(path: str | os.PathLike[str]) -> VectorFileStatus:
    """Check one vector file without changing it: its header, its size, and every row's checksum.

    A damaged or missing file is not an error for mnemo (the database is the truth; the file is rebuilt
    on next use), so this reports rather than raises; ``mnemo doctor`` shows it.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return VectorFileStatus(str(path), "missing")
    except OSError as exc:
        return VectorFileStatus(str(path), "damaged", problem=f"cannot open: {exc}")
    try:
        size = os.fstat(fd).st_size
        try:
            header, _ = _read_header(fd)
        except VectorFileError as exc:
            return VectorFileStatus(str(path), "damaged", bytes=size, problem=str(exc))
    finally:
        os.close(fd)
    found = VectorFileStatus(str(path), "ok", header.key, header.dim, header.count, header.cursor, header.generation, size)
    try:
        mapped = MappedVectors.open(path, header.key, header.dim)
    except (OSError, VectorFileError) as exc:
        return _replace(found, state="damaged", problem=str(exc))
    bad = sum(1 for row in mapped.rows if not row_is_intact(row))
    if bad:
        return _replace(found, state="damaged", problem=f"{bad:,} rows fail their checksum")
    seqs = mapped.rows["seq"]
    if len(seqs) and (np.any(np.diff(seqs) <= 0) or int(seqs[-1]) > header.cursor):
        return _replace(found, state="damaged", problem="rows out of order or beyond the cursor")
    return _replace(found, erased=int(np.count_nonzero(mapped.rows["owner"] == 0)))


def _replace(status: VectorFileStatus, **changes: Any) -> VectorFileStatus:
    return VectorFileStatus(**{**status.as_dict(), **changes})


def vector_files(database: str | os.PathLike[str]) -> list[Path]:
    """The vector files derived from ``database`` (see :func:`directory_for`), sorted."""
    directory = directory_for(database)
    return sorted(directory.glob(f"*{SUFFIX}")) if directory is not None and directory.is_dir() else []


def file_name(key: str) -> str:
    """The file name of a partition: its kind (the key's first field) and a hash of the whole key, so no
    scope or model name can reach outside the directory."""
    return f"{key.split(chr(31))[0]}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:24]}{SUFFIX}"


def directory_for(database: str | os.PathLike[str]) -> Path | None:
    """Where the vector files derived from ``database`` live: a directory beside it, named after it
    (``mnemo.db`` → ``mnemo.db-vectors``), so they can never be mistaken for another database's; None
    for a database that is not a file (``:memory:``, a temporary one)."""
    if str(database) in ("", ":memory:") or str(database).startswith("file:"):
        return None
    database = Path(database)
    return database.with_name(f"{database.name}-vectors")


def log_fallback(path: Path, problem: object) -> None:
    """Say, once per event, that a vector file could not be used and the database is read instead."""
    log.warning("vector file %s: %s; reading vectors from the database instead", path, problem)
