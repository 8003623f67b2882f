"""An open AgentMemory with every built-in tool, and a way to see whether its stores changed."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo import AgentMemory

TOOL_NAMES = ("memory", "session_search", "recall", "remember", "relate", "forget")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentMemory]:
    """One agent for the module (opening one per hypothesis example would dominate the run)."""
    home = tmp_path_factory.mktemp("home")
    memory = AgentMemory.open("boundary", home=home, graph_embedder="none", archive_embedder="none")
    memory.handle_tool_call("memory", {"target": "memory", "action": "add", "content": "The deploy runs on Fridays."})
    memory.handle_tool_call("remember", {"content": "The user prefers tea.", "type": "preference"})
    memory.turn_complete("hello", "hi there")
    settle(memory)  # the archive records the turn, and the graph mirrors the add, on background threads
    yield memory
    memory.close()


def settle(memory: AgentMemory) -> None:
    """Wait until the providers' event lanes are idle (a successful curated write is mirrored into the
    graph on one), so what a snapshot sees is not still changing."""
    deadline = time.monotonic() + 10
    while any(entry.event_lane.pending for entry in memory.registry._session.active):
        assert time.monotonic() < deadline, "provider events did not finish"
        time.sleep(0.005)


def snapshot(memory: AgentMemory) -> tuple[bytes, ...]:
    """Every byte a tool could change, once background writes are done: both curated files and a full
    dump of mnemo's database."""
    settle(memory)
    files = tuple(
        path.read_bytes() if path.exists() else b"" for path in (memory.store.path("memory"), memory.store.path("user"))
    )
    database = Path(memory.settings.database_path)
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        dump = "\n".join(conn.iterdump()).encode("utf-8", "surrogatepass")
    return (*files, dump)
