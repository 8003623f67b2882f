"""The session_search tool and the archive as a MemoryProvider."""

from __future__ import annotations

import json

import pytest

from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.providers import ArchiveProvider
from mnemo.tools.session_search import SESSION_SEARCH_TOOL_SCHEMA, handle_session_search

from .conftest import conversation


def call(archive, current=None, **arguments) -> dict:
    return json.loads(handle_session_search(archive, arguments, current_session_id=current))


def test_discover_returns_ranked_sessions_with_snippets_and_context(archive):
    sid, ids = conversation(archive, ["hello", "the nginx certificate expires friday", "ok"], session_id="s1")
    result = call(archive, action="discover", query="nginx certificate")
    assert result["success"] and result["count"] == 1
    [session] = result["sessions"]
    assert session["session"]["id"] == sid
    [hit] = session["hits"]
    assert "**nginx**" in hit["snippet"]
    assert [m["id"] for m in hit["context"]] == ids


def test_a_query_without_action_discovers_and_no_query_browses(archive):
    conversation(archive, ["terraform plan output"], session_id="s1")
    assert "sessions" in call(archive, query="terraform") and call(archive, query="terraform")["count"] == 1
    browsed = call(archive)
    assert [s["id"] for s in browsed["sessions"]] == ["s1"]


def test_arguments_may_arrive_as_a_json_string(archive):
    conversation(archive, ["terraform plan output"])
    assert json.loads(handle_session_search(archive, '{"query": "terraform"}'))["count"] == 1


def test_read_shows_a_short_session_whole(archive):
    sid, ids = conversation(archive, ["one", "two", "three"])
    result = call(archive, action="read", session_id=sid)
    assert [m["id"] for m in result["messages"]] == ids


def test_read_shows_a_long_session_as_head_and_tail_with_a_hint(archive):
    sid, ids = conversation(archive, [f"message number {n}" for n in range(100)])
    result = call(archive, action="read", session_id=sid)
    assert result["head"][0]["id"] == ids[0] and result["tail"][-1]["id"] == ids[-1]
    assert result["omitted"] == 100 - len(result["head"]) - len(result["tail"])
    assert "scroll" in result["hint"]


def test_scroll_shows_a_window_around_a_message(archive):
    sid, ids = conversation(archive, [f"m{n}" for n in range(20)])
    result = call(archive, action="scroll", message_id=ids[10], window=2)
    assert [m["id"] for m in result["messages"]] == ids[8:13]
    assert result["session_id"] == sid


def test_browse_lists_recent_sessions_excluding_the_current_one(archive):
    archive.start_session("old", started_at="2026-01-01")
    archive.start_session("current", started_at="2026-02-01")
    result = call(archive, current="current", action="browse")
    assert [s["id"] for s in result["sessions"]] == ["old"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"action": "summon"}, "action"),
        ({"action": "discover"}, "query"),
        ({"action": "read"}, "session_id"),
        ({"action": "read", "session_id": "missing"}, "session_id"),
        ({"action": "scroll"}, "message_id"),
        ({"action": "scroll", "message_id": 99999}, "message_id"),
        ({"action": "scroll", "message_id": "7"}, "message_id"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": "5"}, "limit"),
        ({"query": "x", "role": "wizard"}, "role"),
        ({"query": "x", "sort": "random"}, "sort"),
        ({"query": "x", "since": "last tuesday"}, "since"),
        ({"query": "x", "window": 99}, "window"),
        ({"query": 42}, "query"),
    ],
)
def test_refusals_name_the_bad_argument(archive, arguments, field):
    result = call(archive, **arguments)
    assert result["success"] is False
    assert result["field"] == field
    assert field in result["error"]


def test_non_object_arguments_are_refused(archive):
    result = json.loads(handle_session_search(archive, "[1, 2]"))
    assert result["success"] is False and result["field"] == "arguments"


def test_schema_is_an_openai_function():
    assert SESSION_SEARCH_TOOL_SCHEMA["type"] == "function"
    function = SESSION_SEARCH_TOOL_SCHEMA["function"]
    assert function["name"] == "session_search"
    assert function["parameters"]["type"] == "object"
    assert "discover" in function["parameters"]["properties"]["action"]["enum"]


# -- provider --------------------------------------------------------------------------------------


@pytest.fixture
def provider(tmp_path):
    opened = ArchiveProvider(path=tmp_path / "state.db")
    yield opened
    opened.shutdown()


def test_provider_declares_its_tool_and_adds_no_turn_context(provider):
    provider.initialize("session-1", {})
    capabilities = provider.capabilities()
    assert provider.name == "archive" and provider.is_available()
    assert capabilities["tool_names"] == {"session_search"}
    assert capabilities["tool_schemas"] == [SESSION_SEARCH_TOOL_SCHEMA]
    assert capabilities["suppresses_local_writes"] is False
    assert provider.enrich_turn("hello", []) is None


def test_provider_conforms_to_the_memory_provider_protocol(provider):
    providers = pytest.importorskip("mnemo.providers")
    assert isinstance(provider, providers.MemoryProvider)


