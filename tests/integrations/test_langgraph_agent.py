"""A real LangGraph agent with LangMem's memory tools on a MnemoStore remembers in one process and recalls
in another, and never across users."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph.prebuilt", reason="needs the langgraph extra: pip install -e '.[langgraph]'")
pytest.importorskip("langmem", reason="needs langmem (in the test extra)")
from support.runs import run_module  # noqa: E402


def agent_run(home: Path, user: str, action: str, text: str) -> list[str]:
    return run_module("support.langgraph_agent", str(home), user, action, text)


def test_a_langgraph_agent_recalls_in_a_new_process_what_it_remembered(tmp_path: Path) -> None:
    saved = agent_run(tmp_path, "alice", "remember", "Alice's dog is a beagle named Biscuit")
    assert saved and saved[0].startswith("created memory")
    found = agent_run(tmp_path, "alice", "recall", "what is the name of Alice's dog?")
    assert "Biscuit" in found[0]


def test_another_users_agent_finds_nothing(tmp_path: Path) -> None:
    agent_run(tmp_path, "alice", "remember", "Alice's dog is a beagle named Biscuit")
    found = agent_run(tmp_path, "bob", "recall", "beagle named Biscuit")
    assert "Biscuit" not in found[0]
