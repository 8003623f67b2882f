"""What reaches the model in long technical conversations (BEAM), fed through the README's own agent loop.

    python bench/beam.py --data PATH/TO/BEAM/chats/100K [--chats 1-10] [--workdir DIR] [--deep [--deep-ms MS]]

BEAM (github:mohammadtavakoli78/BEAM; no licence, so it is not in this repository: the bench takes its path)
holds coding and project conversations of ~290 messages of ~1.2 KB each, and probing questions naming the
messages that answer them (``source_chat_ids``). Only chats 1 to 10 of the 100K set are for development; the
rest is how recall is checked, so ``--chats`` refuses them.

Each chat is one user of one home, each of its batches one ``AgentMemory`` session: ``prepare_messages`` then
``turn_complete(user, reply)`` per exchange, ``close()`` at its end (bench/_reach.py). Every probing question
with evidence is then asked in a new session, and three doors are checked for the evidence messages, as in
bench/e2e.py (any / all of them reached); ``--deep`` asks them again in sessions with deep recall. For the
knowledge-update questions, **updated first** is the share of those whose updated statement a door shows that
show it before the original one (or without it).
The user's messages carry BEAM's position markers (``->-> 1,1``); they are taken off, as no user types them.

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _reach import Door, Message, Tally, ask_all, deep_options, deep_settings, exchanges, feed  # noqa: E402
from archive import _percentile, _table  # noqa: E402

DEV_CHATS = range(1, 11)
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


def _chats(spec: str) -> list[int]:
    """``"1-10"`` or ``"1,4,7"``: development chats only."""
    chosen: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        chosen += range(int(low), int(high or low) + 1)
    outside = sorted(set(chosen) - set(DEV_CHATS))
    if outside:
        raise SystemExit(f"--chats: only chats 1 to 10 are for development, not {outside}")
    return chosen


def _sessions(chat: list[dict]) -> list[tuple[str, list[tuple[Message, Message]]]]:
    """Each batch as one session of exchanges; a message's turn id is its BEAM id."""
    sessions = []
    for batch in chat:
        turns = [
            (message["role"] == "user", str(message["id"]), _MARKER.sub("", str(message["content"])))
            for group in batch["turns"] for message in group
        ]  # fmt: skip
        sessions.append((f"batch-{batch['batch_number']}", list(exchanges(turns))))
    return sessions


def _ids(value: object) -> set[str]:
    if isinstance(value, dict):
        return {i for part in value.values() for i in _ids(part)}
    if isinstance(value, list):
        return {str(i) for i in value if isinstance(i, int)}
    return set()


def _questions(probing: dict) -> Iterator[tuple[str, str, set[str], dict]]:
    """(category, question, evidence ids, raw) of every question that names evidence."""
    for category, questions in probing.items():
        for raw in questions:
            evidence = _ids(raw.get("source_chat_ids"))
            if evidence:
                yield category, str(raw["question"]), evidence, raw


def _updated_first(raw: dict, shown: list[str]) -> bool | None:
    """Whether ``shown`` puts the updated statement before the original (None when it shows no update)."""
    ids = raw.get("source_chat_ids")
    if not isinstance(ids, dict):
        return None
    updated, original = _ids(ids.get("updated_info")), _ids(ids.get("original_info")) - _ids(ids.get("updated_info"))
    first_update = next((at for at, turn in enumerate(shown) if turn in updated), None)
    if first_update is None:
        return None
    first_original = next((at for at, turn in enumerate(shown) if turn in original), None)
    return first_original is None or first_update < first_original


def bench(data: Path, chats: list[int], workdir: Path, deep: dict | None = None) -> dict:
    tally = Tally()
    by_category: dict[str, Door] = {}
    first: dict[str, list[float]] = {}
    started = time.perf_counter()
    for number in chats:
        folder = data / str(number)
        chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
        probing = json.loads((folder / "probing_questions" / "probing_questions.json").read_text(encoding="utf-8"))
        home = workdir / f"chat-{number}"
        home.mkdir(parents=True, exist_ok=True)
        record, _ = feed(home, f"beam-{number}", _sessions(chat))
        questions = [(question, (category, evidence, raw)) for category, question, evidence, raw in _questions(probing)]
        for (category, evidence, raw), shown in ask_all(home, record, questions, deep=deep):
            tally.add(evidence, shown)
            for name, reached in shown.doors.items():
                if category == "knowledge_update" and (ahead := _updated_first(raw, reached)) is not None:
                    first.setdefault(name, []).append(float(ahead))
            if not shown.deep:
                by_category.setdefault(category, Door()).add(evidence, shown.doors["per-turn context"])
        print(f"chat {number}: fed and asked ({time.perf_counter() - started:.0f} s)", flush=True)

    def share(values: list[float]) -> str:
        return f"{statistics.fmean(values):.3f} ({len(values)})" if values else "-"

    print(f"\n{len(tally.ms)} questions, {len(chats)} chats, {time.perf_counter() - started:.0f} s")
    _table(
        [[name, f"{statistics.fmean(d.any):.3f}", f"{statistics.fmean(d.all):.3f}", share(first.get(name, []))] for name, d in tally.doors.items()],
        ["door", "evidence reached (any)", "(all)", "updated first (questions)"],
    )  # fmt: skip
    _table(
        [[category, str(len(d.any)), f"{statistics.fmean(d.any):.3f}", f"{statistics.fmean(d.all):.3f}"] for category, d in sorted(by_category.items())],
        ["category (per-turn context)", "questions", "any", "all"],
    )  # fmt: skip
    print(f"prepare_messages per question p50 / p95 {_percentile(tally.ms, 50):.1f} / {_percentile(tally.ms, 95):.1f} ms; "
          f"recalled characters mean {statistics.fmean(tally.chars):.0f}, max {max(tally.chars)}")  # fmt: skip
    _table(tally.first_rows(), ["door", "first result holds evidence"])
    _table(tally.call_rows(), ["call", "p50 ms", "p95 ms", "first ranking kept"])
    result = {
        f"{name}_{kind}": round(statistics.fmean(getattr(d, kind)), 3)
        for name, d in tally.doors.items()
        for kind in ("any", "all")
    }
    result |= {f"{name}_updated_first": round(statistics.fmean(v), 3) for name, v in first.items() if v}
    result |= {"questions": len(tally.ms), "ask_ms_p50": round(_percentile(tally.ms, 50), 2)}
    return result | tally.call_summary()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="BEAM's chats/100K folder")
    parser.add_argument("--chats", default="1-10", help="development chats to run (1-10, the default, or e.g. 1,3)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the homes here")
    deep_options(parser)
    args = parser.parse_args()
    chats = _chats(args.chats)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        print(json.dumps(bench(args.data, chats, workdir / f"run-{int(time.time())}", deep_settings(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
