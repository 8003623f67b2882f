"""Benchmark the curated history's size: how many bytes each write adds as a store fills up.

Adds ``--adds`` short entries one by one through :class:`~mnemo.MemoryStore` (limits raised so none is
refused, as a long-lived agent with raised limits would), then prints, per quarter of the run, the history
bytes each write added and the time a write took, with the history's total size beside ``MEMORY.md``'s and
the time to read it all back. A history that keeps every write's whole entry list grows with the square of the
edits (its bytes per write rise quarter by quarter); one that keeps what changed stays flat.

    python bench/curated_history.py [--adds 1886] [--dir DIR]

(``PYTHONPATH=<another checkout>/src`` measures that checkout's history the same way.)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _tables import print_table
from mnemo import Add, MemoryStore

RAISED_LIMIT = 10_000_000


def _entry(i: int) -> str:
    return f"note {i:05d}: port {6000 + i % 997}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adds", type=int, default=1886, help="entries to add (default 1886)")
    parser.add_argument("--dir", type=Path, default=None, help="where to create the scratch store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir=args.dir) as scratch:
        directory = Path(scratch) / "memories"
        store = MemoryStore(directory, memory_char_limit=RAISED_LIMIT, user_char_limit=RAISED_LIMIT)
        store.load()
        history = store.history.path
        quarters = [args.adds * q // 4 for q in range(5)]
        rows = []
        for first, last in zip(quarters, quarters[1:]):
            size = history.stat().st_size if history.exists() else 0
            start = time.perf_counter()
            for i in range(first, last):
                store.apply("memory", Add(_entry(i)))
            took = time.perf_counter() - start
            grown = history.stat().st_size - size
            rows.append(
                (f"adds {first + 1:,}-{last:,}", f"{grown / (last - first):,.0f}", f"{took / (last - first) * 1e3:.2f}")
            )
        start = time.perf_counter()
        records = store.history.records()
        read = time.perf_counter() - start
        assert len(records) == args.adds
        memory_file = store.path("memory").stat().st_size
        print_table(
            f"curated history after {args.adds:,} adds: {history.stat().st_size:,} bytes beside a "
            f"{memory_file:,}-byte MEMORY.md; all records read back in {read * 1e3:,.0f} ms",
            ["writes", "history bytes per write", "ms per write"],
            rows,
        )


if __name__ == "__main__":
    main()
