"""The Mem0 provider driving the real ``mem0ai`` package: its local ``Memory`` with an on-disk Qdrant, its models
an OpenAI-compatible server on loopback (chat for Mem0's fact extraction, embeddings for its search)."""

from __future__ import annotations

import importlib.util
import json
import re
import threading
import time
import tomllib
from pathlib import Path

import pytest

from mnemo import AgentMemory
from mnemo.cli import main
from mnemo.providers.configuration import update_env_file, update_provider_table
from mnemo.providers.mem0 import MEM0_TOOL_NAMES, Mem0Provider, entity_id
from support.mem0_platform import API_KEY, Mem0Platform
from support.mem0_run import extracting_model
from support.openai_server import EMBEDDING_DIMS, OpenAIServer, Reply
from support.plugins import install_distribution
from support.runs import ROOT, run_module

# Not imported here: the provider imports mem0 itself, after turning its telemetry off.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="mem0ai is not installed")


@pytest.fixture
def server():
    with OpenAIServer(handler=extracting_model) as running:
        yield running


@pytest.fixture
def home(tmp_path, server, monkeypatch):
    """A home set up for Mem0 the way ``mnemo providers setup mem0`` leaves it: settings in ``config.toml``,
    the model key in ``.env``."""
    monkeypatch.delenv("MNEMO_PROVIDER_MEM0_LLM_API_KEY", raising=False)
    path = tmp_path / "home"
    update_provider_table(
        path,
        "mem0",
        {"llm_base_url": server.base_url, "llm_model": "test-model", "embedding_dims": EMBEDDING_DIMS, "timeout": 2.0},
    )
    update_env_file(path, {"MNEMO_PROVIDER_MEM0_LLM_API_KEY": "sk-local"})
    return path


def open_memory(home: Path, user: str = "alice", session: str = "s1", **settings) -> AgentMemory:
    return AgentMemory.open(
        session, home, user_id=user, providers=[Mem0Provider()], archive_enabled=False, graph_enabled=False, **settings
    )


def remember(memory: AgentMemory, message: str) -> None:
    """One turn about ``message``, then wait until Mem0 holds what it extracted from it."""
    before = len(listed(memory))
    memory.prepare_messages(message, [])
    memory.turn_complete(message, "Noted.")
    eventually(lambda: len(listed(memory)) > before)


def listed(memory: AgentMemory) -> list[str]:
    result = json.loads(memory.handle_tool_call("mem0_get_all", {}))
    assert result["success"], result
    return [found["memory"] for found in result["results"]]


def eventually(check, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.02)


def test_a_turn_reaches_mem0_and_the_next_turn_gets_it_back_fenced(home, server):
    with open_memory(home) as memory:
        remember(memory, "My favourite colour is teal")
        sent = memory.prepare_messages("Which colour do I like?", [])[-1]["content"]
    context = re.search(r"<memory-context>(.*)</memory-context>", sent, re.DOTALL)
    assert context is not None and "### mem0\n- My favourite colour is teal" in context.group(1)
    assert any(request.get("response_format") == {"type": "json_object"} for request in server.requests)


def test_what_one_process_remembered_is_the_next_processes_context(home, server):
    first = run_module("support.mem0_run", str(home), "alice", "monday", "The deploy password rotates on Fridays")
    second = run_module("support.mem0_run", str(home), "alice", "tuesday", "When does the deploy password rotate?")
    assert "<memory-context>" not in first["sent"]
    assert "<memory-context>" in second["sent"] and "The deploy password rotates on Fridays" in second["sent"]
    assert first["degraded"] == second["degraded"] == []


def test_mem0_telemetry_is_off_in_a_session(home):
    assert run_module("support.mem0_run", str(home), "alice", "s", "hello there")["telemetry"] is False


def test_two_users_never_see_each_others_memories(home):
    with open_memory(home, "alice") as alice, open_memory(home, "bob") as bob:
        remember(alice, "My locker code is 4711")
        assert listed(bob) == []
        found = json.loads(bob.handle_tool_call("mem0_search", {"query": "locker code"}))
        assert found == {"success": True, "results": []}
        assert "4711" not in bob.prepare_messages("What is my locker code?", [])[-1]["content"]
        [alices] = json.loads(alice.handle_tool_call("mem0_get_all", {}))["results"]
        refused = json.loads(bob.handle_tool_call("mem0_delete", {"memory_id": alices["id"]}))
        assert refused["success"] is False
        assert listed(alice) == ["My locker code is 4711"]


