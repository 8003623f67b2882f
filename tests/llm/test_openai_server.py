"""The reusable test server itself speaks the protocol the official client expects (streaming included)."""

import json
import urllib.error
import urllib.request

import openai
import pytest

from support.openai_server import OpenAIServer, Reply

USER = [{"role": "user", "content": "hi"}]


def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def test_a_completion_has_the_protocol_fields(server):
    server.enqueue(Reply.text("hello"))
    with urllib.request.urlopen(urllib.request.Request(
            f"{server.base_url}/chat/completions", data=json.dumps({"model": "m", "messages": USER}).encode(),
            headers={"Content-Type": "application/json"})) as response:
        body = json.load(response)
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert isinstance(body["created"], int)
    assert body["model"] == "m"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_streamed_replies_assemble_into_text_and_tool_calls(server):
    server.enqueue(Reply.text("streamed text"), Reply.tool_calls(("memory", {"action": "read"})))
    text_chunks = list(client(server).chat.completions.create(model="m", messages=USER, stream=True))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in text_chunks) == "streamed text"
    assert text_chunks[-1].choices[0].finish_reason == "stop"
    call_chunks = list(client(server).chat.completions.create(model="m", messages=USER, stream=True))
    (call,) = [call for chunk in call_chunks for call in chunk.choices[0].delta.tool_calls or ()]
    assert (call.function.name, call.function.arguments) == ("memory", '{"action": "read"}')
    assert call_chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_handler_answers_once_the_queue_is_empty(server):
    server.enqueue(Reply.text("queued"))
    server.handler = lambda body: Reply.text(f"handled {len(body['messages'])}")
    answers = [client(server).chat.completions.create(model="m", messages=USER).choices[0].message.content
               for _ in range(2)]
    assert answers == ["queued", "handled 1"]


def test_running_out_of_replies_is_an_http_500_naming_the_request(server):
    with pytest.raises(openai.InternalServerError, match="no scripted reply left for request #1"):
        client(server).chat.completions.create(model="m", messages=USER)


def test_a_failing_handler_becomes_an_http_500(server):
    server.handler = lambda body: 1 / 0
    with pytest.raises(openai.InternalServerError, match="ZeroDivisionError"):
        client(server).chat.completions.create(model="m", messages=USER)


def test_unknown_routes_are_404(server):
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{server.base_url}/embeddings")
    assert caught.value.code == 404


def test_stop_is_idempotent_and_releases_the_port():
    server = OpenAIServer().start()
    port = server.port
    server.stop()
    server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
