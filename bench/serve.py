"""What ``mnemo serve`` adds to a tool call: round trip over stdio and streamable HTTP beside the direct
``AgentMemory.handle_tool_call`` on the same home, in the same run.

The home holds ``--memories`` graph memories (full-text recall: ``graph_embedder = "none"``, so the
numbers are the transport's and not the embedder's). ``memory`` add is timed on a small curated store
(each timed add is followed by an untimed remove of the same entry, so every add does the same work);
``recall`` asks for words that match a few hundred memories. The official ``mcp`` client drives a real
``mnemo serve`` subprocess; the overhead column is the transport's p50 / p95 minus the direct call's.
Readiness: ``--starts`` new servers over stdio, each timed from spawning it to the MCP handshake and to its
first ``recall`` answered, beside the time a bare ``import mcp.server`` process takes.

    python bench/serve.py [--memories 10000] [--calls 300] [--starts 7]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from _tables import print_table
from mnemo import AgentMemory

TOKEN = "bench-token-0123456789abcdef"
ADD = {"target": "memory", "action": "add", "content": "The benchmark entry about the staging server"}
REMOVE = {"target": "memory", "action": "remove", "old_text": "benchmark entry about the staging"}
RECALL = {"query": "staging deploy friday", "limit": 8}
TOPICS = ("staging", "deploy", "friday", "okapi", "billing", "kiwi", "search", "latency", "backup", "alerts")


def _seed(home: Path, count: int) -> None:
    (home / "config.toml").write_text('graph_embedder = "none"\n', encoding="utf-8")
    with AgentMemory.open("seed", home) as memory:
        graph = memory._graph()
        items = [
            {
                "content": f"Note {i}: the {TOPICS[i % 10]} work item {i} touches {TOPICS[(i * 7) % 10]} and {TOPICS[(i * 3) % 10]}"
            }
            for i in range(count)
        ]
        for start in range(0, count, 1000):
            graph.remember_many(items[start : start + 1000])


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95)]


def _direct(home: Path, calls: int) -> dict[str, list[float]]:
    with AgentMemory.open("bench-direct", home) as memory:
        timings: dict[str, list[float]] = {"memory add": [], "recall": []}
        for _ in range(calls):
            start = time.perf_counter()
            memory.handle_tool_call("memory", ADD)
            timings["memory add"].append((time.perf_counter() - start) * 1000)
            memory.handle_tool_call("memory", REMOVE)
            start = time.perf_counter()
            memory.handle_tool_call("recall", RECALL)
            timings["recall"].append((time.perf_counter() - start) * 1000)
        return timings


async def _over(session: ClientSession, calls: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"memory add": [], "recall": []}
    await session.list_tools()  # opens the mnemo session before timing
    for _ in range(calls):
        start = time.perf_counter()
        result = await session.call_tool("memory", ADD)
        timings["memory add"].append((time.perf_counter() - start) * 1000)
        assert not result.is_error, result.content
        await session.call_tool("memory", REMOVE)
        start = time.perf_counter()
        await session.call_tool("recall", RECALL)
        timings["recall"].append((time.perf_counter() - start) * 1000)
    return timings


def _command(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "mnemo", "--home", str(home), "serve", *args]


async def _stdio(home: Path, calls: int) -> dict[str, list[float]]:
    params = StdioServerParameters(command=sys.executable, args=_command(home)[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await _over(session, calls)


async def _ready(home: Path) -> tuple[float, float]:
    """One new ``mnemo serve`` over stdio: ms from spawning it to the handshake, and to the first recall
    answered (the mnemo session opens on that first call)."""
    params = StdioServerParameters(command=sys.executable, args=_command(home)[1:], env=dict(os.environ))
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready = time.perf_counter()
        result = await session.call_tool("recall", RECALL)
        answered = time.perf_counter()
        assert not result.is_error, result.content
    return (ready - start) * 1000, (answered - start) * 1000


async def _http(url: str, calls: int) -> dict[str, list[float]]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await _over(session, calls)


def _with_http_server(home: Path, run: Callable[[str], Awaitable[dict[str, list[float]]]]) -> dict[str, list[float]]:
    process = subprocess.Popen(
        _command(home, "--http", "127.0.0.1:0"),
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MNEMO_SERVE_TOKEN": TOKEN},
    )
    try:
        url = process.stderr.readline().split()[-1]  # type: ignore[union-attr]
        return anyio.run(run, url)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=7, help="new servers started to time readiness")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        _seed(home, args.memories)
        runs = {
            "direct (in process)": _direct(home, args.calls),
            "stdio": anyio.run(_stdio, home, args.calls),
            "streamable HTTP": _with_http_server(home, lambda url: _http(url, args.calls)),
        }
        readiness = [anyio.run(_ready, home) for _ in range(args.starts)]
        floor = []
        for _ in range(args.starts):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import mcp.server"], check=True)
            floor.append((time.perf_counter() - start) * 1000)
    rows = []
    for tool in ("memory add", "recall"):
        base50, base95 = _stats(runs["direct (in process)"][tool])
        for transport, timings in runs.items():
            p50, p95 = _stats(timings[tool])
            extra = "-" if transport.startswith("direct") else f"{p50 - base50:.2f} / {p95 - base95:.2f}"
            rows.append((tool, transport, f"{p50:.2f}", f"{p95:.2f}", extra))
    print_table(
        f"Tool-call round trip, {args.memories:,} memories, {args.calls} calls each (ms)",
        ("tool", "transport", "p50", "p95", "overhead p50 / p95"),
        rows,
    )
    handshake, answered = [r[0] for r in readiness], [r[1] for r in readiness]
    print_table(
        f"A new `mnemo serve` over stdio, {args.starts} starts (ms, median (max))",
        ("from spawning the server to", "ms"),
        [("the MCP handshake done", f"{statistics.median(handshake):.0f} ({max(handshake):.0f})"),
         ("the first recall answered (opens the session)", f"{statistics.median(answered):.0f} ({max(answered):.0f})"),
         ("baseline: python -c 'import mcp.server' exits", f"{statistics.median(floor):.0f} ({max(floor):.0f})")],
    )  # fmt: skip


if __name__ == "__main__":
    main()
