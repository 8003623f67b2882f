"""A search of a vector file: every row scanned as float32, against the int8 codes that choose which rows to score.

Per turn the graph and the archive each search a memory-mapped vector file (``embeddings/synced.py``); past
16,384 rows a process keeps int8 codes of it (``embeddings/coarse.py``). This bench writes vector files of real
MiniLM embeddings (LoCoMo dev turns, grown to each size with noisy neighbours of them, as ``bench/embeddings.py``
does), maps them as a search does, and times, per query:

* one file searched alone, float32 scan against codes (p50 / p95 ms, thread CPU);
* two files searched at once from two threads, as the graph's and the archive's are in a turn (wall time of the
  pair);
* how many rows the codes send to exact scoring, and whether the answer is the float32 scan's (rows and order);
* how long coding a file takes, and what the codes hold in memory.

It calls the search functions directly (no database): a guide to the scan's share of a turn, whose own figures
come from ``bench/e2e.py``.

Usage: ``python bench/vector_scan.py [--texts locomo.json] [--sizes 10000,100000] [--queries 200] [--k 100]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from _tables import print_table
from mnemo.embeddings import MiniLMEmbedder, coarse
from mnemo.embeddings.coarse import CHUNK_ROWS, CoarseCodes, available, nearest_rows
from mnemo.embeddings.index import _dot, _top_k
from mnemo.embeddings.vector_file import MappedVectors, make_rows, write_file

_DEFAULT_TEXTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
_DIM = 384


def _texts(path: Path) -> list[str]:
    texts = []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [turn["text"] for turn in turns if turn.get("text")]
    return list(dict.fromkeys(texts))


def _grown(base: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` unit vectors: ``base`` and noisy neighbours of it (cosine about 0.85 to their origin)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(base), max(0, size - len(base)))
    noisy = base[picks] + rng.normal(0.0, 0.03, (len(picks), base.shape[1])).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return np.concatenate([base, noisy])[:size].astype(np.float32)


def _file(directory: Path, name: str, vectors: np.ndarray) -> MappedVectors:
    path = directory / f"{name}.vec"
    rows = make_rows(_DIM, [(seq + 1, f"m{seq}", vector.tobytes()) for seq, vector in enumerate(vectors)])
    write_file(path, name, _DIM, rows, len(rows))
    return MappedVectors.open(path, name, _DIM)


def _coded(mapped: MappedVectors) -> tuple[CoarseCodes, float]:
    """Codes of every row, made in the background steps' chunks; and the seconds that took."""
    codes = CoarseCodes(mapped.identity, _DIM, len(mapped.rows))
    started = time.perf_counter()
    for start in range(0, len(mapped.rows), CHUNK_ROWS):
        codes.extend(mapped.rows["vector"][start : start + CHUNK_ROWS])
    return codes, time.perf_counter() - started


def _exact(vectors: np.ndarray, probe: np.ndarray, k: int) -> np.ndarray:
    scores = _dot(vectors, probe)
    return _top_k(scores, k)


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(ordered):.2f} / {ordered[int(0.95 * (len(ordered) - 1))]:.2f}"


def _alone(search: Callable[[np.ndarray], object], probes: np.ndarray) -> tuple[str, str]:
    walls, cpus = [], []
    for probe in probes:
        wall, cpu = time.perf_counter(), time.thread_time()
        search(probe)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.thread_time() - cpu) * 1000)
    return _percentiles(walls), _percentiles(cpus)


def _side_by_side(first: Callable[[np.ndarray], object], second: Callable[[np.ndarray], object], probes: np.ndarray) -> str:
    """Wall time of each pair of searches run at once on two threads, as a turn runs the graph's and the archive's."""
    walls = []
    for probe in probes:
        barrier = threading.Barrier(2)

        def run(search: Callable[[np.ndarray], object], probe: np.ndarray = probe) -> None:
            barrier.wait()
            search(probe)

        other = threading.Thread(target=run, args=(second,))
        other.start()
        started = time.perf_counter()
        run(first)
        other.join()
        walls.append((time.perf_counter() - started) * 1000)
    return _percentiles(walls)


def _exactly_scored(codes: CoarseCodes, vectors: np.ndarray, probe: np.ndarray, k: int) -> int:
    """Rows the coded search scores exactly for ``probe`` (its candidates and those the bound lets in), counted
    by watching what it hands to its exact scoring."""
    scored = 0
    exact = coarse._scored

    def counted(vectors: np.ndarray, rows: np.ndarray, probe: np.ndarray, dead: list[int]) -> np.ndarray:
        nonlocal scored
        scored += len(rows)
        return exact(vectors, rows, probe, dead)

    coarse._scored = counted
    try:
        nearest_rows(codes, vectors, probe, k, [])
    finally:
        coarse._scored = exact
    return scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=Path, default=_DEFAULT_TEXTS, help="LoCoMo-format JSON to draw texts from")
    parser.add_argument("--sizes", default="10000,100000", help="rows per file, comma separated")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=100, help="rows asked of each search (a turn asks 100)")
    args = parser.parse_args()
    if not available():
        raise SystemExit("no SIMD int8 kernel on this machine: searches scan float32 rows, nothing to compare")
    texts = _texts(args.texts)
    embedder = MiniLMEmbedder()
    probes = embedder.embed(texts[: args.queries])
    base = embedder.embed(texts[args.queries :])
    speed, quality = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            graph, archive = _file(Path(scratch), f"graph-{size}", _grown(base, size, 1)), _file(
                Path(scratch), f"archive-{size}", _grown(base[::-1], size, 2)
            )
            (graph_codes, seconds), (archive_codes, _) = _coded(graph), _coded(archive)
            floats = [lambda p, m=m: _exact(m.rows["vector"], p, args.k) for m in (graph, archive)]
            coded = [
                lambda p, m=m, c=c: nearest_rows(c, m.rows["vector"], p, args.k, [])
                for m, c in ((graph, graph_codes), (archive, archive_codes))
            ]
            for name, searches in (("float32 scan", floats), ("int8 codes", coded)):
                wall, cpu = _alone(searches[0], probes)
                speed.append([f"{size:,}", name, wall, cpu, _side_by_side(searches[0], searches[1], probes)])
            vectors = graph.rows["vector"]
            same = sum(
                np.array_equal(nearest_rows(graph_codes, vectors, p, args.k, [])[0], _exact(vectors, p, args.k))
                for p in probes
            )
            scored = [_exactly_scored(graph_codes, vectors, p, args.k) for p in probes]
            quality.append([
                f"{size:,}", f"{same} / {len(probes)}", f"{statistics.mean(scored):.0f} ({max(scored)})",
                f"{seconds * 1000:.0f}", f"{graph_codes.count * (_DIM + 4) / 1e6:.1f}",
            ])  # fmt: skip
    print_table(
        f"one search of k={args.k} (ms, p50 / p95; {args.queries} queries)",
        ["rows", "how", "alone, wall", "alone, thread CPU", "two files at once, wall"],
        speed,
    )
    print_table(
        "the codes",
        ["rows", "answer identical to the float32 scan", "rows scored exactly, mean (max)", "coding ms", "codes MB"],
        quality,
    )


if __name__ == "__main__":
    main()
