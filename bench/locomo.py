"""LoCoMo retrieval quality of the memory graph's recall (no LLM anywhere).

    python bench/locomo.py --data ../shared/data/locomo/locomo_dev.json
    python bench/locomo.py --data FILE --audit ../shared/data/locomo/audit_errors_dev.json
    python bench/locomo.py --data FILE --no-embedder        # full text and context only
    python bench/locomo.py --data FILE --maintain           # recall before and after a maintenance pass
    python bench/locomo.py --data FILE --database-url embedded   # the graph on PostgreSQL (or a server URL)

Every turn of every conversation becomes one graph memory (``"speaker: text [shares image: caption]"``,
type ``event``, created at its session's date, ``source`` = the session, ``subject`` = the speaker), one
scope per conversation.
Every category 1-4 question with evidence is asked through ``MemoryGraph.recall``; a turn counts when its
memory is in the top k, a session when its best turn ranks among the first k distinct sessions. The
plain FTS5 OR-of-terms baseline (one document per turn, ``bm25()``) is computed in the same run.

Turns the threat scanner refuses (for example invisible Unicode characters) are stored with the
offending invisible characters removed, and counted; a turn still refused after that is skipped.
``--audit`` re-scores with the independent audit's corrected evidence for ``WRONG_CITATION`` entries.
The last line printed is one JSON object with the scores.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
import unicodedata
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _postgres import scratch_database, server  # noqa: E402
from archive import _baseline, _scored_questions, _Scores, _session_of, _sessions, _table, _turn_text  # noqa: E402
from mnemo.graph import MemoryGraph  # noqa: E402
from mnemo.graph.errors import BlockedContent  # noqa: E402
from mnemo.graph.types import Scope  # noqa: E402
from mnemo.storage import open_graph

KEYS = ("turn_any@5", "turn_all@5", "turn_any@10", "turn_all@10", "session_all@5", "session_all@10",
        "multihop_turn_all@5", "questions", "query_ms_p50", "query_ms_p95")  # fmt: skip
# Enough results to find ten distinct sessions most of the time.
RECALL_LIMIT = 50


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _visible(text: str) -> str:
    # Format characters (Unicode category Cf: zero-width spaces, joiners, bidi controls) are what the
    # scanner refuses as hidden text; the words around them are ordinary conversation.
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def _corrections(path: Path | None) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    if path is None:
        return {}
    fixes = {}
    for entry in json.loads(path.read_text(encoding="utf-8")):
        if entry.get("error_type") == "WRONG_CITATION" and entry.get("correct_evidence"):
            key = (str(entry.get("question", "")).strip(), tuple(entry.get("cited_evidence") or ()))
            fixes[key] = [str(e) for e in entry["correct_evidence"]]
    return fixes


def _embedder(enabled: bool):
    if not enabled:
        return None
    from mnemo.embeddings import MiniLMEmbedder

    return MiniLMEmbedder()


def remember_turns(
    view: MemoryGraph, key: str, turns: list[dict], when: float | None, clock: _Clock
) -> tuple[dict[str, str], int, int]:
    """Each turn of one session as an ``event`` memory dated in order from ``when``: ``(dia id by memory id,
    turns stored with invisible characters removed, turns skipped)``."""
    dia_of: dict[str, str] = {}
    cleaned = skipped = 0
    for index, turn in enumerate(turns):
        clock.now = (when or 0.0) + index  # keeps the turns of a session in order
        text, speaker = _turn_text(turn), str(turn.get("speaker", ""))
        try:
            memory = view.remember(text, "event", source=key, subject=speaker)
        except BlockedContent:
            try:
                memory = view.remember(_visible(text), "event", source=key, subject=speaker)
                cleaned += 1
            except BlockedContent:
                skipped += 1
                continue
        dia_of[memory.id] = str(turn.get("dia_id"))
    return dia_of, cleaned, skipped


def _ask(view: MemoryGraph, dia_of: dict[str, str], scores: _Scores, category, evidence, question: str) -> None:
    t0 = time.perf_counter()
    results = view.recall(question, limit=RECALL_LIMIT, touch=False)
    ms = (time.perf_counter() - t0) * 1000
    # Several memories may stand for one turn (a turn and the memories extracted from it): count it once.
    turns = list(dict.fromkeys(dia_of[r.memory.id] for r in results if r.memory.id in dia_of))
    scores.add(category, evidence, turns[:10], list(dict.fromkeys(_session_of(d) for d in turns)), ms)


def run(
    data: Path, workdir: Path, *, audit: Path | None, embed: bool, maintain: bool = False, database_url: str | None = None
) -> dict:
    samples = json.loads(data.read_text(encoding="utf-8"))
    fixes = _corrections(audit)
    embedder = _embedder(embed)
    ours, baseline = _Scores(), _Scores()
    maintained = _Scores() if maintain else None
    maintenance: dict[str, int] = {}
    cleaned = skipped = corrected = 0
    ingest_seconds = 0.0
    memories = 0
    clock = _Clock()
    for number, sample in enumerate(samples):
        # One database per conversation, as one user's home would hold (and as the baseline indexes them):
        # full-text statistics then come from that conversation alone.
        with ExitStack() as stack:
            target = workdir / f"locomo-{number}.db" if database_url is None else stack.enter_context(scratch_database(database_url))
            graph = stack.enter_context(open_graph(target, embedder=embedder, clock=clock))
            conversation = sample.get("conversation", {})
            view = graph.with_scope(Scope(user_id=str(sample.get("sample_id", number))))
            plain = sqlite3.connect(":memory:")
            plain.execute("CREATE VIRTUAL TABLE turns USING fts5(text, dia_id UNINDEXED, tokenize='porter unicode61')")
            dia_of: dict[str, str] = {}
            started = time.perf_counter()
            for key, turns, when in _sessions(conversation):
                stored, cleaned_here, skipped_here = remember_turns(view, key, turns, when, clock)
                dia_of.update(stored)
                memories += len(stored)
                cleaned += cleaned_here
                skipped += skipped_here
                plain.executemany(
                    "INSERT INTO turns(text, dia_id) VALUES (?, ?)", [(_turn_text(t), t.get("dia_id")) for t in turns]
                )
            view.flush()
            ingest_seconds += time.perf_counter() - started
            clock.now += 86_400  # questions are asked a day after the last session
            questions = []
            for category, evidence, question, qa in _scored_questions(sample):
                fixed = fixes.get((question.strip(), tuple(qa.get("evidence") or ())))
                if fixed is not None:
                    evidence = fixed
                    corrected += 1
                questions.append((category, evidence, question))
                _ask(view, dia_of, ours, category, evidence, question)
                baseline.add(category, evidence, *_baseline(plain, question))
            plain.close()
            if maintained is not None:
                report = view.maintain()  # dated a day after the last session, like the questions
                for key, total in report.as_dict().items():
                    if isinstance(total, int) and not isinstance(total, bool):
                        maintenance[key] = maintenance.get(key, 0) + total
                for category, evidence, question in questions:
                    _ask(view, dia_of, maintained, category, evidence, question)
    mine, base = ours.summary(), baseline.summary()
    model = "MiniLM-L6 vectors" if embedder is not None else "no embedder"
    print(f"\nLoCoMo recall on {data.name}: {mine['questions']} questions (categories 1-4 with evidence), "
          f"{memories} memories ({model}), ingest {memories / max(ingest_seconds, 1e-9):,.0f} memories/s"
          " including embedding")  # fmt: skip
    print(f"refused by the scanner: {cleaned} stored with invisible characters removed, {skipped} skipped")
    if audit is not None:
        print(f"audit corrections applied to {corrected} questions")
    keys = (*ours.keys, "multihop_turn_all@5", "multihop_turn_all@10", "query_ms_p50", "query_ms_p95")
    if maintained is None:
        _table([[k, f"{base[k]}", f"{mine[k]}"] for k in keys], ["metric", "FTS5 OR baseline (same run)", "MemoryGraph.recall"])
        return {k: mine[k] for k in KEYS}
    after = maintained.summary()
    print(f"maintenance, summed over conversations: {maintenance}")
    _table([[k, f"{base[k]}", f"{mine[k]}", f"{after[k]}"] for k in keys],
           ["metric", "FTS5 OR baseline (same run)", "recall", "recall after maintenance"])  # fmt: skip
    return {**{k: mine[k] for k in KEYS}, "maintained": {k: after[k] for k in KEYS}, "maintenance": maintenance}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--audit", type=Path, help="audit entries: use correct_evidence for WRONG_CITATION")
    parser.add_argument("--no-embedder", action="store_true", help="recall without the vector channel")
    parser.add_argument("--maintain", action="store_true",
                        help="also ask every question again after a maintenance pass dated a day after the last session")
    parser.add_argument("--workdir", type=Path, help="where to put the database (default: a temporary directory)")
    parser.add_argument("--database-url", help="the graph on PostgreSQL: a server to make scratch databases on, or 'embedded'")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(dir=args.workdir))
        url = stack.enter_context(server(args.database_url)) if args.database_url else None
        result = run(args.data, Path(tmp), audit=args.audit, embed=not args.no_embedder, maintain=args.maintain, database_url=url)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
