"""What AgentMemory.prepare_messages adds to a turn, with 0, 1 and 4 fast providers, and with one slow
provider (400 ms per lookup) with and without prefetch; then the Honcho provider (real SDK, prefetching) against the local server that
implements Honcho's API reference (tests/support/honcho_server.py), when the ``honcho`` extra is installed.

The fast providers answer at once with a short fixed text, so everything measured is mnemo's own work:
dispatching to the providers' threads under a deadline, collecting, sanitising and fencing their
text, and copying the history. The baseline row is the floor any implementation pays in the same run:
copying the history list and its message dicts.

The slow rows play a normal back-and-forth: prepare_messages, the model's answer, turn_complete, then
``--gap`` seconds before the user's next message (reading and typing). Without prefetch every turn
waits for the lookup; with it the lookup runs during the gap. Turns from the second on are measured
against the same loop with no provider, in the same run.

The Mem0 rows play the same back-and-forth with the real Mem0 provider (``mem0ai``'s local Memory, an on-disk
Qdrant) whose models are an OpenAI-compatible server on loopback (tests/support): each turn is added to Mem0
after it completes and searched for the next; skipped when ``mem0ai`` is not installed.

    python bench/turn_overhead.py [--calls 3000] [--history 50] [--turns 12] [--gap 0.6]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _tables import print_table
from mnemo import AgentMemory
from mnemo.providers import BaseProvider


class FastProvider(BaseProvider):
    def __init__(self, name: str) -> None:
        self.name = name

    def enrich_turn(self, user_message, messages):
        return f"{self.name}: the user prefers short answers and deploys on Fridays."


LOOKUP_SECONDS = 0.4


class SlowProvider(BaseProvider):
    """A backend needing 400 ms per lookup (a remote memory service, say)."""

    name = "slow"

    def enrich_turn(self, user_message, messages):
        time.sleep(LOOKUP_SECONDS)
        return f"slow: what the service knows about {user_message[:40]}"


class PrefetchingSlowProvider(SlowProvider):
    """The same backend, looking up the next turn's context in the background."""

    def prefetch(self, query):
        return self.enrich_turn(query, ())


def _conversation(memory: AgentMemory | None, turns: int, gap: float, history: list[dict[str, str]]) -> list[float]:
    """Milliseconds spent in prepare_messages on turns 2.. of a back-and-forth (0 without memory)."""
    samples = []
    for turn in range(turns):
        message = f"question {turn} about the staging server"
        start = time.perf_counter()
        if memory is not None:
            memory.prepare_messages(message, history)
        else:
            [dict(m) for m in history]
        elapsed = (time.perf_counter() - start) * 1e3
        if turn:
            samples.append(elapsed)
        if memory is not None:
            memory.turn_complete(message, "an answer")
        time.sleep(gap)
    return samples


def _conversation_table(title: str, cases, turns: int, gap: float, history, configure=lambda home: None) -> None:
    """One conversation per ``(label, provider)`` in a fresh home (``configure(home)`` first), against the same
    loop with no provider."""
    base = statistics.median(_conversation(None, turns, gap, history))
    rows = [("baseline: copy history", base, base, 0.0)]
    for label, provider in cases:
        with tempfile.TemporaryDirectory() as home:
            configure(home)
            with AgentMemory.open("bench", home, providers=[provider], archive_enabled=False, graph_enabled=False) as memory:
                samples = sorted(_conversation(memory, turns, gap, history))
        p50 = statistics.median(samples)
        rows.append((label, p50, samples[int(len(samples) * 0.95)], p50 - base))
    print_table(
        f"{title}, turns 2-{turns}, {gap:.1f} s between turn_complete and the next message (milliseconds)",
        ("case", "p50 ms", "p95 ms", "p50 - base"),
        rows,
        cell=lambda v: f"{v:.2f}" if isinstance(v, float) else str(v),
    )


def _slow_rows(turns: int, gap: float, history: list[dict[str, str]]) -> None:
    cases = (("slow provider, no prefetch", SlowProvider()), ("slow provider, with prefetch", PrefetchingSlowProvider()))
    title = f"prepare_messages with a provider needing {LOOKUP_SECONDS * 1e3:.0f} ms per lookup"
    _conversation_table(title, cases, turns, gap, history)


