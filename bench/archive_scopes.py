"""The PostgreSQL archive's vector channel in a home shared by many users (a chat gateway).

    python bench/archive_scopes.py                               # 20 scopes x 500 messages, embedded server
    python bench/archive_scopes.py --scopes 40 --messages 500 --database-url postgresql://...

Every scope (a user of the gateway) gets the same kind of deterministic synthetic conversations (bench/archive.py's
generator), written through ``append_many`` by an archive opened in that scope, and embedded with the local MiniLM
model. Then each reader scope asks a fixed mix of queries, as its own archive does:

- the vector channel (what relevance search merges with full text) for its ``k`` nearest messages: how many of them
  are the reader's own (the rest are other users', which search then drops), how many of the reader's exact ``k``
  nearest it found (recall against a scan of the reader's vectors at full precision), and how long it took (the
  query's vector is computed before timing, as a recall has it ready from its start);
- ``archive.search(query, limit=10)``, the whole relevance search, timed.

The server is vacuumed and analysed after the load (what autovacuum does by itself soon after), so the planner
sees the tables as they are. The channel is asked directly, through the archive's internals (no public call
returns it alone): the figures guide work on the channel; what users get is ``archive.search``'s time here and
bench/e2e.py's doors.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import _postgres  # noqa: E402
from archive import Synth, _percentile, _table  # noqa: E402
from mnemo.embeddings import MiniLMEmbedder  # noqa: E402
from mnemo.scope import Scope  # noqa: E402
from mnemo.storage import open_archive  # noqa: E402

SESSION_LENGTH = 20


def scope_of(index: int) -> Scope:
    """The ``index``-th user of the gateway."""
    return Scope(user_id=f"user{index:03d}", agent_id="gateway", channel_id="chat")


def fill(url: str, scopes: int, per_scope: int, embedder: MiniLMEmbedder) -> None:
    """``per_scope`` messages in each of ``scopes`` scopes, every one embedded; statistics up to date."""
    synth = Synth()
    for index in range(scopes):
        with open_archive(url, embedder=embedder, scope=scope_of(index)) as archive:
            for start in range(0, per_scope, SESSION_LENGTH):
                session = archive.start_session(source="cli")
                archive.append_many(session, synth.session(min(SESSION_LENGTH, per_scope - start)))
        print(f"[scope {index + 1}/{scopes} written]", file=sys.stderr, flush=True)
    with open_archive(url, embedder=embedder) as archive:
        archive.embed_pending()
        with archive._reading() as conn:
            for table in ("messages", "sessions", "message_vectors"):
                conn.execute(f"VACUUM ANALYZE {table}")


def _exact_nearest(conn, scope: Scope, embedder: MiniLMEmbedder, query: str, k: int) -> set[int]:
    """The reader's ``k`` nearest messages by a full scan of its own vectors at full precision."""
    vector = embedder.embed([query])[0]
    probe = "[" + ",".join(repr(float(x)) for x in vector) + "]"
    rows = conn.execute(
        f"SELECT v.message_id FROM message_vectors v JOIN messages m ON m.id = v.message_id"
        f" WHERE m.user_id = ? AND m.agent_id = ? AND m.channel_id = ?"
        f" ORDER BY CAST(v.embedding AS vector({embedder.dim})) <=> CAST(? AS vector) LIMIT ?",
        (*scope.as_params(), probe, k),
    ).fetchall()
    return {row[0] for row in rows}


def measure(url: str, readers: int, queries: list[str], k: int, embedder: MiniLMEmbedder) -> dict[str, float]:
    """Each reader's queries through its own archive: own messages and recall among the channel's ``k``, and times."""
    own, recall, channel_ms, search_ms = [], [], [], []
    for index in range(readers):
        scope = scope_of(index)
        with open_archive(url, embedder=embedder, scope=scope, embed_at_search=False) as archive:
            with archive._reading() as conn:
                mine = {row[0] for row in conn.execute(
                    "SELECT id FROM messages WHERE user_id = ? AND agent_id = ? AND channel_id = ?", scope.as_params()
                ).fetchall()}  # fmt: skip
                for query in queries:
                    archive._vectors.search(conn, query, k)  # the query's vector, ready as in a recall
                    started = time.perf_counter()
                    hits = archive._vectors.search(conn, query, k)
                    channel_ms.append((time.perf_counter() - started) * 1000)
                    found = {mid for mid, _ in hits}
                    own.append(len(found & mine))
                    exact = _exact_nearest(conn, scope, embedder, query, k)
                    recall.append(len(found & exact) / max(1, len(exact)))
            for query in queries:
                started = time.perf_counter()
                archive.search(query, limit=10)
                search_ms.append((time.perf_counter() - started) * 1000)
    return {
        "own": statistics.mean(own), "recall": statistics.mean(recall),
        "channel_p50": _percentile(channel_ms, 50), "channel_p95": _percentile(channel_ms, 95),
        "search_p50": _percentile(search_ms, 50), "search_p95": _percentile(search_ms, 95),
    }  # fmt: skip


def home_arguments(description: str, readers: int) -> argparse.ArgumentParser:
    """The options of a benchmark of a home many users share: its users, their messages, and how many of them ask
    how many queries (``readers`` by default)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scopes", type=int, default=20, help="users of the shared home")
    parser.add_argument("--messages", type=int, default=500, help="messages per user")
    parser.add_argument("--readers", type=int, default=readers, help="users whose searches are measured")
    parser.add_argument("--queries", type=int, default=40, help="queries per reader")
    return parser


def main() -> None:
    parser = home_arguments(__doc__, readers=3)
    parser.add_argument("--database-url", default="embedded", help="a server for a scratch database, or embedded")
    parser.add_argument("--k", type=int, default=100, help="neighbours asked of the vector channel")
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    queries = Synth().queries(args.queries)
    readers = min(args.readers, args.scopes)
    with _postgres.server(args.database_url) as server, _postgres.scratch_database(server) as url:
        fill(url, args.scopes, args.messages, embedder)
        result = measure(url, readers, queries, args.k, embedder)
    print(f"\n{args.scopes} scopes x {args.messages} messages (MiniLM), {readers} readers x {args.queries} queries")
    _table(
        [[
            f"{args.scopes * args.messages:,}", f"{args.k}", f"{result['own']:.1f}", f"{result['recall']:.3f}",
            f"{result['channel_p50']:.2f}", f"{result['channel_p95']:.2f}",
            f"{result['search_p50']:.2f}", f"{result['search_p95']:.2f}",
        ]],  # fmt: skip
        ["messages", "k", "own of k", f"recall@{args.k}", "channel p50 ms", "p95 ms", "search p50 ms", "p95 ms"],
    )


if __name__ == "__main__":
    main()
