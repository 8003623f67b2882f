"""What the deterministic extractor keeps from LoCoMo conversations, and what it adds to recall (no LLM).

    python bench/extraction.py --data ../shared/data/locomo/locomo_dev.json

Every session of every conversation is archived (one message per turn, the speaker as its ``name``, dated
from the session's date) and back-filled into the graph by the deterministic extractor, exactly as
``mnemo graph extract --all`` does.

Fact quality, per session: a gold ``observation`` fact counts as found when an extracted memory of that
session has cosine >= 0.75 to it with the project's embedder (MiniLM-L6); ``fact_precision`` is the share of
extracted memories that close to some gold fact of their session.

Retrieval: the questions of ``bench/locomo.py`` are asked of two graphs built in the same run, the turns
alone and the turns beside the extracted memories (an extracted memory counts as the turn it came from).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive import _scored_questions, _Scores, _sessions, _table  # noqa: E402
from locomo import KEYS, _ask, _Clock, remember_turns  # noqa: E402
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.embeddings import MiniLMEmbedder  # noqa: E402
from mnemo.graph.backfill import backfill  # noqa: E402
from mnemo.graph.extraction import source_messages  # noqa: E402
from mnemo.graph.types import Scope  # noqa: E402
from mnemo.storage import open_graph

MATCH = 0.75
RETRIEVAL = ("turn_any@5", "turn_all@5", "session_all@5", "multihop_turn_all@5")


def _message(turn: dict, when: float | None, index: int) -> dict:
    text = str(turn.get("text", ""))
    if turn.get("blip_caption"):
        text += f" [shares image: {turn['blip_caption']}]"
    return {"role": "user", "name": str(turn.get("speaker", "")), "content": text, "timestamp": (when or 0.0) + index}


def _gold(sample: dict, key: str) -> list[str]:
    facts = sample.get("observation", {}).get(f"{key}_observation", {})
    return [str(fact[0]) for per_speaker in facts.values() for fact in per_speaker if fact]


class _FactScores:
    def __init__(self) -> None:
        self.gold = self.found = self.extracted = self.matching = 0
        self.per_session: list[int] = []
        self.by_type: dict[str, int] = {}

    def add(self, embedder: MiniLMEmbedder, gold: list[str], extracted: list[str]) -> None:
        self.per_session.append(len(extracted))
        self.gold += len(gold)
        self.extracted += len(extracted)
        if not gold or not extracted:
            return
        similarity = np.asarray(embedder.embed(gold)) @ np.asarray(embedder.embed(extracted)).T
        self.found += int((similarity.max(axis=1) >= MATCH).sum())
        self.matching += int((similarity.max(axis=0) >= MATCH).sum())

    def summary(self) -> dict[str, float]:
        return {
            "fact_recall": round(self.found / max(self.gold, 1), 3),
            "fact_precision": round(self.matching / max(self.extracted, 1), 3),
            "memories_per_session": round(statistics.fmean(self.per_session), 2) if self.per_session else 0.0,
            "gold_facts": self.gold,
            "extracted": self.extracted,
        }


def run(data: Path, workdir: Path) -> dict:
    samples = json.loads(data.read_text(encoding="utf-8"))
    embedder = MiniLMEmbedder()
    facts, plain, augmented = _FactScores(), _Scores(), _Scores()
    extract_seconds = 0.0
    messages = 0
    types: dict[str, int] = {}
    clock = _Clock()
    for number, sample in enumerate(samples):
        user = str(sample.get("sample_id", number))
        database = workdir / f"extraction-{number}.db"
        with open_graph(database, embedder=embedder, clock=clock) as graph:
            turns_only = graph.with_scope(Scope(user_id=user, channel_id="turns"))
            both = graph.with_scope(Scope(user_id=user, channel_id="turns+extracted"))
            plain_dia: dict[str, str] = {}
            both_dia: dict[str, str] = {}
            with SessionArchive(database, scope=both.scope) as archive:
                for key, turns, when in _sessions(sample.get("conversation", {})):
                    plain_dia.update(remember_turns(turns_only, key, turns, when, clock)[0])
                    both_dia.update(remember_turns(both, key, turns, when, clock)[0])
                    archive.start_session(key, started_at=when)
                    ids = archive.append_many(key, [_message(t, when, i) for i, t in enumerate(turns)])
                    dia_of_message = {mid: str(t.get("dia_id")) for mid, t in zip(ids, turns, strict=True)}
                    started = time.perf_counter()
                    report = backfill(both, archive, [key])
                    extract_seconds += time.perf_counter() - started
                    messages += report.messages
                    links = source_messages(both, [m.id for m in report.memories])
                    for memory in report.memories:
                        types[memory.type.value] = types.get(memory.type.value, 0) + 1
                        source = links.get(memory.id, [])
                        if source and source[0].message_id in dia_of_message:
                            both_dia[memory.id] = dia_of_message[source[0].message_id]
                    facts.add(embedder, _gold(sample, key), [m.content for m in report.memories])
            turns_only.flush()
            both.flush()
            clock.now += 86_400  # questions are asked a day after the last session
            for category, evidence, question, _qa in _scored_questions(sample):
                _ask(turns_only, plain_dia, plain, category, evidence, question)
                _ask(both, both_dia, augmented, category, evidence, question)
    quality = facts.summary()
    before, after = plain.summary(), augmented.summary()
    print(f"\nExtraction on {data.name}: {messages} messages in {extract_seconds:.2f} s "
          f"({messages / max(extract_seconds, 1e-9):,.0f} messages/s, scan and de-duplication included), "
          f"{quality['extracted']} memories; by type {dict(sorted(types.items()))}")  # fmt: skip
    print(f"gold observations: {quality['gold_facts']}; a fact is found at cosine >= {MATCH} (MiniLM-L6)\n")
    _table([[k, f"{quality[k]}"] for k in ("fact_recall", "fact_precision", "memories_per_session")], ["fact metric", "value"])
    print()
    keys = (*plain.keys, "multihop_turn_all@5", "multihop_turn_all@10", "query_ms_p50", "query_ms_p95")
    _table([[k, f"{before[k]}", f"{after[k]}"] for k in keys], ["metric", "turns", "turns + extracted memories"])
    return {
        **{k: quality[k] for k in ("fact_recall", "fact_precision", "memories_per_session")},
        **{k: after[k] for k in RETRIEVAL},
        "turns_only": {k: before[k] for k in KEYS},
        "with_extracted": {k: after[k] for k in KEYS},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--workdir", type=Path, help="where to put the databases (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        result = run(args.data, Path(tmp))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
