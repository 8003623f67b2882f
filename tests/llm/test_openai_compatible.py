"""OpenAICompatibleLLM against a real local chat-completions server: what goes on the wire, what comes back."""

import asyncio
import gc
import json
import time

import pytest

from mnemo.errors import InvalidArgument, MnemoError
from mnemo.llm import LLM, NO_API_KEY, ChatResponse, LLMError, OpenAICompatibleLLM, ToolCall
from support.openai_server import OpenAIServer, Reply

USER = [{"role": "user", "content": "What is my favourite colour?"}]
MEMORY_TOOL = {
    "type": "function",
    "function": {
        "name": "memory",
        "description": "Save or recall durable notes.",
        "parameters": {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]},
    },
}


def test_the_client_satisfies_the_llm_protocol(llm):
    assert isinstance(llm, LLM)


def test_a_plain_reply_becomes_text_with_stop_and_usage(server, llm):
    server.enqueue(Reply.text("Blue, you told me last week.", usage={"prompt_tokens": 7, "completion_tokens": 6,
                                                                     "total_tokens": 13}))
    response = llm.complete(USER)
    assert response == ChatResponse(
        content="Blue, you told me last week.",
        tool_calls=(),
        finish_reason="stop",
        usage={"prompt_tokens": 7, "completion_tokens": 6, "total_tokens": 13},
    )


def test_tool_calls_are_parsed_with_ids_names_and_raw_json_arguments(server, llm):
    server.enqueue(Reply.tool_calls(("memory", {"action": "add", "content": "likes blue"}),
                                    ("session_search", {"query": "colour"})))
    response = llm.complete(USER, tools=[MEMORY_TOOL])
    assert response.finish_reason == "tool_calls"
    assert [(call.name, json.loads(call.arguments)) for call in response.tool_calls] == [
        ("memory", {"action": "add", "content": "likes blue"}),
        ("session_search", {"query": "colour"}),
    ]
    assert all(isinstance(call, ToolCall) and call.id.startswith("call_") for call in response.tool_calls)
    assert len({call.id for call in response.tool_calls}) == 2


def test_malformed_tool_arguments_are_passed_through_verbatim_for_the_tool_boundary_to_judge(server, llm):
    server.enqueue(Reply.tool_calls(("memory", '{"action": "add", ')))
    (call,) = llm.complete(USER, tools=[MEMORY_TOOL]).tool_calls
    assert call.arguments == '{"action": "add", '