def _mem0_rows(turns: int, gap: float, history: list[dict[str, str]]) -> None:
    if importlib.util.find_spec("mem0") is None:
        print("\nMem0 rows skipped: mem0ai is not installed (pip install 'mnemo-local[mem0]')")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from mnemo.providers.configuration import update_env_file, update_provider_table
    from mnemo.providers.mem0 import Mem0Provider
    from support.mem0_run import extracting_model
    from support.openai_server import EMBEDDING_DIMS, OpenAIServer

    class Mem0WithoutPrefetch(Mem0Provider):
        prefetch = None  # the registry then asks enrich_turn on the turn itself

    with OpenAIServer(handler=extracting_model) as server:

        def configure(home: str) -> None:
            update_provider_table(home, "mem0", {"llm_base_url": server.base_url, "embedding_dims": EMBEDDING_DIMS})
            update_env_file(home, {"MNEMO_PROVIDER_MEM0_LLM_API_KEY": "local"})

        cases = (("mem0 provider, no prefetch", Mem0WithoutPrefetch()), ("mem0 provider, with prefetch", Mem0Provider()))
        title = "prepare_messages with the Mem0 provider (local Memory, on-disk Qdrant, models on loopback)"
        _conversation_table(title, cases, turns, gap, history, configure)


def _honcho_row(turns: int, gap: float, history: list[dict[str, str]]) -> None:
    """The Honcho provider's added time per turn: every turn synced to the local reference server and the
    next turn's context prefetched during the gap, against the same loop with no provider."""
    try:
        from mnemo.providers.honcho import HonchoProvider
    except ImportError:
        print("honcho: the honcho-ai SDK is not installed (pip install 'mnemo-local[honcho]'); row skipped")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.honcho_server import HonchoReferenceServer

    base = statistics.median(_conversation(None, turns, gap, history))
    with HonchoReferenceServer() as server, tempfile.TemporaryDirectory() as home:
        Path(home, "config.toml").write_text(f'[providers.honcho]\nbase_url = "{server.url}"\n')
        with AgentMemory.open("bench", home, providers=[HonchoProvider()], archive_enabled=False, graph_enabled=False) as memory:
            samples = sorted(_conversation(memory, turns, gap, history))
        synced = len(server.messages_in("user--bench"))
    p50 = statistics.median(samples)
    print_table(
        f"prepare_messages with the Honcho provider (prefetch) on the local reference server, turns 2-{turns}, "
        f"{gap:.1f} s gap; {synced} messages synced (milliseconds)",
        ("case", "p50 ms", "p95 ms", "p50 - base"),
        [("baseline: copy history", base, base, 0.0), ("honcho, with prefetch", p50, samples[int(len(samples) * 0.95)], p50 - base)],
        cell=lambda v: f"{v:.2f}" if isinstance(v, float) else str(v),
    )


def _history(length: int) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} about the staging server"}
        for i in range(length - 1)
    ] + [{"role": "user", "content": "When do we deploy?"}]


def _measure(call, calls: int) -> list[float]:
    for _ in range(min(200, calls)):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def _row(label: str, samples: list[float], baseline: float) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[int(len(ordered) * 0.95)]
    return f"| {label:<24} | {p50:>8.1f} | {p95:>8.1f} | {p50 - baseline:>12.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--history", type=int, default=50)
    parser.add_argument("--turns", type=int, default=12, help="turns per slow-provider conversation")
    parser.add_argument("--gap", type=float, default=0.6, help="seconds between turn_complete and the next message")
    args = parser.parse_args()
    history = _history(args.history)

    baseline = _measure(lambda: [dict(m) for m in history], args.calls)
    base_p50 = statistics.median(baseline)
    print(f"prepare_messages overhead, {args.calls} calls, history of {args.history} messages (microseconds)\n")
    print(f"| {'case':<24} | {'p50 µs':>8} | {'p95 µs':>8} | {'p50 − base':>12} |")
    print(f"|{'-' * 26}|{'-' * 10}|{'-' * 10}|{'-' * 14}|")
    print(_row("baseline: copy history", baseline, base_p50))
    for count in (0, 1, 4):
        with tempfile.TemporaryDirectory() as home:
            providers = [FastProvider(f"p{i}") for i in range(count)]
            with AgentMemory.open("bench", home, providers=providers, archive_enabled=False, graph_enabled=False) as memory:
                samples = _measure(lambda: memory.prepare_messages("When do we deploy?", history), args.calls)
        print(_row(f"{count} fast provider(s)", samples, base_p50))
    print()
    _slow_rows(args.turns, args.gap, history)
    _mem0_rows(args.turns, args.gap, history)
    print()
    _honcho_row(args.turns, args.gap, history)


if __name__ == "__main__":
    main()
