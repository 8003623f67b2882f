"""MnemoSession meets the OpenAI Agents SDK's Session contract, the behaviours its SQLiteSession is held to
(shared tests run against both), keeps its history in mnemo's archive, and never lets one user see
another's; memory_tools gives an agent mnemo's own tools. Ends with a real agent run across processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="needs the openai-agents extra: pip install -e '.[openai-agents]'")

from agents import SQLiteSession  # noqa: E402
from agents.memory.session_settings import SessionSettings  # noqa: E402

from mnemo import AgentMemory  # noqa: E402
from mnemo.errors import InvalidArgument  # noqa: E402
from mnemo.integrations.openai_agents import MnemoSession, memory_tools  # noqa: E402
from support.runs import ROOT, run_module  # noqa: E402

USER = {"role": "user", "content": "What is the capital of Portugal?"}
CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"country": "Portugal"}'}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "Lisbon"}
ANSWER = {
    "id": "msg-1", "type": "message", "role": "assistant", "status": "completed",
    "content": [{"type": "output_text", "text": "It is Lisbon.", "annotations": []}],
}  # fmt: skip
REASONING = {"type": "reasoning", "id": "rs-1", "summary": [{"type": "summary_text", "text": "capital lookup"}]}
ITEMS = [USER, CALL, OUTPUT, REASONING, ANSWER]


@pytest.fixture(params=["mnemo", "sdk-sqlite"])
def make_session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """A session factory: mnemo's, and the SDK's own SQLiteSession as the reference it must agree with."""
    opened = []

    def make(session_id: str = "chat", **kwargs):
        if request.param == "mnemo":
            session = MnemoSession(session_id, tmp_path / "home", graph_embedder="none", **kwargs)
        else:
            session = SQLiteSession(session_id, tmp_path / "reference.db", **kwargs)
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()


def test_items_come_back_in_order_exactly_as_added(make_session) -> None:
    session = make_session()
    asyncio.run(session.add_items(ITEMS[:2]))
    asyncio.run(session.add_items(ITEMS[2:]))
    assert asyncio.run(session.get_items()) == ITEMS


def test_a_limit_gives_the_latest_items_in_order(make_session) -> None:
    session = make_session()
    asyncio.run(session.add_items(ITEMS))
    assert asyncio.run(session.get_items(limit=2)) == [REASONING, ANSWER]


def test_the_settings_limit_is_the_default(make_session) -> None:
    session = make_session(session_settings=SessionSettings(limit=1))
    asyncio.run(session.add_items(ITEMS))
    assert asyncio.run(session.get_items()) == [ANSWER]
    assert asyncio.run(session.get_items(limit=3)) == [OUTPUT, REASONING, ANSWER]


def test_a_new_session_is_empty(make_session) -> None:
    session = make_session()
    assert asyncio.run(session.get_items()) == []
    assert asyncio.run(session.pop_item()) is None


def test_pop_removes_and_returns_the_newest_item(make_session) -> None:
    session = make_session()
    asyncio.run(session.add_items(ITEMS))
    assert asyncio.run(session.pop_item()) == ANSWER
    assert asyncio.run(session.pop_item()) == REASONING
    assert asyncio.run(session.get_items()) == ITEMS[:3]


def test_clear_empties_the_session_and_it_can_be_used_again(make_session) -> None:
    session = make_session()
    asyncio.run(session.add_items(ITEMS))
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    asyncio.run(session.add_items([USER]))
    assert asyncio.run(session.get_items()) == [USER]


def test_sessions_with_different_ids_keep_their_own_items(make_session) -> None:
    first, second = make_session("one"), make_session("two")
    asyncio.run(first.add_items([USER]))
    asyncio.run(second.add_items([ANSWER]))
    assert asyncio.run(first.get_items()) == [USER] and asyncio.run(second.get_items()) == [ANSWER]
    asyncio.run(first.clear_session())
    assert asyncio.run(second.get_items()) == [ANSWER]


def test_concurrent_writers_lose_nothing(make_session) -> None:
    session = make_session()

    async def main():
        await asyncio.gather(*(session.add_items([{"role": "user", "content": f"m{n}"}]) for n in range(30)))
        return await session.get_items()

    assert sorted(item["content"] for item in asyncio.run(main())) == sorted(f"m{n}" for n in range(30))


_WRITER = """
import asyncio, sys
from mnemo.integrations.openai_agents import MnemoSession
session = MnemoSession("shared", sys.argv[1], user_id="alice", graph_embedder="none")
for n in range(40):
    asyncio.run(session.add_items([{"role": "user", "content": f"{sys.argv[2]}-{n}"}]))