def test_concurrent_adds_of_several_users_keep_every_memory_with_its_owner(home):
    # Stored as given (no extraction call), so the adds reach the embedded vector store as fast as they can.
    update_provider_table(home, "mem0", {"infer": False})
    owners = ("alice", "bob", "carol", "dave")
    sessions = {owner: open_memory(home, owner) for owner in owners}

    def add_many(owner: str) -> None:
        for index in range(40):
            added = json.loads(sessions[owner].handle_tool_call("mem0_add", {"content": f"{owner} note {index}"}))
            assert added["success"], added

    try:
        threads = [threading.Thread(target=add_many, args=(owner,)) for owner in owners]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for owner, memory in sessions.items():
            found = json.loads(memory.handle_tool_call("mem0_get_all", {"limit": 100}))["results"]
            assert sorted(r["memory"] for r in found) == sorted(f"{owner} note {i}" for i in range(40))
    finally:
        for memory in sessions.values():
            memory.close()


def test_agents_of_one_user_keep_their_own_memories(home):
    with open_memory(home, "alice", agent_id="support") as support, open_memory(home, "alice", agent_id="coder") as coder:
        remember(support, "The ticket queue is triaged at nine")
        assert listed(coder) == []


def test_a_user_md_write_is_mirrored_to_mem0_verbatim(home, server):
    with open_memory(home) as memory:
        calls = len(server.requests)
        result = json.loads(memory.handle_tool_call("memory", {"action": "add", "target": "user", "content": "Prefers metric units"}))
        assert result["success"], result
        eventually(lambda: listed(memory) == ["Prefers metric units"])
        assert len(server.requests) == calls  # stored as written: no extraction call


def test_mem0_tools_are_offered_under_their_own_names_and_answer_json(home):
    with open_memory(home) as memory:
        offered = {tool["function"]["name"] for tool in memory.tools()}
        assert MEM0_TOOL_NAMES <= offered
        added = json.loads(memory.handle_tool_call("mem0_add", {"content": "The office plant is a ficus"}))
        assert added["success"] and added["results"][0]["memory"] == "The office plant is a ficus"
        found = json.loads(memory.handle_tool_call("mem0_search", {"query": "which plant is in the office", "limit": 3}))
        assert [hit["memory"] for hit in found["results"]] == ["The office plant is a ficus"]
        deleted = json.loads(memory.handle_tool_call("mem0_delete", {"memory_id": added["results"][0]["id"]}))
        assert deleted == {"success": True, "deleted": added["results"][0]["id"]}
        assert listed(memory) == []


def test_a_bad_tool_argument_is_refused_naming_it(home):
    with open_memory(home) as memory:
        refused = json.loads(memory.handle_tool_call("mem0_search", {"query": "x", "limit": 0}))
        assert refused["success"] is False and refused["field"] == "limit"


def test_a_hung_model_server_never_holds_a_turn_past_the_deadline(home, server):
    server.embedding_fault = Reply.error(503, "overloaded", delay=30)
    server.handler = lambda body: Reply.error(503, "overloaded", delay=30)
    with open_memory(home, enrich_timeout=0.5, shutdown_timeout=0.5) as memory:
        for turn in range(3):
            started = time.monotonic()
            sent = memory.prepare_messages(f"question {turn}", [])[-1]["content"]
            memory.turn_complete(f"question {turn}", "answer")
            assert time.monotonic() - started < 1.5
            assert "<memory-context>" not in sent


def test_a_hung_extraction_model_never_holds_a_turn_past_the_deadline(home, server):
    server.handler = lambda body: Reply.text("{}", delay=30)  # chat hangs; embeddings still answer
    with open_memory(home, enrich_timeout=0.5, shutdown_timeout=0.5) as memory:
        for turn in range(3):
            started = time.monotonic()
            memory.prepare_messages(f"question {turn}", [])
            memory.turn_complete(f"question {turn}", "answer")
            assert time.monotonic() - started < 1.5
        found = json.loads(memory.handle_tool_call("mem0_search", {"query": "question"}))
        assert found == {"success": True, "results": []}


def test_a_session_switch_files_later_turns_under_the_new_session(home):
    with open_memory(home, session="first") as memory:
        remember(memory, "The first session mentioned kiwis")
        memory.switch_session("second", parent="first")
        remember(memory, "The second session mentioned figs")
        backend = memory.registry.providers[0]._backend
        runs = {found["memory"]: found["run_id"] for found in backend.get_all(filters={"user_id": "alice", "agent_id": "~"})["results"]}
    assert runs == {"The first session mentioned kiwis": "first", "The second session mentioned figs": "second"}


def test_a_failing_model_server_leaves_the_session_going(home, server):
    server.embedding_fault = Reply.error(500, "the embedder crashed")
    server.handler = lambda body: Reply.error(500, "the model crashed")
    with open_memory(home) as memory:
        for turn in range(2):
            memory.prepare_messages(f"question {turn}", [])
            memory.turn_complete(f"question {turn}", "answer")
        failed = json.loads(memory.handle_tool_call("mem0_search", {"query": "anything"}))
        assert failed["success"] is False and "mem0" in failed["error"]
        server.embedding_fault = None
        server.handler = extracting_model
        remember(memory, "The server came back")


