"""Importing and re-importing JSONL conversations, and finishing pending vectors from the command line.

    python bench/cli_import.py                          # 20,000 messages, 500 memories to embed
    python bench/cli_import.py --messages 100000 --embed 2000

Import: a deterministic synthetic JSONL file (``bench/archive.py``'s conversations, one session per line,
no ids) goes into a fresh archive through ``import_jsonl`` (the file validated whole, an id derived from
each session's content, each session written in one transaction), then the same file again (every
session skipped). The baseline, measured in the same run on another fresh archive, writes the same
sessions the way the importer did before ids were derived and files validated: ``start_session`` +
``append_many`` + ``end_session`` per session, no validation pass, no hashing.

Embed: ``mnemo graph embed --json`` on memories written without vectors, against the bare embedder on the
same texts in the same batch size: the floor, since nearly all the time is the model's. Both load the
model once, inside the timing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _tables import print_table  # noqa: E402
from archive import Synth  # noqa: E402
from mnemo.archive import import_jsonl  # noqa: E402
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.cli import main as mnemo  # noqa: E402
from mnemo.config import load_settings  # noqa: E402
from mnemo.embeddings import MiniLMEmbedder  # noqa: E402
from mnemo.graph.store import EMBED_BATCH  # noqa: E402
from mnemo.storage import open_graph


def _timed(work) -> tuple[float, object]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def bench_import(messages: int, session_length: int, workdir: Path) -> None:
    synth = Synth()
    sessions = [synth.session(session_length) for _ in range(messages // session_length)]
    source = workdir / "conversations.jsonl"
    source.write_text("".join(json.dumps({"messages": s}) + "\n" for s in sessions), encoding="utf-8")

    def baseline(name: str) -> int:
        with SessionArchive(workdir / name) as archive:
            for session in sessions:
                sid = archive.start_session(source="import")
                archive.append_many(sid, session)
                archive.end_session(sid)
        return len(sessions)

    with SessionArchive(workdir / "import.db") as archive:
        base_s, _ = _timed(lambda: baseline("baseline-1.db"))
        first_s, first = _timed(lambda: import_jsonl(archive, source))
        again_s, again = _timed(lambda: import_jsonl(archive, source))
        base2_s, _ = _timed(lambda: baseline("baseline-2.db"))  # shows the machine's drift during the run
    assert len(first.created) == len(sessions) and len(again.skipped) == len(sessions)
    total = len(sessions) * session_length
    rows = [
        ("baseline: start + append_many + end per session", f"{total / base_s:,.0f}", f"{base_s:.2f}"),
        ("import_jsonl, first time", f"{total / first_s:,.0f}", f"{first_s:.2f}"),
        ("import_jsonl, same file again (all skipped)", f"{total / again_s:,.0f}", f"{again_s:.2f}"),
        ("baseline again, after", f"{total / base2_s:,.0f}", f"{base2_s:.2f}"),
    ]
    print_table(
        f"import: {total:,} messages in {len(sessions):,} sessions of {session_length}",
        ("case", "msg/s", "seconds"),
        rows,
    )


def bench_embed(count: int, workdir: Path) -> None:
    home = workdir / "home"
    synth = Synth(seed=11)
    texts = [synth.message("user")["content"] for _ in range(count)]
    with open_graph(load_settings(home).database_path) as graph:  # no embedder: every memory left pending
        for text in texts:
            graph.remember(text)

    def cli() -> dict:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert mnemo(["--home", str(home), "graph", "embed", "--json"]) == 0
        return json.loads(out.getvalue())

    def bare() -> int:
        embedder = MiniLMEmbedder()
        for start in range(0, len(texts), EMBED_BATCH):
            embedder.embed(texts[start : start + EMBED_BATCH])
        return len(texts)

    bare_s, _ = _timed(bare)
    cli_s, report = _timed(cli)
    assert report["graph"]["embedded"] == count and report["graph"]["pending"] == 0
    print_table(
        f"embed: {count:,} pending memories",
        ("case", "texts/s", "seconds", "vs bare"),
        [
            ("bare embedder, same batches", f"{count / bare_s:,.0f}", f"{bare_s:.2f}", "1.00"),
            ("mnemo graph embed", f"{count / cli_s:,.0f}", f"{cli_s:.2f}", f"{cli_s / bare_s:.2f}"),
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--session-length", type=int, default=50)
    parser.add_argument("--embed", type=int, default=500, help="memories to embed (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_import(args.messages, args.session_length, Path(tmp))
        if args.embed:
            bench_embed(args.embed, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