def test_initialize_starts_or_continues_the_session(provider):
    provider.initialize("session-1", {"source": "gateway", "model": "m1"})
    provider.on_turn_complete("first question", "first answer")
    provider.initialize("session-1", {})
    provider.on_turn_complete("second question", "second answer")
    info = provider.archive.get_session("session-1")
    assert info.source == "gateway" and info.message_count == 4


def test_turns_are_recorded_and_found_from_the_next_session(provider):
    provider.initialize("monday", {})
    provider.on_turn_complete("how do I rotate the vault token?", "Run vault token renew.")
    provider.initialize("tuesday", {})
    result = json.loads(provider.handle_tool_call("session_search", {"query": "vault token"}))
    assert [s["session"]["id"] for s in result["sessions"]] == ["monday"]


def test_the_current_session_and_its_lineage_are_excluded_from_tool_results(provider):
    provider.initialize("root", {})
    provider.on_turn_complete("the vault token leaked", "rotate it now")
    provider.initialize("split", {"parent_session_id": "root"})
    provider.on_turn_complete("vault token rotated", "good")
    result = json.loads(provider.handle_tool_call("session_search", {"query": "vault token"}))
    assert result["count"] == 0


def test_record_messages_keeps_tool_calls(provider):
    provider.initialize("s", {})
    provider.record_messages(None, [
        {"role": "user", "content": "list pods"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "kubectl", "arguments": '{"args": "get pods"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "api-7f9 Running"},
    ])
    stored = provider.archive.messages("s")
    assert stored[1].tool_calls[0]["function"]["name"] == "kubectl"
    assert stored[2].tool_name == "kubectl"


def test_unknown_tool_names_are_refused(provider):
    provider.initialize("s", {})
    result = json.loads(provider.handle_tool_call("memory", {}))
    assert result["success"] is False


def test_shutdown_is_idempotent_and_closes_only_what_it_opened(tmp_path, provider):
    provider.initialize("s", {})
    opened = provider.archive
    provider.shutdown()
    provider.shutdown()
    assert opened.closed
    with SessionArchive(tmp_path / "borrowed.db") as borrowed:
        lender = ArchiveProvider(borrowed)
        lender.initialize("s", {})
        lender.shutdown()
        assert not borrowed.closed


def test_hooks_after_shutdown_do_nothing(provider):
    provider.initialize("s", {})
    provider.shutdown()
    provider.on_turn_complete("late", "reply")
    assert json.loads(provider.handle_tool_call("session_search", {"query": "late"}))["success"] is False


def test_provider_accepts_the_database_path_positionally(tmp_path):
    provider = ArchiveProvider(tmp_path / "state.db")
    provider.initialize("s", {})
    assert provider.archive.path == tmp_path / "state.db"
    provider.shutdown()
    assert provider.archive.closed


# -- optional summaries ----------------------------------------------------------------------------


def test_no_summary_and_no_model_call_by_default(archive):
    conversation(archive, ["the nginx certificate expires friday"])
    assert "summary" not in call(archive, query="nginx certificate")


def test_a_configured_model_adds_a_summary_beside_the_raw_messages(archive):
    from mnemo.llm import ScriptedLLM

    conversation(archive, ["the nginx certificate expires friday", "I will renew it thursday"])
    model = ScriptedLLM(["You planned to renew the nginx certificate on Thursday."])
    result = json.loads(handle_session_search(archive, {"query": "nginx certificate"}, summarizer=model))
    assert result["summary"] == "You planned to renew the nginx certificate on Thursday."
    assert result["sessions"][0]["hits"][0]["snippet"]
    prompt = model.requests[0].messages[-1]["content"]
    assert "nginx certificate" in prompt and "expires friday" in prompt


def test_a_failing_model_still_returns_the_matches(archive):
    from mnemo.llm import ScriptedLLM

    conversation(archive, ["the nginx certificate expires friday"])
    result = json.loads(handle_session_search(archive, {"query": "nginx"}, summarizer=ScriptedLLM([])))
    assert result["success"] and result["count"] == 1
    assert "summary" not in result and "no summary" in result["summary_error"]


def test_summarize_in_config_without_a_model_configured_leaves_summaries_off(tmp_path, monkeypatch):
    for name in ("MNEMO_LLM_BASE_URL", "MNEMO_LLM_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    provider = ArchiveProvider(tmp_path / "state.db")
    provider.initialize("earlier", {"summarize": True, "home": str(tmp_path)})
    provider.on_turn_complete("is the nginx certificate renewed?", "yes, on thursday")
    provider.initialize("now", {"summarize": True, "home": str(tmp_path)})
    result = json.loads(provider.handle_tool_call("session_search", {"query": "nginx"}))
    assert result["count"] == 1 and "summary" not in result and "summary_error" not in result
    provider.shutdown()


@pytest.mark.parametrize("module", ["mnemo.tools.session_search", "mnemo.archive", "mnemo.providers.archive"])
def test_modules_import_in_any_order(module):
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
