"""Full-text ranking in an archive shared by many users (a chat gateway), on PostgreSQL (or SQLite): does each user
get the ranking it would get alone, and what does a search cost?

    python bench/archive_scope_ranking.py                          # 20 scopes x 500 messages, embedded server
    python bench/archive_scope_ranking.py --scopes 40 --messages 1000 --database-url postgresql://...
    python bench/archive_scope_ranking.py --database-url sqlite     # the same on SQLite files

Every scope (a user of the gateway) writes deterministic synthetic conversations (bench/archive.py's generator),
each user with its own favourite words (which words of the vocabulary are common differs per user), the users'
sessions interleaved as a gateway receives them, through ``append_many`` by an archive opened in the writer's
scope. Then each reader's messages are written again, the same sessions in the same order, into a database of its
own. Each reader asks a fixed mix of queries (keywords, rare ids, questions) in both databases: the table gives the
p50 / p95 of ``archive.search(query, limit=10)`` (grouped, as ``session_search`` asks) in the shared database (and
alone, for reference), and the share of queries whose top 10 of ``search_messages`` in the shared database are the
same messages in the same order as alone. No embedder: the vector channel is confined to the reader's scope
already; what the other users change is how rare the full-text index says a word is.

On PostgreSQL both databases are vacuumed and analysed after the load (what autovacuum does by itself soon after),
so the planner and the column statistics see the tables as they are.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import _postgres  # noqa: E402
from archive import Synth, _percentile, _table  # noqa: E402
from archive_scopes import SESSION_LENGTH, home_arguments, scope_of  # noqa: E402
from mnemo.storage import open_archive  # noqa: E402

Scratch = Callable[[], AbstractContextManager[str | Path]]
# A message as both databases know it: (the reader's session number, place in the session).
Key = tuple[int, int]


def conversations(scopes: int, per_scope: int) -> list[list[list[dict]]]:
    """Each scope's sessions, each a list of messages; every scope with its own seed and favourite words."""
    out = []
    for index in range(scopes):
        synth = Synth(seed=1000 + index, topics=index)
        starts = range(0, per_scope, SESSION_LENGTH)
        out.append([synth.session(min(SESSION_LENGTH, per_scope - start)) for start in starts])
    return out


@contextmanager
def databases(url: str) -> Iterator[Scratch]:
    """What makes an empty database for the run: on ``url``'s PostgreSQL server (or the embedded one), or, for
    ``sqlite``, a new file in a temporary directory."""
    if url != "sqlite":
        with _postgres.server(url) as server:
            yield lambda: _postgres.scratch_database(server)
        return
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as directory:
        numbers = itertools.count()

        @contextmanager
        def scratch() -> Iterator[Path]:
            yield Path(directory) / f"{next(numbers)}.db"

        yield scratch


def write(url: str | Path, sessions: dict[int, list[list[dict]]]) -> dict[int, dict[int, Key]]:
    """``sessions`` per scope index written into ``url``, the scopes' sessions taking turns; for each scope, its
    message ids' keys. Statistics brought up to date."""
    archives = {index: open_archive(url, scope=scope_of(index)) for index in sessions}
    keys: dict[int, dict[int, Key]] = {index: {} for index in sessions}
    try:
        for number in range(max(len(s) for s in sessions.values())):
            for index, own in sessions.items():
                if number < len(own):
                    archive = archives[index]
                    ids = archive.append_many(archive.start_session(source="cli"), own[number])
                    keys[index].update({mid: (number, place) for place, mid in enumerate(ids)})
        if not isinstance(url, Path):
            with archives[next(iter(sessions))]._reading() as conn:
                for table in ("messages", "sessions"):
                    conn.execute(f"VACUUM ANALYZE {table}")
    finally:
        for archive in archives.values():
            archive.close()
    return keys


def ranked(url: str | Path, index: int, keys: dict[int, Key], queries: list[str]) -> tuple[list[list[Key]], list[float]]:
    """The reader's top 10 messages for each query (``search_messages``), as keys, and the milliseconds of each
    ``search`` (grouped, as ``session_search`` asks; timed after one untimed pass)."""
    tops, times = [], []
    with open_archive(url, scope=scope_of(index)) as archive:
        for query in queries:
            tops.append([keys[hit.message.id] for hit in archive.search_messages(query, limit=10)])
        for query in queries:
            started = time.perf_counter()
            archive.search(query, limit=10)
            times.append((time.perf_counter() - started) * 1000)
    return tops, times


def main() -> None:
    parser = home_arguments(__doc__, readers=5)
    parser.add_argument("--database-url", default="embedded", help="a server for scratch databases, embedded, or sqlite")
    args = parser.parse_args()
    everyone = conversations(args.scopes, args.messages)
    readers = range(min(args.readers, args.scopes))
    same, shared_ms, alone_ms = [], [], []
    with databases(args.database_url) as scratch, scratch() as url:
        shared_keys = write(url, dict(enumerate(everyone)))
        for index in readers:
            queries = Synth(seed=1000 + index, topics=index).queries(args.queries)
            tops, times = ranked(url, index, shared_keys[index], queries)
            shared_ms.extend(times)
            with scratch() as alone_url:
                alone_keys = write(alone_url, {index: everyone[index]})
                alone, times = ranked(alone_url, index, alone_keys[index], queries)
            alone_ms.extend(times)
            same.extend(a == b for a, b in zip(tops, alone, strict=True))
            print(f"[reader {index + 1}/{len(readers)} measured]", file=sys.stderr, flush=True)
    print(f"\n{args.scopes} scopes x {args.messages} messages, {len(readers)} readers x {args.queries} queries")
    _table(
        [[
            f"{args.scopes * args.messages:,}", f"{sum(same) / len(same):.3f}",
            f"{_percentile(shared_ms, 50):.2f}", f"{_percentile(shared_ms, 95):.2f}",
            f"{_percentile(alone_ms, 50):.2f}", f"{_percentile(alone_ms, 95):.2f}",
        ]],  # fmt: skip
        ["messages", "top 10 as alone", "shared p50 ms", "p95 ms", "alone p50 ms", "p95 ms"],
    )


if __name__ == "__main__":
    main()
