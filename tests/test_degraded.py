"""Degraded storage: a damaged or unwritable database is reported, never written over, and the tools the
model expects answer with the reason (issue 16, point 8)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo import AgentMemory, Degradation, StorageUnavailable
from support import damage
from support.damage import DAMAGE, database_of, fill, fingerprint, remount_read_only


@pytest.fixture
def small_file_system(tmp_path: Path) -> Iterator[Path]:
    yield from damage.small_file_system(tmp_path)


STORAGE_TOOLS = {"session_search", "recall", "remember", "relate", "forget"}
OPTIONS = {"graph_embedder": "none", "archive_embedder": "none"}


def _home_with_memories(home: Path) -> Path:
    """A home whose database holds an archived turn and a graph memory, closed (WAL checkpointed)."""
    with AgentMemory.open("first", home=home, **OPTIONS) as memory:
        memory.handle_tool_call("remember", {"content": "The user likes green tea."})
        memory.turn_complete("hello", "hi there")
    return home


@pytest.fixture(params=sorted(DAMAGE))
def damaged_home(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    home = _home_with_memories(tmp_path / "home")
    DAMAGE[request.param](database_of(home))
    return home


def test_open_refuses_a_damaged_database_naming_each_component(damaged_home: Path) -> None:
    with pytest.raises(StorageUnavailable) as refused:
        AgentMemory.open("second", home=damaged_home, **OPTIONS)
    assert {problem.component for problem in refused.value.problems} == {"archive", "graph"}
    assert "mnemo doctor" in str(refused.value)


def test_a_damaged_database_is_never_written_over(damaged_home: Path) -> None:
    database = database_of(damaged_home)
    before = fingerprint(database)
    with pytest.raises(StorageUnavailable):
        AgentMemory.open("second", home=damaged_home, **OPTIONS)
    with AgentMemory.open("third", home=damaged_home, allow_degraded=True, **OPTIONS) as memory:
        memory.handle_tool_call("remember", {"content": "Something new."})
        memory.handle_tool_call("memory", {"target": "memory", "action": "add", "content": "A curated fact."})
        memory.turn_complete("question", "answer")
    assert fingerprint(database) == before


def test_a_degraded_start_lists_what_is_missing_and_why(damaged_home: Path) -> None:
    with AgentMemory.open("second", home=damaged_home, allow_degraded=True, **OPTIONS) as memory:
        components = {problem.component: problem.reason for problem in memory.degraded}
    assert set(components) == {"archive", "graph"}
    assert all(database_of(damaged_home).name in reason for reason in components.values())


def test_the_tools_the_model_expects_answer_with_the_reason(damaged_home: Path) -> None:
    with AgentMemory.open("second", home=damaged_home, allow_degraded=True, **OPTIONS) as memory:
        assert {schema["function"]["name"] for schema in memory.tools()} == {"memory", *STORAGE_TOOLS}
        for name in STORAGE_TOOLS:
            answer = json.loads(memory.handle_tool_call(name, {}))
            assert answer["success"] is False
            assert "unknown tool" not in answer["error"]
            assert database_of(damaged_home).name in answer["error"]
            assert answer["unavailable"] in {"archive", "graph"}


def test_curated_memory_still_works_in_a_degraded_session(damaged_home: Path) -> None:
    with AgentMemory.open("second", home=damaged_home, allow_degraded=True, **OPTIONS) as memory:
        answer = json.loads(memory.handle_tool_call("memory", {"target": "user", "action": "add", "content": "Likes tea."}))
    assert answer["success"] is True


def test_a_healthy_session_is_not_degraded(tmp_path: Path) -> None:
    with AgentMemory.open("first", home=_home_with_memories(tmp_path / "home"), **OPTIONS) as memory:
        assert memory.degraded == ()


def test_an_unreadable_curated_file_is_listed_without_refusing_to_start(tmp_path: Path) -> None:
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "MEMORY.md").write_bytes(b"caf\xe9\n")
    with AgentMemory.open("first", home=tmp_path, **OPTIONS) as memory:
        assert [problem.component for problem in memory.degraded] == ["curated:memory"]
        assert "UTF-8" in memory.degraded[0].reason


def test_a_dropped_third_party_provider_is_listed(tmp_path: Path) -> None:
    from mnemo.providers import BaseProvider

    class Broken(BaseProvider):
        name = "team"

        def initialize(self, session_key, config):
            raise ConnectionError("backend unreachable")

    with AgentMemory.open("first", home=tmp_path, providers=[Broken()], **OPTIONS) as memory:
        assert memory.degraded == (Degradation("team", "ConnectionError: backend unreachable"),)


# --- real read-only and full file systems (need the right to mount; skipped otherwise) -----------


def test_a_read_only_file_system_is_reported_at_open(small_file_system: Path) -> None:
    home = _home_with_memories(small_file_system / "home")
    before = fingerprint(database_of(home))
    remount_read_only(small_file_system)
    with pytest.raises(StorageUnavailable) as refused:
        AgentMemory.open("second", home=home, **OPTIONS)
    assert {problem.component for problem in refused.value.problems} == {"archive", "graph"}
    with AgentMemory.open("third", home=home, allow_degraded=True, **OPTIONS) as memory:
        answer = json.loads(memory.handle_tool_call("memory", {"target": "memory", "action": "add", "content": "x"}))
    assert answer["success"] is False
    assert "read-only" in answer["error"].lower()
    assert fingerprint(database_of(home)) == before


def test_a_full_disk_is_reported_at_open(small_file_system: Path) -> None:
    home = _home_with_memories(small_file_system / "home")
    before = fingerprint(database_of(home))
    fill(small_file_system)
    with pytest.raises(StorageUnavailable):
        AgentMemory.open("second", home=home, **OPTIONS)
    assert fingerprint(database_of(home)) == before


def test_a_new_home_on_a_full_disk_is_reported_at_open(small_file_system: Path) -> None:
    fill(small_file_system)
    with pytest.raises(StorageUnavailable) as refused:
        AgentMemory.open("first", home=small_file_system / "home", **OPTIONS)
    assert "full" in str(refused.value)
