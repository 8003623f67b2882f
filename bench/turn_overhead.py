"""What AgentMemory.prepare_messages adds to a turn, with 0, 1 and 4 fast providers.

The providers answer at once with a short fixed text, so everything measured is mnemo's own work:
dispatching to the providers' threads under a deadline, collecting, sanitising and fencing their
text, and copying the history. The baseline row is the floor any implementation pays in the same run:
copying the history list and its message dicts.

    python bench/turn_overhead.py [--calls 3000] [--history 50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from mnemo import AgentMemory
from mnemo.providers import BaseProvider


class FastProvider(BaseProvider):
    def __init__(self, name: str) -> None:
        self.name = name

    def enrich_turn(self, user_message, messages):
        return f"{self.name}: the user prefers short answers and deploys on Fridays."


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


if __name__ == "__main__":
    main()