@pytest.fixture
def platform(home, monkeypatch):
    """Mem0's platform on loopback, set up as ``mnemo providers setup mem0 --set mode=hosted`` leaves it."""
    with Mem0Platform() as running:
        update_provider_table(home, "mem0", {"mode": "hosted", "host": running.url})
        monkeypatch.setenv("MNEMO_PROVIDER_MEM0_API_KEY", API_KEY)
        yield running


def test_hosted_a_turn_reaches_the_platform_scoped_and_comes_back_as_context(home, platform):
    with open_memory(home, session="s1") as memory:
        memory.prepare_messages("The staging database is called heron", [])
        memory.turn_complete("The staging database is called heron", "Noted.")
        eventually(lambda: len(platform.memories) == 1)
        sent = memory.prepare_messages("what is the staging database called", [])[-1]["content"]
    assert "### mem0\n- The staging database is called heron" in sent
    [added] = [body for method, path, body in platform.requests if path == "/v3/memories/add/"]
    assert (added["user_id"], added["agent_id"], added["run_id"]) == ("alice", "~", "s1")


def test_hosted_two_users_never_see_each_others_memories(home, platform):
    with open_memory(home, "alice") as alice, open_memory(home, "bob") as bob:
        added = json.loads(alice.handle_tool_call("mem0_add", {"content": "My locker code is 4711"}))
        assert added["success"] and added["status"] == "PENDING"
        [alices] = platform.memories
        assert json.loads(bob.handle_tool_call("mem0_search", {"query": "locker code"}))["results"] == []
        assert listed(bob) == []
        assert json.loads(bob.handle_tool_call("mem0_delete", {"memory_id": alices}))["success"] is False
        assert listed(alice) == ["My locker code is 4711"]
    searched = [body["filters"] for method, path, body in platform.requests if path == "/v3/memories/search/"]
    assert searched == [{"AND": [{"user_id": "bob"}, {"agent_id": "~"}]}]


def test_hosted_a_refused_api_key_leaves_mem0_out_and_says_why(home, platform, monkeypatch):
    monkeypatch.setenv("MNEMO_PROVIDER_MEM0_API_KEY", "m0-wrong")
    with open_memory(home) as memory:
        [degradation] = memory.degraded
        assert degradation.component == "mem0" and "Invalid API key" in degradation.reason


def test_hosted_mode_without_an_api_key_leaves_mem0_out_and_says_why(home, monkeypatch):
    monkeypatch.delenv("MNEMO_PROVIDER_MEM0_API_KEY", raising=False)
    update_provider_table(home, "mem0", {"mode": "hosted"})
    with open_memory(home) as memory:
        assert [(d.component, "api_key" in d.reason) for d in memory.degraded] == [("mem0", True)]
        assert "mem0_search" not in {tool["function"]["name"] for tool in memory.tools()}
        memory.prepare_messages("hello", [])


@pytest.mark.parametrize(
    ("setting", "value"), [("mode", "cloud"), ("infer", "maybe"), ("timeout", -1), ("context_results", 0)]
)
def test_a_bad_setting_leaves_mem0_out_naming_it(home, setting, value):
    update_provider_table(home, "mem0", {setting: value})
    with open_memory(home) as memory:
        [degradation] = memory.degraded
        assert degradation.component == "mem0" and setting in degradation.reason


def test_scope_ids_never_collide_in_mem0():
    ids = ["", "~", "%", "%7e", "alice", "alice smith", "alice%20smith", "a~b", "a\tb"]
    assert len({entity_id(value) for value in ids}) == len(ids)
    assert all(not any(ch.isspace() for ch in entity_id(value)) and entity_id(value) for value in ids)


def test_setup_keeps_the_key_in_the_env_file_and_status_finds_mem0_ready(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MNEMO_PROVIDER_MEM0_LLM_API_KEY", raising=False)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["mnemo.providers"]
    from mnemo.providers.discovery import installed_plugins

    missing = {name: target for name, target in declared.items() if name not in installed_plugins()}
    if missing:  # an editable install from before these entry points were declared
        monkeypatch.syspath_prepend(str(install_distribution(tmp_path / "site", "mnemo-local", "0.1.0", {}, missing)))
    home = tmp_path / "home"
    code = main(["--home", str(home), "providers", "setup", "mem0", "--set", "llm_base_url=http://127.0.0.1:9/v1",
                 "--set", "llm_api_key=sk-secret", "--json"])  # fmt: skip
    assert code == 0
    assert tomllib.loads((home / "config.toml").read_text())["providers"]["mem0"]["enabled"] is True
    assert "sk-secret" not in (home / "config.toml").read_text()
    assert (home / ".env").read_text() == "MNEMO_PROVIDER_MEM0_LLM_API_KEY=sk-secret\n"
    capsys.readouterr()
    assert main(["--home", str(home), "providers", "status", "--json"]) == 0
    [status] = [s for s in json.loads(capsys.readouterr().out)["providers"] if s["name"] == "mem0"]
    assert status["enabled"] and status["available"] and status["reason"] is None
