"""Memory-graph maintenance cost at 10k and 100k memories (one scope, plus a second scope it must not touch).

Rows printed per size, each pass dated ten days after the last so that every memory decays:

* ``full pass``: decay and prune every memory, nothing new to link (the steady-state daily pass);
* ``incremental pass, 1% new``: the same with 1% new memories (100 at 10k, 1,000 at 100k) to link and
  consolidate against the whole scope (a tenth of them near-duplicates of an existing memory, a tenth close
  neighbours);
* ``first pass, every memory new`` (10k only): linking every memory against every other is quadratic, so at
  100k it is the one-off cost of maintaining a graph built before maintenance existed; session-start passes
  spread it over sessions (``SESSION_BUDGET`` memories a phase each);
* ``session start, no pass due``: ``maintain(due_only=True)`` when the last pass is recent (what every
  session start pays), and ``render_bulletin`` (what every session start renders).

Baselines measured on the same database in the same run: a bare ``UPDATE`` of every memory's importance
(the SQL floor of decay) and a loop of single-vector brute-force searches for the new memories' neighbours
(what the batched search replaced). Vectors are synthetic (random cluster centres plus noise, 384
dimensions, stored under one model name); their embedding cost is not part of a pass and is not timed.

Usage: ``python bench/maintenance.py [--quick]`` (``--quick``: 10k only).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _tables import print_table  # noqa: E402
from mnemo.embeddings import BruteForceIndex  # noqa: E402
from mnemo.graph import MemoryGraph, MemoryType, Scope  # noqa: E402
from mnemo.graph.bulletin import render_bulletin  # noqa: E402
from mnemo.storage import open_graph

DIM = 384
DAY = 86_400.0
_SCOPE = Scope(user_id="alice")
_OTHER = Scope(user_id="bob")
_KINDS = (MemoryType.FACT, MemoryType.EVENT, MemoryType.OBSERVATION, MemoryType.PREFERENCE, MemoryType.DECISION)


class _Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class _TableEmbedder:
    """A fixed vector per text, under one model name: the memories' vectors without the model's cost."""

    name, dim = "synthetic-384", DIM

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, DIM), np.float32)


class _Corpus:
    def __init__(self, seed: int = 11) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self._unit(self.rng.normal(size=(2_000, DIM)))
        self.count = 0
        self.vectors: list[np.ndarray] = []

    @staticmethod
    def _unit(matrix: np.ndarray) -> np.ndarray:
        return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)

    def items(self, count: int, embedder: _TableEmbedder, *, echoes: bool) -> list[dict]:
        """``count`` memories; with ``echoes`` a tenth repeat an earlier memory almost exactly and a tenth
        sit close to one, so consolidation and linking have real work."""
        out = []
        for _ in range(count):
            roll = self.rng.random()
            if echoes and self.vectors and roll < 0.2:
                source = self.vectors[int(self.rng.integers(0, len(self.vectors)))]
                noise = 0.004 if roll < 0.1 else 0.02  # cosine about 0.997 / 0.93 to the source
                vector = self._unit((source + self.rng.normal(0, noise, DIM))[None])[0]
            else:
                centre = self.centres[int(self.rng.integers(0, len(self.centres)))]
                vector = self._unit((centre + self.rng.normal(0, 0.08, DIM))[None])[0]
            self.count += 1
            text = f"memory {self.count} about topic {int(self.rng.integers(0, 5_000))}"
            embedder.table[text] = vector
            self.vectors.append(vector)
            kind = _KINDS[int(self.rng.integers(0, len(_KINDS)))]
            out.append({"content": text, "memory_type": kind, "subject": "user", "source": f"s{self.count // 40}"})
        return out


def _write(graph: MemoryGraph, items: list[dict]) -> None:
    for start in range(0, len(items), 1_000):
        graph.remember_many(items[start : start + 1_000])
    graph.embed_pending(batch_size=1_000)


def _timed(run) -> tuple[float, object]:
    start = time.perf_counter()
    value = run()
    return time.perf_counter() - start, value


def _bare_update(path: Path) -> float:
    conn = sqlite3.connect(path)
    try:
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE graph_memories SET importance = importance * 1.0 WHERE user_id = 'alice'")
        conn.execute("ROLLBACK")
        return time.perf_counter() - start
    finally:
        conn.close()


def _single_searches(corpus: _Corpus, new: int) -> float:
    index = BruteForceIndex(DIM)
    index.add(list(range(len(corpus.vectors))), np.stack(corpus.vectors))
    start = time.perf_counter()
    for vector in corpus.vectors[-new:]:
        index.search(vector, 6)
    return time.perf_counter() - start


def _size(total: int, workdir: Path, rows: list[list[object]], first_pass: bool) -> None:
    clock, embedder, corpus = _Clock(), _TableEmbedder(), _Corpus()
    path = workdir / f"maint-{total}.db"
    with open_graph(path, clock=clock, embedder=embedder) as base:
        graph, other = base.with_scope(_SCOPE), base.with_scope(_OTHER)
        _write(graph, corpus.items(total, embedder, echoes=False))
        _write(other, corpus.items(max(total // 10, 100), embedder, echoes=False))
        if first_pass:
            clock.now += 10 * DAY
            seconds, report = _timed(lambda: graph.maintain())
            rows.append([f"{total:,}", "first pass, every memory new", f"{seconds:.2f}", _counts(report)])
        else:
            # Catch the link cursor up without timing it (the one-off cost measured at 10k).
            graph.maintain(link_threshold=1.0)
        clock.now += 10 * DAY
        seconds, report = _timed(lambda: graph.maintain())
        rows.append([f"{total:,}", "full pass (decay + prune all, nothing new)", f"{seconds:.2f}", _counts(report)])
        rows.append([f"{total:,}", "  baseline: bare UPDATE of every importance", f"{_bare_update(path):.2f}", ""])
        new = total // 100
        _write(graph, corpus.items(new, embedder, echoes=True))
        clock.now += 10 * DAY
        seconds, report = _timed(lambda: graph.maintain())
        rows.append([f"{total:,}", f"incremental pass, 1% new ({new:,})", f"{seconds:.2f}", _counts(report)])
        rows.append([f"{total:,}", f"  baseline: {new:,} single-vector searches", f"{_single_searches(corpus, new):.2f}", ""])
        samples = []
        for _ in range(50):
            seconds, report = _timed(lambda: graph.maintain(due_only=True))
            assert report.skipped == "not due"
            samples.append(seconds * 1000)
        rows.append([f"{total:,}", "session start, no pass due (p50 / max ms)", f"{np.median(samples):.2f} / {max(samples):.2f}", ""])
        bulletin = []
        for _ in range(10):
            seconds, text = _timed(lambda: render_bulletin(graph))
            bulletin.append(seconds * 1000)
        rows.append([f"{total:,}", "session start, render_bulletin (p50 ms)", f"{np.median(bulletin):.1f}", f"{len(text)} chars"])
        assert other.associations() == [] and all(m.importance == m.original_importance for m in other.memories()[:100])


def _counts(report) -> str:
    return ", ".join(f"{k} {getattr(report, k):,}" for k in ("decayed", "pruned", "linked", "merged", "contradictions"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k memories only")
    parser.add_argument("--workdir", type=Path, help="where to put the databases (default: a temporary directory)")
    args = parser.parse_args()
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for total in (10_000,) if args.quick else (10_000, 100_000):
            _size(total, Path(tmp), rows, first_pass=total <= 10_000)
            print(f"done {total:,}", file=sys.stderr, flush=True)
    print_table("graph maintenance: pass time (seconds unless marked)", ["memories", "what", "time", "work"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
