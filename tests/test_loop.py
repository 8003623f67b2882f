"""The agent loop end to end: a model (scripted, or a real HTTP client against a local
chat-completions server), tool calls through AgentMemory, and memory that survives the session."""

from __future__ import annotations

import asyncio
import json

import pytest

from mnemo import AgentMemory, Conversation, OpenAICompatibleLLM, ScriptedLLM, ScriptedToolCall
from mnemo.loop import ToolLoopExceeded
from mnemo.providers import BaseProvider
from mnemo.safety import MEMORY_CONTEXT_TAG
from support.openai_server import OpenAIServer, Reply


class Recaller(BaseProvider):
    name = "recaller"

    def enrich_turn(self, user_message, messages):
        return "User's cat is called Miso."


def _memory(tmp_path, *providers):
    return AgentMemory.open("loop", tmp_path, providers=providers, archive_enabled=False, graph_enabled=False)


def _add(target: str, content: str) -> ScriptedToolCall:
    return ScriptedToolCall("memory", {"target": target, "action": "add", "content": content})


def test_a_tool_call_round_trip_ends_in_the_model_reply(tmp_path):
    llm = ScriptedLLM([[_add("user", "Name: Ada")], "Hi Ada!"])
    with _memory(tmp_path) as memory:
        turn = Conversation(memory, llm).send("I'm Ada.")
        assert memory.store.entries("user") == ("Name: Ada",)
    assert turn.reply == "Hi Ada!"
    assert [event.name for event in turn.tool_events] == ["memory"]
    assert json.loads(turn.tool_events[0].result)["success"] is True


def test_a_curated_edit_is_recorded_in_history_with_the_models_tool_call_id(tmp_path):
    llm = ScriptedLLM([[_add("user", "Name: Ada")], "Hi Ada!"])
    with _memory(tmp_path) as memory:
        Conversation(memory, llm).send("I'm Ada.")
        (record,) = memory.store.history.records("user")
    assert record.origin["via"] == "tool" and record.origin["session_id"] == "loop"
    assert record.origin["tool_call_id"].startswith("call")


def test_the_model_sees_the_tool_result_in_its_next_call(tmp_path):
    llm = ScriptedLLM([[_add("user", "Name: Ada")], "ok"])
    with _memory(tmp_path) as memory:
        Conversation(memory, llm).send("I'm Ada.")
    second = llm.requests[1].messages
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["function"]["name"] == "memory"
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"])["success"] is True


def test_stored_history_never_carries_the_memory_context(tmp_path):
    llm = ScriptedLLM(["Miso, I believe."])
    with _memory(tmp_path, Recaller()) as memory:
        conversation = Conversation(memory, llm)
        turn = conversation.send("What's my cat called?")
    assert MEMORY_CONTEXT_TAG in llm.requests[0].messages[-1]["content"]
    assert MEMORY_CONTEXT_TAG in turn.api_messages[-1]["content"]
    assert conversation.history == [
        {"role": "user", "content": "What's my cat called?"},
        {"role": "assistant", "content": "Miso, I believe."},
    ]


def test_an_echoed_fence_is_scrubbed_from_the_reply(tmp_path):
    echoed = f"Sure.<{MEMORY_CONTEXT_TAG}>secret recall</{MEMORY_CONTEXT_TAG}> Done."
    with _memory(tmp_path) as memory:
        turn = Conversation(memory, ScriptedLLM([echoed])).send("hi")
    assert turn.reply == "Sure. Done."


def test_system_message_is_the_same_on_every_call_of_the_session(tmp_path):
    llm = ScriptedLLM([[_add("memory", "Repo uses uv")], "noted", "still here"])
    with _memory(tmp_path) as memory:
        conversation = Conversation(memory, llm)
        conversation.send("we use uv")
        conversation.send("anything else?")
    systems = {request.messages[0]["content"] for request in llm.requests}
    assert len(systems) == 1 and "Repo uses uv" not in systems.pop()


def test_a_model_that_never_stops_calling_tools_is_cut_off(tmp_path):
    llm = ScriptedLLM([[_add("memory", f"fact {i}")] for i in range(3)])
    with _memory(tmp_path) as memory, pytest.raises(ToolLoopExceeded):
        Conversation(memory, llm, max_tool_rounds=3).send("go")


def test_async_send_runs_the_same_turn(tmp_path):
    llm = ScriptedLLM([[_add("user", "Prefers tabs")], "Tabs it is."])
    with _memory(tmp_path) as memory:
        turn = asyncio.run(Conversation(memory, llm).asend("I use tabs"))
        assert memory.store.entries("user") == ("Prefers tabs",)
    assert turn.reply == "Tabs it is."


def test_memory_survives_into_the_next_session_over_real_http(tmp_path):
    replies = [
        Reply.tool_calls(("memory", {"target": "user", "action": "add", "content": "Name: Ada"})),
        Reply.text("Nice to meet you, Ada."),
        Reply.text("You're Ada."),
    ]
    with OpenAIServer(replies) as server, OpenAICompatibleLLM(server.base_url, "test-model", max_retries=0) as llm:
        with _memory(tmp_path) as memory:
            first = Conversation(memory, llm).send("I'm Ada.")
        with _memory(tmp_path, Recaller()) as memory:
            second = Conversation(memory, llm).send("Who am I?")
        sent = server.requests
    assert first.reply == "Nice to meet you, Ada." and second.reply == "You're Ada."
    assert [tool["function"]["name"] for tool in sent[0]["tools"]] == ["memory"]
    assert sent[1]["messages"][-1]["role"] == "tool"
    assert "Name: Ada" in sent[2]["messages"][0]["content"]
    assert MEMORY_CONTEXT_TAG in sent[2]["messages"][-1]["content"]
