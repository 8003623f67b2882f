"""Int8 codes of a vector file's rows: an exact search that reads a quarter of the bytes.

A search of a vector file scores every row, and at 100,000 rows of 384 float32 that scan is bound by memory
bandwidth (6-9 ms alone, 16-20 ms when the graph's and the archive's scans run side by side on two cores).
:class:`CoarseCodes` keeps each row as 384 int8 codes and a scale (per row, so no value is clipped), scored by
numkong's integer dot-product kernels (AVX-512 VNNI, AVX2, NEON): about 2 ms for the same 100,000 rows.

The codes only choose which rows to score exactly. Rounding a unit vector's components to ``scale / 127``
moves its dot product with the query by at most a bound computed from the two scales and the vectors' L1
norms (:meth:`CoarseCodes.scores`), so :func:`nearest_rows` scores exactly the best candidates, then every
row whose coarse score plus that bound still reaches the k-th exact score: no row left out can belong to the
top k. The result is the exact search's, in the same order.

Without a SIMD kernel for the machine (numkong's portable loop is 3x slower than NumPy's float32 scan), or when numkong
cannot be loaded, no codes are kept and searches scan the float32 rows as before.
"""

from __future__ import annotations

import logging
from functools import cache
from types import ModuleType

import numpy as np

from .index import _dot, _top_k

log = logging.getLogger("mnemo.vectors")

# Files with fewer rows are scanned exactly: under a millisecond, less than the codes' fixed costs.
MIN_ROWS = 16_384
# Rows coded per step of a background build: about 8 ms of one core (bench/vector_scan.py).
CHUNK_ROWS = 8_192
# Rows a file may gain past its codes before they are coded too; meanwhile they are scanned exactly.
LAG_ROWS = 2_048

_CODE_RANGE = 127
# Float32 rounding of the scales and products: far below one code step, added to the bound all the same.
_ROUNDING_SLACK = 1e-5


@cache
def _kernels() -> ModuleType | None:
    """numkong, when it loads and has a SIMD kernel for this machine; None otherwise."""
    try:
        import numkong
    except ImportError as exc:  # a broken install of a native wheel costs speed, never a search
        log.warning("numkong cannot be loaded (%s); vector files are scanned as float32", exc)
        return None

    simd = any(enabled for name, enabled in numkong.get_capabilities().items() if name != "serial")
    return numkong if simd else None


def available() -> bool:
    """Whether int8 codes make a scan faster on this machine."""
    return _kernels() is not None


def _encode(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The int8 codes of ``vectors`` (rows) and each row's scale: ``vectors ~= codes * scale[:, None]``."""
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / _CODE_RANGE, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).astype(np.int8)
    return codes, scale


class CoarseCodes:
    """The int8 codes of the first :attr:`count` rows of one vector file (named by its ``identity``).

    One thread at a time extends the codes (the caller's to ensure) while others read them: a reader takes one
    consistent snapshot, and rows below a snapshot's count are never written again.
    """

    def __init__(self, identity: tuple[int, int], dim: int, capacity: int) -> None:
        self.identity = identity
        self.dim = dim
        self._codes = np.zeros((max(capacity, 1), dim), dtype=np.int8)
        self._scales = np.zeros(max(capacity, 1), dtype=np.float32)
        # (codes, scales, count, largest scale, largest L1 norm of a decoded row), replaced whole.
        self._snapshot: tuple[np.ndarray, np.ndarray, int, float, float] = (self._codes, self._scales, 0, 0.0, 0.0)

    @property
    def count(self) -> int:
        """Rows coded so far (the file's first rows)."""
        return self._snapshot[2]

    def extend(self, vectors: np.ndarray) -> None:
        """Code ``vectors``, the file's rows from :attr:`count` on."""
        codes, scales = _encode(np.asarray(vectors, dtype=np.float32))
        l1 = float((np.abs(codes).sum(axis=1, dtype=np.int32) * scales).max(initial=0.0))
        _, _, count, top_scale, top_l1 = self._snapshot
        end = count + len(codes)
        if end > len(self._codes):
            grown = max(end, len(self._codes) * 3 // 2)
            self._codes = np.concatenate([self._codes[:count], np.zeros((grown - count, self.dim), np.int8)])
            self._scales = np.concatenate([self._scales[:count], np.zeros(grown - count, np.float32)])
        self._codes[count:end] = codes
        self._scales[count:end] = scales
        self._snapshot = (
            self._codes, self._scales, end, max(top_scale, float(scales.max(initial=0.0))), max(top_l1, l1)
        )

    def scores(self, probe: np.ndarray, limit: int) -> tuple[np.ndarray, float]:
        """Approximate dot products of ``probe`` with the coded rows (the first ``limit`` at most), and a
        bound on how far each can be from the exact one."""
        kernels = _kernels()
        assert kernels is not None, "codes are only kept where available() holds"
        codes, scales, count, top_scale, top_l1 = self._snapshot
        count = min(count, limit)
        query, query_scale = _encode(probe.reshape(1, -1))
        products = np.asarray(kernels.cdist(query, codes[:count], metric="dot", out_dtype="float32")).reshape(-1)
        # q.v - q'.v' = q.(v - v') + (q - q').v', each rounding at most half a code step per component.
        bound = 0.5 * (top_scale * float(np.abs(probe).sum()) + float(query_scale[0]) * top_l1) + _ROUNDING_SLACK
        return products * scales[:count] * query_scale[0], bound


def nearest_rows(
    codes: CoarseCodes, vectors: np.ndarray, probe: np.ndarray, k: int, dead: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The exact top ``k`` of ``vectors`` (a file's float32 rows, the first ``codes.count`` of them coded) for
    ``probe``, the ``dead`` rows scored ``-inf``: ``(rows, scores)``, best first, in the order an exact scan
    gives."""
    coarse, bound = codes.scores(probe, len(vectors))
    if dead:
        coarse[[row for row in dead if row < len(coarse)]] = -np.inf
    # The best candidates by code, twice over, and every row not coded; scored exactly.
    rows = np.concatenate([_top_k(coarse, min(len(coarse), 2 * k + 32)), np.arange(len(coarse), len(vectors))])
    exact = _scored(vectors, rows, probe, dead)
    if len(rows) >= k:
        # A row whose coarse score plus the bound stays under the k-th exact score cannot be in the top k.
        kth = np.partition(exact, len(exact) - k)[len(exact) - k]
        missed = np.setdiff1d(np.flatnonzero(coarse + bound >= kth), rows)
        if len(missed):
            rows = np.concatenate([rows, missed])
            exact = np.concatenate([exact, _scored(vectors, missed, probe, dead)])
    # An exact scan ranks equal scores by row: so do these.
    order = np.argsort(rows, kind="stable")
    rows, exact = rows[order], exact[order]
    best = _top_k(exact, k)
    return rows[best], exact[best]


def _scored(vectors: np.ndarray, rows: np.ndarray, probe: np.ndarray, dead: list[int]) -> np.ndarray:
    exact = _dot(vectors[rows], probe)
    if dead:
        exact[np.isin(rows, dead)] = -np.inf
    return exact
