"""Several hosts on one memory: graph writes and recalls per second with 1, 2 and 4 processes at once.

Each process stands for one host serving its own user: it writes memories (``remember``, one transaction
each) and recalls (full text and graph, no embedder: the model's cost would hide the database's) in turn for a
fixed time, on one shared database: SQLite (mnemo's file in one home) and, with ``--database-url``,
PostgreSQL. Every process first gets a store of ``--preload`` memories of its own, so recall has something
to search. The table gives the total operations per second and each process's share; on these 2-core
machines the database server, when there is one, runs on the same two cores as the hosts.

Usage: ``python bench/hosts.py [--seconds S] [--preload N] [--database-url URL|embedded]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import tempfile
import time
from pathlib import Path

from _tables import print_table
from mnemo.graph import Scope
from mnemo.storage import open_graph

_WORDS = (
    "deploy cluster staging invoice budget travel garden recipe backup server kayak guitar report meeting"
    " contract laptop printer vacation dentist birthday project launch review migration schema release"
).split()


def _text(rng: random.Random, user: str) -> str:
    return f"{user} noted the {rng.choice(_WORDS)} {rng.choice(_WORDS)} for {rng.choice(_WORDS)} {rng.randint(1, 999)}"


def _host(target: str, user: str, seconds: float, start: float, results: multiprocessing.Queue) -> None:
    rng = random.Random(user)
    writes = recalls = 0
    with open_graph(target, scope=Scope(user)) as graph:
        while time.time() < start:
            time.sleep(0.001)
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            graph.remember(_text(rng, user), source=f"{user}-{writes // 40}")
            writes += 1
            graph.recall(f"what about the {rng.choice(_WORDS)} {rng.choice(_WORDS)}", limit=10, touch=False)
            recalls += 1
    results.put((writes, recalls))


def _preload(target: str, users: list[str], count: int) -> None:
    for user in users:
        rng = random.Random(f"preload-{user}")
        with open_graph(target, scope=Scope(user)) as graph:
            for begin in range(0, count, 1000):
                graph.remember_many(
                    {"content": _text(rng, user), "source": f"{user}-old-{(begin + n) // 40}"}
                    for n in range(min(1000, count - begin))
                )


def _measure(engine: str, target: str, processes: int, seconds: float) -> list[object]:
    results: multiprocessing.Queue = multiprocessing.Queue()
    start = time.time() + 1.0  # every process connected and waiting before the clock starts
    users = [f"host{n}" for n in range(processes)]
    workers = [multiprocessing.Process(target=_host, args=(target, u, seconds, start, results)) for u in users]
    for worker in workers:
        worker.start()
    counts = [results.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    writes, recalls = sum(c[0] for c in counts), sum(c[1] for c in counts)
    return [engine, processes, f"{writes / seconds:,.0f}", f"{recalls / seconds:,.0f}",
            f"{(writes + recalls) / seconds / processes:,.0f}"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--preload", type=int, default=5_000, help="memories each host starts with")
    parser.add_argument("--database-url", help="also measure PostgreSQL: a server URL, or 'embedded'")
    args = parser.parse_args()
    levels = (1, 2, 4)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        target = str(Path(tmp) / "mnemo.db")
        _preload(target, [f"host{n}" for n in range(max(levels))], args.preload)
        rows += [_measure("sqlite", target, n, args.seconds) for n in levels]
    if args.database_url:
        from _postgres import scratch_database, server

        with server(args.database_url) as url, scratch_database(url) as target:
            _preload(target, [f"host{n}" for n in range(max(levels))], args.preload)
            rows += [_measure("postgres", target, n, args.seconds) for n in levels]
    print_table(
        f"hosts at once, each its own user ({args.preload:,} memories each to start), {args.seconds:.0f} s",
        ["engine", "processes", "remember/s", "recall/s", "operations/s per process"],
        rows,
        str,
    )


if __name__ == "__main__":
    main()
