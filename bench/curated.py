"""Benchmark the curated store: add / replace / remove / batch on a store near its limit.

Runs each operation in a cycle (add A, replace A->B, batch [remove B, add C], remove C) so every
operation really rewrites the file, first in one process, then in 4 processes contending for the same
file. Reference lines measure, on the same disk, a bare ``write + fsync`` and the bare durable-write
protocol (temp file, fsync, rename, fsync of the directory) with no locking, parsing or scanning:
the floor any durable store pays per write.

    python bench/curated.py [--seconds 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mnemo import Add, MemoryStore, Remove, Replace
from mnemo.curated.entries import joined_length

LIMIT = 2200
PROCESSES = 4
OPS = ("add", "replace", "remove", "batch")


def _entry(worker: int, i: int, tag: str) -> str:
    return f"bench w{worker} {tag}{i:06d}: staging host is db-{i % 7}.internal"


def _fill(directory: Path) -> int:
    """Seed the store to just under the limit, leaving room for one cycle per contending process."""
    store = MemoryStore(directory, memory_char_limit=LIMIT)
    headroom = PROCESSES * (len(_entry(0, 0, "a")) + 3) + 10
    i = 0
    while joined_length(store.entries("memory")) + 60 < LIMIT - headroom:
        store.apply("memory", Add(f"seed note {i:03d}: the project convention is rule number {i}"))
        i += 1
    return joined_length(store.entries("memory"))


def _run_worker(directory: Path, worker: int, seconds: float, go: Path | None) -> dict[str, list[float]]:
    """Cycle through the operations for ``seconds``; ``"span"`` holds the wall-clock start and end."""
    store = MemoryStore(directory, memory_char_limit=LIMIT)
    store.load()
    timings: dict[str, list[float]] = {op: [] for op in OPS}
    while go is not None and not go.exists():
        time.sleep(0.001)
    began = time.time()
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        a, b, c = _entry(worker, i, "a"), _entry(worker, i, "b"), _entry(worker, i, "c")
        cycle = (
            ("add", lambda: store.apply("memory", Add(a))),
            ("replace", lambda: store.apply("memory", Replace(f"w{worker} a{i:06d}", b))),
            ("batch", lambda: store.apply_batch("memory", [Remove(f"w{worker} b{i:06d}"), Add(c)])),
            ("remove", lambda: store.apply("memory", Remove(f"w{worker} c{i:06d}"))),
        )
        for name, op in cycle:
            start = time.perf_counter()
            op()
            timings[name].append(time.perf_counter() - start)
        i += 1
    timings["span"] = [began, time.time()]
    return timings


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rows(label: str, timings: dict[str, list[float]], processes: int, wall: float) -> list[tuple]:
    rows = []
    for op in OPS:
        values = timings[op]
        # Every process is always inside some operation, so throughput is processes / mean latency.
        rate = processes * len(values) / sum(values)
        rows.append((label, op, len(values), rate, _percentile(values, 0.5), _percentile(values, 0.95)))
    total = sum(len(v) for v in timings.values())
    every = [x for v in timings.values() for x in v]
    rows.append((label, "all (wall clock)", total, total / wall, _percentile(every, 0.5), _percentile(every, 0.95)))
    return rows


def _reference(directory: Path, seconds: float, label: str) -> list[tuple]:
    payload = os.urandom(LIMIT // 2).hex().encode()[:LIMIT]
    plain = directory / "fsync-reference"
    fsync_times: list[float] = []
    protocol_times: list[float] = []
    deadline = time.perf_counter() + seconds / 2
    with open(plain, "wb") as handle:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            handle.seek(0)
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
            fsync_times.append(time.perf_counter() - start)
    target = directory / "protocol-reference"
    deadline = time.perf_counter() + seconds / 2
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        fd, temp = tempfile.mkstemp(dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dir_fd)
        os.close(dir_fd)
        protocol_times.append(time.perf_counter() - start)
    return [
        (label, f"write {LIMIT} B + fsync", len(fsync_times), len(fsync_times) / sum(fsync_times),
         _percentile(fsync_times, 0.5), _percentile(fsync_times, 0.95)),
        (label, "temp+fsync+rename+fsync dir", len(protocol_times), len(protocol_times) / sum(protocol_times),
         _percentile(protocol_times, 0.5), _percentile(protocol_times, 0.95)),
    ]  # fmt: skip


def _print_table(rows: list[tuple], fill: int, directory: Path) -> None:
    print(f"curated store near its limit: {fill:,}/{LIMIT:,} chars before each cycle; files in {directory}")
    header = ("scenario", "operation", "n", "ops/s", "p50 ms", "p95 ms")
    widths = (20, 29, 7, 9, 8, 8)
    print("  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for label, op, n, rate, p50, p95 in rows:
        cells = (label, op, str(n), f"{rate:,.0f}", f"{p50 * 1e3:.2f}", f"{p95 * 1e3:.2f}")
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per scenario (default 3)")
    parser.add_argument("--dir", type=Path, default=None, help="where to create the scratch store")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker is not None:
        json.dump(_run_worker(args.store, args.worker, args.seconds, args.store.parent / "go"), sys.stdout)
        return

    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir=args.dir) as scratch:
        root = Path(scratch)
        # Shared virtual disks drift; measuring the floor before and after brackets the store's numbers.
        rows = _reference(root, args.seconds / 2, "reference, before")
        single = root / "single" / "memories"
        fill = _fill(single)
        alone = _run_worker(single, 0, args.seconds, None)
        rows += _rows("1 process", alone, 1, alone["span"][1] - alone["span"][0])

        shared = root / "shared" / "memories"
        _fill(shared)
        workers = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", str(w), "--store", str(shared), "--seconds", str(args.seconds)],
                stdout=subprocess.PIPE,
            )
            for w in range(PROCESSES)
        ]
        time.sleep(1.0)  # let every worker import mnemo and load before the start signal
        (shared.parent / "go").touch()
        results = [json.loads(worker.communicate()[0]) for worker in workers]
        wall = max(r["span"][1] for r in results) - min(r["span"][0] for r in results)
        merged = {op: [t for result in results for t in result[op]] for op in OPS}
        rows += _rows(f"{PROCESSES} processes", merged, PROCESSES, wall)
        rows += _reference(root, args.seconds / 2, "reference, after")
        _print_table(rows, fill, root.parent)


if __name__ == "__main__":
    main()
