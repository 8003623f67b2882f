"""mnemo behind Hermes Agent's own MemoryManager: what a turn costs the agent (no LLM anywhere).

    python bench/hermes.py --data ../shared/data/locomo/locomo_dev.json [--conversations 1]

Needs the hermes extra (``pip install -e '.[hermes]'``). A throwaway Hermes home gets the plugin
(``mnemo hermes install``); one LoCoMo conversation is played through ``sync_all`` turn by turn (the archive
keeps every turn) with ``on_pre_compress`` at each session's end (the graph extracts from it), then every
scored question of that conversation is asked through ``prefetch_all`` in a new session, as Hermes does
before each model call. ``sync_all`` is timed on the caller's thread (what the agent waits for) and, apart,
the background work it queues. The baseline is the same MemoryManager calls with a provider that does
nothing, in the same run. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive import _scored_questions, _sessions, _table  # noqa: E402


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _ms(values: list[float]) -> tuple[str, str]:
    return f"{_percentile(values, 50) * 1000:.3f}", f"{_percentile(values, 95) * 1000:.3f}"


def run(data: Path, conversations: int) -> dict:
    from agent.memory_manager import MemoryManager
    from agent.memory_provider import MemoryProvider
    from plugins.memory import load_memory_provider

    class Idle(MemoryProvider):
        name = "idle"

        def is_available(self) -> bool:
            return True

        def initialize(self, session_id: str, **kwargs) -> None:
            pass

        def get_tool_schemas(self) -> list:
            return []

    def manager(provider: MemoryProvider, session: str, user: str) -> MemoryManager:
        m = MemoryManager()
        m.add_provider(provider)
        m.initialize_all(session_id=session, platform="cli", agent_context="primary", user_id=user)
        return m

    samples = json.loads(data.read_text(encoding="utf-8"))[:conversations]
    sync_call: dict[str, list[float]] = {"mnemo": [], "idle": []}
    sync_work: list[float] = []
    prefetch: dict[str, list[float]] = {"mnemo": [], "idle": []}
    compress: list[float] = []
    turns = 0
    for number, sample in enumerate(samples):
        user = str(sample.get("sample_id", number))
        mnemo_m = None
        for name, make in (("mnemo", lambda: load_memory_provider("mnemo")), ("idle", Idle)):
            m = manager(make(), f"{user}-play", user)
            for _key, session_turns, _when in _sessions(sample.get("conversation", {})):
                history = []
                for turn in session_turns:
                    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
                    history += [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
                    started = time.perf_counter()
                    m.sync_all(text, "ok", session_id=f"{user}-play", messages=history)
                    sync_call[name].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    m.flush_pending(60)
                    if name == "mnemo":
                        sync_work.append(time.perf_counter() - started)
                        turns += 1
                if name == "mnemo":
                    started = time.perf_counter()
                    m.on_pre_compress(history)
                    compress.append(time.perf_counter() - started)
            m.shutdown_all()
            asker = manager(make(), f"{user}-ask", user)
            for _category, _evidence, question, _qa in _scored_questions(sample):
                started = time.perf_counter()
                asker.prefetch_all(question, session_id=f"{user}-ask")
                prefetch[name].append(time.perf_counter() - started)
            if name == "mnemo":
                mnemo_m = asker
            else:
                asker.shutdown_all()
        if mnemo_m is not None:
            mnemo_m.shutdown_all()
    rows = [
        ["sync_all, caller's thread", *_ms(sync_call["idle"]), *_ms(sync_call["mnemo"])],
        ["sync_all, queued work per turn", "", "", *_ms(sync_work)],
        ["on_pre_compress per session", "", "", *_ms(compress)],
        ["prefetch_all per question", *_ms(prefetch["idle"]), *_ms(prefetch["mnemo"])],
    ]
    print(f"\nmnemo behind Hermes' MemoryManager: {turns} turns in {len(compress)} sessions, "
          f"{len(prefetch['mnemo'])} questions")  # fmt: skip
    _table(rows, ["call", "idle p50 ms", "idle p95 ms", "mnemo p50 ms", "mnemo p95 ms"])
    return {
        "turns": turns,
        "questions": len(prefetch["mnemo"]),
        "sync_caller_ms_p50": float(_ms(sync_call["mnemo"])[0]),
        "sync_caller_ms_p95": float(_ms(sync_call["mnemo"])[1]),
        "sync_work_ms_p95": float(_ms(sync_work)[1]),
        "prefetch_ms_p50": float(_ms(prefetch["mnemo"])[0]),
        "prefetch_ms_p95": float(_ms(prefetch["mnemo"])[1]),
        "idle_prefetch_ms_p95": float(_ms(prefetch["idle"])[1]),
        "compress_ms_p50": round(statistics.median(compress) * 1000, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--conversations", type=int, default=1, help="how many conversations to play (default 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "hermes"
        home.mkdir()
        os.environ["HERMES_HOME"] = str(home)
        from mnemo.cli import main as mnemo

        if mnemo(["hermes", "install", "--hermes-home", str(home)]) != 0:
            return 1
        result = run(args.data.resolve(), args.conversations)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
