"""The NumPy encoder's weights, converted once and kept in a cache file that later processes map.

Turning the int8 model's layers into float32 costs every new process 30-40 ms on a 2-core machine, most of it
the kernel handing out 42 MB of fresh pages; mapping a file that already holds them, checking it included,
costs about 5 ms. So the first process that needs the encoder converts the weights as before and writes
them (a safetensors file, :mod:`mnemo.embeddings.safetensors`) on a background thread; every later one maps
that file.

The file is derived and disposable. Its name carries mnemo's layout version and the model file's size and
modification time, so an upgraded model gets a file of its own; every load checks the header, the sizes and
a fold of every byte (:func:`fold`) against the one recorded when the file was written; and a file that is
missing, cut short, damaged or from another model is never used: the encoder is built from the model again
and the file rewritten. The worst case is the conversion's cost, never a wrong vector. Deleting the
directory is always safe.

The directory is the embedder's: a home's ``cache_dir`` setting (``MNEMO_CACHE_DIR``), else ``HOME/cache``,
so a home holds everything mnemo writes for it; an embedder made outside any home uses
:func:`cache_directory`. When it cannot be created or written, nothing is cached, and the log and ``mnemo
doctor`` say why.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

import numpy as np

from .._files import remove_stale_temp_files
from .bert import BertEncoder
from .onnx_file import read_onnx
from .safetensors import data_chunks, read_safetensors, write_safetensors

log = logging.getLogger("mnemo.embeddings")

# Bumped whenever BertEncoder.state() changes meaning, so older files are never read as newer ones.
LAYOUT = 1
_SUFFIX = ".safetensors"

_WRITER = "mnemo-weights-cache"
_writing: set[Path] = set()
_writing_lock = threading.Lock()


def cache_directory() -> Path:
    """Where an embedder made outside any home caches: ``MNEMO_CACHE_DIR``, else ``$XDG_CACHE_HOME/mnemo``,
    else ``~/.cache/mnemo``."""
    given = os.environ.get("MNEMO_CACHE_DIR")
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "mnemo"


def cache_path(model: Path, directory: Path, name: str) -> Path:
    """The cache file in ``directory`` of the model file ``model`` (``name`` labels it for people listing
    the directory)."""
    stat = model.stat()
    source = f"{LAYOUT}:{stat.st_size}:{stat.st_mtime_ns}"
    digest = hashlib.sha256(f"{name}\n{source}".encode()).hexdigest()[:20]
    return directory / f"{name}-{digest}{_SUFFIX}"


def load_encoder(model: Path, directory: Path, *, name: str, heads: int) -> BertEncoder:
    """The encoder of the int8 ONNX model at ``model``: mapped from its cache file in ``directory`` when
    that is sound, else built from the model (the cache file then written on a background thread, which
    the process waits for at exit)."""
    try:
        path: Path | None = cache_path(model, directory, name)
    except OSError as exc:
        log.info("not caching %s's weights: %s", name, exc)
        path = None
    if path is not None:
        # A process killed while writing the file leaves a partial copy (21-55 MB) that only a writer would
        # otherwise clear, and once another process has written the file no process writes it again.
        remove_stale_temp_files(path)
        encoder = _read(path, heads)
        if encoder is not None:
            return encoder
    encoder = BertEncoder.from_onnx(read_onnx(model), heads=heads)
    if path is not None:
        with _writing_lock:
            if path in _writing:
                return encoder
            _writing.add(path)
        threading.Thread(target=_write, args=(path, encoder), name=_WRITER).start()
    return encoder


def wait_for_writes() -> None:
    """Return once every cache file this process started writing is written (or has failed): for callers
    that need the file on disk now, such as a benchmark timing the next load."""
    for thread in threading.enumerate():
        if thread.name == _WRITER:
            thread.join()


def fold(data: memoryview) -> str:
    """The XOR of ``data``'s 64-bit words (its tail bytes counted as one more word), in hex. Damage to a
    word changes it unless other damage cancels it bit for bit; a zeroed or garbled page does so with a
    chance of one in 2**64. Fast enough to run on every load (about 4 ms for the 55 MB file, most of it the
    page mapping the first query pays for anyway)."""
    whole = len(data) // 8 * 8
    words = np.frombuffer(data[:whole], dtype="<u8")
    tail = int.from_bytes(bytes(data[whole:]), "little")
    return f"{int(np.bitwise_xor.reduce(words, initial=0)) ^ tail:016x}"


def cache_problem(model: Path, directory: Path, *, name: str, heads: int) -> tuple[Path, str] | None:
    """The cache file of ``model`` and what is wrong with it, for ``mnemo doctor``; ``None`` when it is sound
    or not written yet into a directory that can take it (the next process that embeds writes it)."""
    path = cache_path(model, directory, name)
    _, problem = _open(path, heads)
    if problem is None and not path.exists():
        existing = next(parent for parent in path.parents if parent.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            problem = f"cannot be written: {existing} is not a writable directory"
    return None if problem is None else (path, problem)


def _read(path: Path, heads: int) -> BertEncoder | None:
    encoder, problem = _open(path, heads)
    if problem is not None:
        log.warning("the cached weights %s %s; rebuilding them", path, problem)
    return encoder


def _open(path: Path, heads: int) -> tuple[BertEncoder | None, str | None]:
    """The encoder the cache file at ``path`` holds, or why it cannot be used, phrased to follow "the
    cached weights" (``(None, None)`` when there is no file)."""
    try:
        stored = read_safetensors(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"are unreadable ({exc})"
    if stored.metadata.get("layout") != str(LAYOUT):
        return None, f"were written in layout {stored.metadata.get('layout')!r}, not {LAYOUT}"
    if stored.metadata.get("fold") != fold(stored.data):
        return None, "are damaged: their bytes no longer match their checksum"
    try:
        return BertEncoder.from_state(stored.tensors, heads=heads), None
    except Exception as exc:  # noqa: BLE001 - any file that does not load is rebuilt, never fatal
        return None, f"are not an encoder's weights ({exc})"


def _write(path: Path, encoder: BertEncoder) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        state = encoder.state()
        # Folded as the file will hold the bytes, which is how a reader sees them.
        summary = fold(memoryview(b"".join(data_chunks(state))))
        write_safetensors(path, state, {"layout": str(LAYOUT), "fold": summary})
    except OSError as exc:
        log.info("could not cache the model's weights in %s: %s", path.parent, exc)
    finally:
        with _writing_lock:
            _writing.discard(path)