def test_the_assistant_message_round_trips_through_the_server(server, llm):
    server.enqueue(Reply.tool_calls(("memory", {"action": "read"})), Reply.text("Done."))
    first = llm.complete(USER, tools=[MEMORY_TOOL])
    call = first.tool_calls[0]
    history = [*USER, first.to_message(),
               {"role": "tool", "tool_call_id": call.id, "content": '{"success": true}'}]
    llm.complete(history, tools=[MEMORY_TOOL])
    sent = server.requests[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": "memory", "arguments": '{"action": "read"}'}}]}
    assert sent[2]["tool_call_id"] == call.id


def test_model_messages_and_tools_are_sent_on_the_wire(server, llm):
    server.enqueue(Reply.text("ok"))
    llm.complete(USER, tools=[MEMORY_TOOL])
    (body,) = server.requests
    assert body["model"] == "test-model"
    assert body["messages"] == USER
    assert body["tools"] == [MEMORY_TOOL]


def test_no_tools_field_is_sent_when_there_are_no_tools(server, llm):
    server.enqueue(Reply.text("ok"), Reply.text("ok"))
    llm.complete(USER)
    llm.complete(USER, tools=[])
    assert all("tools" not in body for body in server.requests)


def test_request_options_are_added_to_every_request_body(server):
    server.enqueue(Reply.text("ok"))
    client = OpenAICompatibleLLM(server.base_url, "test-model", max_retries=0,
                                 request_options={"temperature": 0, "max_tokens": 64})
    client.complete(USER)
    assert server.requests[0]["temperature"] == 0
    assert server.requests[0]["max_tokens"] == 64


def test_the_caller_messages_are_not_mutated(server, llm):
    server.enqueue(Reply.text("ok"))
    history = [{"role": "user", "content": "hi"}]
    snapshot = json.loads(json.dumps(history))
    llm.complete(history)
    assert history == snapshot


def test_the_api_key_is_sent_as_a_bearer_token_and_kept_out_of_the_repr(server):
    server.enqueue(Reply.text("ok"))
    client = OpenAICompatibleLLM(server.base_url, "test-model", api_key="sk-secret", max_retries=0)
    client.complete(USER)
    assert server.headers[0]["authorization"] == "Bearer sk-secret"
    assert "sk-secret" not in repr(client)


def test_without_a_key_a_placeholder_is_sent_and_no_environment_key_is_read(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.enqueue(Reply.text("ok"))
    OpenAICompatibleLLM(server.base_url, "test-model", max_retries=0).complete(USER)
    assert server.headers[0]["authorization"] == f"Bearer {NO_API_KEY}"


def test_acomplete_returns_the_same_response_as_complete(server, llm):
    server.enqueue(Reply.tool_calls(("memory", {"action": "read"})))
    response = asyncio.run(llm.acomplete(USER, tools=[MEMORY_TOOL]))
    assert response.tool_calls[0].name == "memory"
    assert server.requests[0]["tools"] == [MEMORY_TOOL]


def test_acomplete_works_across_successive_event_loops(server, llm):
    server.enqueue(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    answers = [asyncio.run(llm.acomplete(USER)).content for _ in range(3)]
    assert answers == ["one", "two", "three"]


def test_successive_event_loops_leave_no_connection_to_close_from_the_wrong_loop(server, llm, caplog):
    server.handler = lambda body: Reply.text("ok")

    async def ask_and_collect():
        # Collecting garbage inside a live loop is where a client of a finished loop would fail to close.
        gc.collect()
        return await llm.acomplete(USER)

    for _ in range(4):
        asyncio.run(ask_and_collect())
    gc.collect()
    assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []


def test_aclose_then_acomplete_in_the_same_loop_opens_a_fresh_client(server, llm):
    server.handler = lambda body: Reply.text("ok")

    async def run():
        await llm.acomplete(USER)
        await llm.aclose()
        await llm.aclose()
        return await llm.acomplete(USER)

    assert asyncio.run(run()).content == "ok"


def test_concurrent_acomplete_calls_in_one_loop_all_get_answers(server, llm):
    server.handler = lambda body: Reply.text(body["messages"][-1]["content"].upper())

    async def ask_all():
        return await asyncio.gather(*(llm.acomplete([{"role": "user", "content": f"q{i}"}]) for i in range(8)))

    answers = [response.content for response in asyncio.run(ask_all())]
    assert answers == [f"Q{i}" for i in range(8)]


def test_list_models_reads_the_models_endpoint(llm):
    assert llm.list_models() == ["test-model"]


def test_construction_makes_no_request(server):
    OpenAICompatibleLLM(server.base_url, "test-model")
    assert server.requests == []


# failures


def test_http_500_becomes_llm_error_with_status_and_message(server, llm):
    server.enqueue(Reply.error(500, "The server had an error while processing your request."))
    with pytest.raises(LLMError) as caught:
        llm.complete(USER)
    assert caught.value.status_code == 500
    assert "HTTP 500" in str(caught.value)
    assert "The server had an error while processing your request." in str(caught.value)
    assert "\n" not in str(caught.value)


def test_http_401_becomes_llm_error_with_status_and_message(server, llm):
    server.enqueue(Reply.error(401, "Incorrect API key provided: no-key.", type="invalid_request_error",
                               code="invalid_api_key"))
    with pytest.raises(LLMError, match=r"HTTP 401: Incorrect API key provided: no-key\.") as caught:
        llm.complete(USER)
    assert caught.value.status_code == 401


def test_llm_errors_are_mnemo_errors_not_openai_exceptions(server, llm):
    server.enqueue(Reply.error(400, "bad request", type="invalid_request_error"))
    with pytest.raises(MnemoError) as caught:
        llm.complete(USER)
    assert type(caught.value) is LLMError
    assert not type(caught.value).__module__.startswith("openai")


def test_async_http_errors_become_llm_error_too(server, llm):
    server.enqueue(Reply.error(503, "overloaded"))
    with pytest.raises(LLMError, match="HTTP 503: overloaded"):
        asyncio.run(llm.acomplete(USER))


def test_a_non_json_error_page_is_reported_in_one_line(server, llm):
    server.enqueue(Reply.raw(502, b"<html>\n<body>Bad Gateway</body>\n</html>", content_type="text/html"))
    with pytest.raises(LLMError, match="HTTP 502: <html> <body>Bad Gateway</body> </html>"):
        llm.complete(USER)


def test_a_success_status_with_unreadable_json_becomes_llm_error(server, llm):
    server.enqueue(Reply.raw(200, b"this is not json"))
    with pytest.raises(LLMError, match="unreadable response"):
        llm.complete(USER)


def test_a_response_without_choices_becomes_llm_error(server, llm):
    server.enqueue(Reply.raw(200, b'{"id": "x", "object": "chat.completion", "choices": []}'))
    with pytest.raises(LLMError, match="no choices"):
        llm.complete(USER)


def test_a_closed_port_becomes_llm_error_quickly():
    with OpenAIServer() as stopped:
        pass
    client = OpenAICompatibleLLM(stopped.base_url, "test-model", max_retries=0)
    started = time.monotonic()
    with pytest.raises(LLMError, match="cannot reach LLM endpoint"):
        client.complete(USER)
    assert time.monotonic() - started < 2


def test_a_server_slower_than_the_timeout_becomes_llm_error_at_the_deadline(server):
    server.enqueue(Reply.text("too late", delay=5))
    client = OpenAICompatibleLLM(server.base_url, "test-model", timeout=0.3, max_retries=0)
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 0\.3s"):
        client.complete(USER)
    assert time.monotonic() - started < 2


def test_server_errors_are_retried_only_max_retries_times(server):
    # retry-after-ms keeps the openai package's backoff short so the test stays fast.
    fast = {"retry-after-ms": "10"}
    server.enqueue(Reply.error(500, "first", headers=fast), Reply.error(500, "second", headers=fast),
                   Reply.text("never reached"))
    client = OpenAICompatibleLLM(server.base_url, "test-model", max_retries=1)
    with pytest.raises(LLMError, match="HTTP 500: second"):
        client.complete(USER)
    assert len(server.requests) == 2


def test_a_retried_server_error_can_still_succeed(server):
    server.enqueue(Reply.error(503, "busy", headers={"retry-after-ms": "10"}), Reply.text("recovered"))
    client = OpenAICompatibleLLM(server.base_url, "test-model", max_retries=1)
    assert client.complete(USER).content == "recovered"


# bad input


@pytest.mark.parametrize("base_url", ["", "localhost:8080/v1", "ftp://example.com"])
def test_a_base_url_that_is_not_http_is_refused(base_url):
    with pytest.raises(InvalidArgument, match="base_url"):
        OpenAICompatibleLLM(base_url, "test-model")


@pytest.mark.parametrize(("field", "kwargs"), [
    ("model", {"model": " "}),
    ("timeout", {"timeout": 0}),
    ("max_retries", {"max_retries": -1}),
])
def test_invalid_client_settings_are_refused_naming_the_field(field, kwargs):
    arguments = {"base_url": "http://127.0.0.1:9/v1", "model": "m", **kwargs}
    with pytest.raises(InvalidArgument, match=field):
        OpenAICompatibleLLM(**arguments)


def test_empty_messages_are_refused_before_anything_is_sent(server, llm):
    with pytest.raises(InvalidArgument, match="messages"):
        llm.complete([])
    assert server.requests == []