session.close()
"""


def test_two_processes_adding_to_one_session_lose_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), name], env=env, stderr=subprocess.PIPE)
        for name in ("p1", "p2")
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0, writer.stderr.read().decode()
    session = MnemoSession("shared", tmp_path, user_id="alice")
    items = [item["content"] for item in asyncio.run(session.get_items())]
    session.close()
    for name in ("p1", "p2"):
        assert [i for i in items if i.startswith(name)] == [f"{name}-{n}" for n in range(40)]


# -- what mnemo adds ------------------------------------------------------------------------------


def test_the_history_is_searchable_from_a_later_session(tmp_path: Path) -> None:
    session = MnemoSession("chat", tmp_path, user_id="alice")
    asyncio.run(session.add_items(ITEMS))
    session.close()
    with AgentMemory.open("later", tmp_path, user_id="alice", graph_embedder="none", archive_embedder="none") as memory:
        hits = memory.search_sessions("capital Portugal")
    assert [hit.root.id for hit in hits] == ["chat"]


def test_another_user_can_neither_read_nor_write_a_session(tmp_path: Path) -> None:
    alice = MnemoSession("chat", tmp_path, user_id="alice")
    asyncio.run(alice.add_items([USER]))
    bob = MnemoSession("chat", tmp_path, user_id="bob")
    assert asyncio.run(bob.get_items()) == []
    assert asyncio.run(bob.pop_item()) is None
    asyncio.run(bob.clear_session())
    with pytest.raises(InvalidArgument, match="another scope"):
        asyncio.run(bob.add_items([ANSWER]))
    assert asyncio.run(alice.get_items()) == [USER]
    alice.close()
    bob.close()


def test_an_item_that_cannot_be_archived_writes_nothing(tmp_path: Path) -> None:
    session = MnemoSession("chat", tmp_path)
    with pytest.raises(InvalidArgument):
        asyncio.run(session.add_items([USER, {"role": "user", "content": 42}]))
    assert asyncio.run(session.get_items()) == []
    session.close()


def test_memory_tools_are_mnemos_tools_as_function_tools(tmp_path: Path) -> None:
    with AgentMemory.open("s", tmp_path, graph_embedder="none", archive_embedder="none") as memory:
        tools = memory_tools(memory)
        assert [tool.name for tool in tools] == ["recall", "remember", "session_search"]
        remember = tools[1]
        saved = json.loads(
            asyncio.run(remember.on_invoke_tool(_context("t1"), '{"content": "The office wifi is slow"}'))
        )
        assert saved["success"] and [m.content for m in memory.recall("wifi")] == ["The office wifi is slow"]


def test_memory_tools_refuse_an_unknown_name(tmp_path: Path) -> None:
    with AgentMemory.open("s", tmp_path, graph_embedder="none", archive_embedder="none") as memory:
        with pytest.raises(ValueError, match="no mnemo tool named teleport"):
            memory_tools(memory, ["recall", "teleport"])


def _context(call_id: str):
    from agents.tool_context import ToolContext

    return ToolContext(context=None, tool_name="remember", tool_call_id=call_id, tool_arguments="{}")


# -- a real agent, two processes ------------------------------------------------------------------


def agent_run(home: Path, user: str, session_id: str, tool: str, arguments: dict) -> dict:
    return run_module("support.openai_agents_run", str(home), user, session_id, tool, json.dumps(arguments))


def test_an_agent_recalls_in_a_new_process_what_it_remembered(tmp_path: Path) -> None:
    agent_run(tmp_path, "alice", "chat-1", "remember", {"content": "Alice keeps bees on her roof"})
    recalled = agent_run(tmp_path, "alice", "chat-2", "recall", {"query": "what does Alice keep on her roof?"})
    assert "bees" in recalled["answer"]
    searched = agent_run(tmp_path, "alice", "chat-3", "session_search", {"query": "bees roof"})
    assert "chat-1" in searched["answer"]


def test_the_session_continues_in_a_new_process(tmp_path: Path) -> None:
    first = agent_run(tmp_path, "alice", "chat", "remember", {"content": "Alice keeps bees"})
    second = agent_run(tmp_path, "alice", "chat", "recall", {"query": "bees"})
    assert second["items"][: len(first["items"])] == first["items"]


def test_another_users_agent_recalls_nothing(tmp_path: Path) -> None:
    agent_run(tmp_path, "alice", "chat-1", "remember", {"content": "Alice keeps bees on her roof"})
    recalled = agent_run(tmp_path, "bob", "chat-2", "recall", {"query": "bees roof"})
    assert "bees" not in recalled["answer"]
