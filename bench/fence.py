"""How long fencing and scrubbing take on large and hostile provider or model text (issue 16).

Run: ``python bench/fence.py``. Each cell is the best of five calls. The baseline column is
``str.lower`` of the same text: one C-speed pass over every character, the floor any folding pays.
Linear time shows as a 1 MB / 64 KB ratio near 16.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from _tables import print_table
from mnemo.safety import ContextScrubber, sanitize_context, scrub_memory_context

SIZES = {"64 KB": 64 * 1024, "1 MB": 1024 * 1024}


def _best(function: Callable[[str], object], text: str, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        function(text)
        best = min(best, time.perf_counter() - started)
    return best


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _nested(size: int) -> str:
    half = size // 16
    return "<memory-" * half + "context>" * half


INPUTS: dict[str, Callable[[int], str]] = {
    "plain prose": lambda size: _repeat("The user prefers tea and deploys on Fridays. ", size),
    "nested tag fragments": _nested,
    "whole tags": lambda size: _repeat("<memory-context>x</memory-context>", size),
    "'< ' runs": lambda size: _repeat("< ", size),
    "look-alike tags": lambda size: _repeat("\u2039mem\u200bo\u0440y-context\u203a ", size),
    "character references": lambda size: _repeat("&lt;", size),
}


def _stream(text: str) -> str:
    scrubber = ContextScrubber()
    return "".join(scrubber.feed(text[i : i + 16]) for i in range(0, len(text), 16)) + scrubber.flush()


def main() -> None:
    rows = []
    for name, make in INPUTS.items():
        for size_name, size in SIZES.items():
            text = make(size)
            baseline = _best(str.lower, text)
            cells = [_best(function, text) for function in (sanitize_context, scrub_memory_context, _stream)]
            rows.append([name, size_name, f"{baseline * 1e3:.2f}", *(f"{seconds * 1e3:.1f}" for seconds in cells)])
    print_table(
        "fence and scrubber, milliseconds (best of 5)",
        ["input", "size", "baseline lower()", "sanitize_context", "scrub_memory_context", "ContextScrubber, 16-char chunks"],
        rows,
    )


if __name__ == "__main__":
    main()
