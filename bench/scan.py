"""Cost of mnemo's safety layer: threat scan, context fence and streaming scrubber.

Run: ``python bench/scan.py``. Each row is the median of several timed repetitions. The baseline row
for the scan is NFKC normalisation plus lower-casing of the same text, the floor any Unicode-aware
scanner pays; the scrubber's baseline is joining the same chunks without scrubbing.
"""

from __future__ import annotations

import statistics
import time
import unicodedata
from collections.abc import Callable

from mnemo.safety import ContextScrubber, build_memory_context_block, sanitize_context, scan
from mnemo.safety.scan import SCAN_CHAR_LIMIT


def _median_seconds(function: Callable[[], object], *, budget: float = 0.4) -> float:
    """Median time of one call, repeating for about ``budget`` seconds (at least 5 runs)."""
    samples: list[float] = []
    deadline = time.perf_counter() + budget
    while len(samples) < 5 or time.perf_counter() < deadline:
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _row(label: str, chars: int, seconds: float, baseline: float | None = None) -> str:
    ratio = f"{seconds / baseline:6.1f}x" if baseline else "      "
    return f"{label:<56} {chars:>8,} {seconds * 1e6:>12,.1f} {ratio}"


SHORT_NOTE = "Project uses docker-compose; run `make test` before commit. Prod alias = 10.0.0.4."
ORDINARY = (
    "User prefers concise answers. Postgres on 5433. Deploy with `make release`; "
    "health: curl https://api.example.com/health. Key in ~/.ssh/config. "
)
HOSTILE_WORST_CASES = {
    "many tools then a credential path": "curl ." * 3_300 + " .env",
    "many tools then command substitutions": "curl $(" * 2_800,
    "many keygen then an append": "ssh-keygen " * 1_800 + ">>",
    "many netcat then a redirect": "nc " * 6_000 + "<",
    "many URLs with parameters": "https://a?b=" * 1_600,
}


def bench_scan() -> list[str]:
    curated = (ORDINARY * 20)[:2_200]
    large = (ORDINARY * 200)[:SCAN_CHAR_LIMIT]
    rows = []
    for label, text in (("short note", SHORT_NOTE), ("curated-size entry", curated), ("20k ordinary text", large)):
        floor = _median_seconds(lambda text=text: unicodedata.normalize("NFKC", text).lower())
        rows.append(_row(f"baseline NFKC+lower: {label}", len(text), floor))
        rows.append(_row(f"scan: {label}", len(text), _median_seconds(lambda text=text: scan(text)), floor))
    worst_label, worst_seconds, worst_chars = "", 0.0, 0
    for label, text in HOSTILE_WORST_CASES.items():
        seconds = _median_seconds(lambda text=text: scan(text), budget=0.2)
        if seconds > worst_seconds:
            worst_label, worst_seconds, worst_chars = label, seconds, min(len(text), SCAN_CHAR_LIMIT)
    rows.append(_row(f"scan worst hostile: {worst_label}", worst_chars, worst_seconds))
    huge = ORDINARY * 10_000
    rows.append(_row("scan: 1.4 MB text (capped at 20k)", len(huge), _median_seconds(lambda: scan(huge))))
    return rows


def bench_fence() -> list[str]:
    sections = [(f"provider-{n}", ("Recalled fact about the user. " * 20)) for n in range(4)]
    hostile = "fact </memory-context> <memory-context> " * 50
    return [
        _row("build block: 4 providers x 600 chars", 2_400, _median_seconds(lambda: build_memory_context_block(sections))),
        _row("sanitize: 2k chars full of fence tags", len(hostile), _median_seconds(lambda: sanitize_context(hostile))),
    ]


def bench_scrubber() -> list[str]:
    block = build_memory_context_block([("graph", "Prefers tea. " * 40)])
    text = ("The answer streams here. " * 40 + block) * 20
    chunks = [text[i : i + 16] for i in range(0, len(text), 16)]

    def scrub_stream() -> str:
        scrubber = ContextScrubber()
        return "".join(scrubber.feed(chunk) for chunk in chunks) + scrubber.flush()

    floor = _median_seconds(lambda: "".join(chunks))
    seconds = _median_seconds(scrub_stream)
    per_chunk = seconds / len(chunks)
    return [
        _row("baseline: join 16-char chunks", len(text), floor),
        _row("scrubber: stream in 16-char chunks", len(text), seconds, floor),
        f"{'  per chunk (us)':<56} {'':>8} {per_chunk * 1e6:>12,.2f}",
    ]


def main() -> None:
    header = f"{'operation':<56} {'chars':>8} {'median us':>12} {'vs base':>7}"
    print(header)
    print("-" * len(header))
    for row in (*bench_scan(), *bench_fence(), *bench_scrubber()):
        print(row)


if __name__ == "__main__":
    main()
