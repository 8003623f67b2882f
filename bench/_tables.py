"""Plain-text tables for the benchmarks (they print numbers for people, not pass/fail)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def print_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[object]], cell: Callable[[object], str] = str
) -> None:
    """``rows`` under ``columns``, left-aligned, each value rendered by ``cell``."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print(title)
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    print(flush=True)
