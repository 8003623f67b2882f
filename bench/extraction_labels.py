"""Fact recall and precision of the deterministic extractor on hand-labelled turns, old extractor vs new.

    python bench/extraction_labels.py --data ../shared/data/locomo/locomo_dev.json [--baseline main]

The labels (bench/data/extraction_labels.jsonl, scheme in bench/data/README.md) name, for each turn, the facts
a careful person would want remembered, each as a memory type and a few key words. Each turn is given to
``extract`` as one user message, exactly as a session's messages are at its end (LoCoMo and chat turns carry
their speaker as ``name``; the agent-style turns have none, so their subject is "User"). Rows are reported by
split (``dev`` tuned on; ``heldout``, ``fresh``, ``fresh2``, ``fresh3`` as bench/data/README.md tells), source
and labelled type.

- A gold fact is **found** when one extracted memory of its turn contains all its key words (case-insensitive);
  **typed** when that memory also has the labelled type.
- An extracted memory is **correct** when it contains the key words of some gold fact of its turn.
- **quiet turns** is the share of turns with no gold fact where nothing was extracted.

The baseline is the extractor at ``--baseline`` (a git ref, ``main`` by default; the extractor this one
replaced is at 83bed66), loaded from git into a temporary module in the same run. Per-message time is the mean over every turn of the LoCoMo dev file (the
call a session end makes), in CPU time, best of seven passes, old and new interleaved.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _tables import print_table  # noqa: E402
from mnemo.graph import extract_rules  # noqa: E402

LABELS = ROOT / "bench" / "data" / "extraction_labels.jsonl"
SPLITS = ("all", "dev", "heldout", "fresh", "fresh2", "fresh3")
Extract = Callable[[list[dict]], list]


def _baseline(ref: str, workdir: Path) -> ModuleType:
    """The extractor as it is at ``ref`` (its rules and its patterns), imported from temporary files (their
    relative imports made absolute)."""
    _from_git(ref, "extract_patterns", workdir)
    return _from_git(ref, "extract_rules", workdir)


def _from_git(ref: str, name: str, workdir: Path) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{ref}:src/mnemo/graph/{name}.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    source = source.replace("from .types import", "from mnemo.graph.types import")
    source = source.replace("from .extract_patterns import", "from extract_patterns_baseline import")
    path = workdir / f"{name}_baseline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"{name}_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _locomo_turns(data: Path) -> dict[str, dict]:
    """Every LoCoMo turn as a user message, by ``conversation:dia_id``."""
    turns: dict[str, dict] = {}
    for sample in json.loads(data.read_text(encoding="utf-8")):
        conversation = sample.get("conversation", {})
        for key, session in conversation.items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            for turn in session:
                message = {"role": "user", "name": str(turn.get("speaker", "")), "content": str(turn.get("text", ""))}
                turns[f"{sample['sample_id']}:{turn['dia_id']}"] = message
    return turns


def _labelled(data: Path) -> list[tuple[dict, dict]]:
    """(label row, message) for every labelled turn."""
    locomo = _locomo_turns(data)
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(row, locomo[row["id"]] if row["source"] == "locomo" else _written(row)) for row in rows]


def _written(row: dict) -> dict:
    """A turn written for the labels as a user message (named when it has a speaker)."""
    return {"role": "user", "content": row["text"], **({"name": row["speaker"]} if "speaker" in row else {})}


def _hit(content: str, keys: Iterable[str]) -> bool:
    folded = content.casefold()
    return all(key.casefold() in folded for key in keys)


@dataclass
class _Tally:
    gold: int = 0
    found: int = 0
    typed: int = 0
    extracted: int = 0
    correct: int = 0
    quiet_turns: int = 0
    empty_turns: int = 0

    def add(self, facts: list[dict], candidates: list) -> None:
        self.gold += len(facts)
        self.extracted += len(candidates)
        if not facts:
            self.empty_turns += 1
            self.quiet_turns += not candidates
        for fact in facts:
            matches = [c for c in candidates if _hit(c.content, fact["keys"])]
            self.found += bool(matches)
            self.typed += any(c.type.value == fact["type"] for c in matches)
        self.correct += sum(any(_hit(c.content, f["keys"]) for f in facts) for c in candidates)

    def add_typed(self, kind: str, facts: list[dict], candidates: list) -> None:
        """Recall of the gold facts labelled ``kind`` (found by a memory of any type, typed by one of ``kind``);
        precision of the memories extracted as ``kind``."""
        mine = [c for c in candidates if c.type.value == kind]
        for fact in (f for f in facts if f["type"] == kind):
            self.gold += 1
            self.found += any(_hit(c.content, fact["keys"]) for c in candidates)
            self.typed += any(_hit(c.content, fact["keys"]) for c in mine)
        self.extracted += len(mine)
        self.correct += sum(any(_hit(c.content, f["keys"]) for f in facts) for c in mine)

    def row(self) -> dict[str, float]:
        recall = self.found / max(self.gold, 1)
        precision = self.correct / max(self.extracted, 1)
        return {
            "recall": round(recall, 3),
            "typed_recall": round(self.typed / max(self.gold, 1), 3),
            "precision": round(precision, 3),
            "f1": round(2 * recall * precision / max(recall + precision, 1e-9), 3),
            "quiet_turns": round(self.quiet_turns / self.empty_turns, 3) if self.empty_turns else None,
            "gold": self.gold,
            "extracted": self.extracted,
        }


def _score(extract: Extract, labelled: list[tuple[dict, dict]]) -> dict[str, dict[str, float]]:
    tallies: dict[str, _Tally] = {}
    for row, message in labelled:
        candidates = extract([message])
        groups = ["all", row["split"], f"{row['split']} {row['source'].split('-')[0]}", f"source {row['source']}"]
        for group in groups:
            tallies.setdefault(group, _Tally()).add(row["facts"], candidates)
        for kind in {f["type"] for f in row["facts"]} | {c.type.value for c in candidates}:
            tallies.setdefault(f"type {kind}", _Tally()).add_typed(kind, row["facts"], candidates)
    return {group: tally.row() for group, tally in sorted(tallies.items(), key=lambda kv: _order(kv[0]))}


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _order(group: str) -> tuple[int, str]:
    return (SPLITS.index(group) if group in SPLITS else len(SPLITS), group)


def _per_message_us(extractors: dict[str, Extract], messages: list[dict], rounds: int = 7) -> dict[str, float]:
    """The best of ``rounds`` passes over ``messages`` for each extractor in CPU time (a shared machine's other
    work does not count), passes interleaved so that what remains of its effect falls on both alike."""
    best = dict.fromkeys(extractors, float("inf"))
    for _ in range(rounds):
        for name, extract in extractors.items():
            started = time.thread_time()
            for message in messages:
                extract([message])
            best[name] = min(best[name], time.thread_time() - started)
    return {name: round(seconds / len(messages) * 1e6, 1) for name, seconds in best.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the LoCoMo dev file the labels refer to")
    parser.add_argument("--baseline", default="main", help="git ref of the extractor to compare with")
    args = parser.parse_args()
    labelled = _labelled(args.data)
    everything = list(_locomo_turns(args.data).values())
    with tempfile.TemporaryDirectory() as tmp:
        old = _baseline(args.baseline, Path(tmp))
        extractors: dict[str, Extract] = {args.baseline: old.extract, "new": extract_rules.extract}
        scores = {name: _score(fn, labelled) for name, fn in extractors.items()}
        timing = _per_message_us(extractors, everything)
    print(f"\n{len(labelled)} labelled turns, {scores['new']['all']['gold']} gold facts; "
          f"timing over {len(everything):,} LoCoMo dev messages\n")  # fmt: skip
    names = list(extractors)
    metrics = ("recall", "typed_recall", "precision", "f1", "quiet_turns")
    rows = [[group, f"{scores[names[0]][group]['gold']}", *(f"{scores[n][group]['extracted']}" for n in names),
             *(_cell(scores[n][group][m]) for m in metrics for n in names)]
            for group in scores["new"]]  # fmt: skip
    columns = ["turns", "gold", *(f"mem {n}" for n in names), *(f"{m} {n}" for m in metrics for n in names)]
    print_table("Fact recall / precision by group (old vs new, same run)", columns, rows)
    print_table(
        "Per-message CPU time (µs, best of 7 interleaved passes)", ["extractor", "µs/message"], list(timing.items())
    )
    result = {
        name: {group: scores[name][group] for group in SPLITS if group in scores[name]}
        | {"us_per_message": timing[name]}
        for name in names
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
