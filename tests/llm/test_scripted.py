"""ScriptedLLM: a replayed script that answers exactly like a model would, tool calls included."""

import asyncio
import json
import threading

import pytest

from mnemo.errors import InvalidArgument
from mnemo.llm import LLM, ChatResponse, LLMError, ScriptedLLM, ScriptedToolCall, ScriptExhausted, ToolCall

USER = [{"role": "user", "content": "Remember that I like blue."}]


def test_scripted_llm_satisfies_the_llm_protocol():
    assert isinstance(ScriptedLLM([]), LLM)


def test_a_text_step_is_a_final_reply():
    response = ScriptedLLM(["Noted."]).complete(USER)
    assert response == ChatResponse(content="Noted.", tool_calls=(), finish_reason="stop", usage=None)


def test_a_tool_call_step_produces_real_tool_calls_with_json_arguments():
    llm = ScriptedLLM([[ScriptedToolCall("memory", {"action": "add", "content": "likes blue ✓"})]])
    response = llm.complete(USER)
    (call,) = response.tool_calls
    assert isinstance(call, ToolCall)
    assert call.name == "memory"
    assert json.loads(call.arguments) == {"action": "add", "content": "likes blue ✓"}
    assert response.content is None
    assert response.finish_reason == "tool_calls"


def test_tool_call_ids_are_unique_within_and_across_turns_and_instances():
    calls = [ScriptedToolCall("memory", {"action": "read"}), ScriptedToolCall("memory", {"action": "read"})]
    ids = []
    for _ in range(2):
        llm = ScriptedLLM([calls, calls])
        for _ in range(2):
            ids += [call.id for call in llm.complete(USER).tool_calls]
    assert len(ids) == 8
    assert len(set(ids)) == 8
    assert all(call_id.startswith("call_") for call_id in ids)


def test_a_tool_call_response_converts_to_an_assistant_history_message():
    response = ScriptedLLM([[ScriptedToolCall("memory", {"action": "read"})]]).complete(USER)
    call = response.tool_calls[0]
    assert response.to_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call.id, "type": "function",
                        "function": {"name": "memory", "arguments": '{"action": "read"}'}}],
    }


def test_a_text_response_converts_to_a_message_without_tool_calls():
    assert ScriptedLLM(["Hi."]).complete(USER).to_message() == {"role": "assistant", "content": "Hi."}


def test_a_callable_step_sees_the_messages_including_tool_results():
    def echo_recall(messages):
        return f"You told me: {json.loads(messages[-1]['content'])['entries'][0]}"

    llm = ScriptedLLM([[ScriptedToolCall("memory", {"action": "read"})], echo_recall])
    first = llm.complete(USER)
    history = [*USER, first.to_message(),
               {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": '{"entries": ["likes blue"]}'}]
    assert llm.complete(history).content == "You told me: likes blue"


def test_a_callable_step_can_answer_with_tool_calls_or_a_response():
    llm = ScriptedLLM([
        lambda messages: [ScriptedToolCall("session_search", {"query": messages[-1]["content"]})],
        lambda messages: ChatResponse(content="partial", finish_reason="length"),
    ])
    (call,) = llm.complete(USER).tool_calls
    assert json.loads(call.arguments) == {"query": "Remember that I like blue."}
    assert llm.complete(USER).finish_reason == "length"


def test_a_callable_step_cannot_mutate_the_callers_history():
    def vandal(messages):
        messages[0]["content"] = "changed"
        messages.clear()
        return "ok"

    history = [{"role": "user", "content": "original"}]
    ScriptedLLM([vandal]).complete(history)
    assert history == [{"role": "user", "content": "original"}]


def test_requests_record_what_each_call_was_sent():
    tools = [{"type": "function", "function": {"name": "memory", "parameters": {"type": "object"}}}]
    llm = ScriptedLLM(["one", "two"])
    history = list(USER)
    llm.complete(history, tools=tools)
    history.append({"role": "assistant", "content": "one"})
    llm.complete(history)
    assert [len(request.messages) for request in llm.requests] == [1, 2]
    assert llm.requests[0].tools == tools
    assert llm.requests[1].tools is None


def test_an_exhausted_script_raises_a_clear_llm_error():
    llm = ScriptedLLM(["only step"])
    llm.complete(USER)
    with pytest.raises(ScriptExhausted, match=r"no step left: call #2 after all 1 steps"):
        llm.complete(USER)
    assert issubclass(ScriptExhausted, LLMError)


def test_remaining_counts_unused_steps():
    llm = ScriptedLLM(["a", "b", "c"])
    llm.complete(USER)
    assert llm.remaining == 2


def test_acomplete_replays_the_same_script():
    llm = ScriptedLLM([[ScriptedToolCall("memory", {"action": "read"})], "done"])

    async def run():
        return [await llm.acomplete(USER), await llm.acomplete(USER)]

    first, second = asyncio.run(run())
    assert first.tool_calls[0].name == "memory"
    assert second.content == "done"


def test_concurrent_callers_each_get_a_different_step():
    llm = ScriptedLLM([str(number) for number in range(50)])
    answers, lock = [], threading.Lock()

    def worker():
        for _ in range(10):
            content = llm.complete(USER).content
            with lock:
                answers.append(content)

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers, key=int) == [str(number) for number in range(50)]


@pytest.mark.parametrize("step", [
    42,
    [],
    [{"name": "memory", "arguments": {}}],
    [ScriptedToolCall("", {})],
    [ScriptedToolCall("memory", {"when": object()})],
])
def test_malformed_steps_are_refused_when_the_script_is_built(step):
    with pytest.raises(InvalidArgument, match=r"steps\[1\]"):
        ScriptedLLM(["fine", step])


def test_a_callable_returning_nonsense_is_refused_naming_the_step():
    llm = ScriptedLLM([lambda messages: None])
    with pytest.raises(InvalidArgument, match=r"steps\[0\] result"):
        llm.complete(USER)
