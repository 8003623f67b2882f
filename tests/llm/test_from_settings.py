"""OpenAICompatibleLLM.from_settings: mnemo settings first, OPENAI_* environment only for what they leave unset."""

import pytest

from mnemo.config import load_settings
from mnemo.llm import NO_API_KEY, LLMNotConfigured, OpenAICompatibleLLM
from support.openai_server import Reply

USER = [{"role": "user", "content": "hello"}]


def settings(tmp_path, **overrides):
    return load_settings(tmp_path, environ={}, **overrides)


def test_base_url_model_key_and_timeout_come_from_mnemo_settings(tmp_path):
    llm = OpenAICompatibleLLM.from_settings(
        settings(tmp_path, llm_base_url="http://127.0.0.1:8080/v1", llm_model="local-model",
                 llm_api_key="sk-mnemo", llm_timeout=12.5),
        environ={"OPENAI_BASE_URL": "http://other.invalid/v1", "OPENAI_API_KEY": "sk-env"},
    )
    assert (llm.base_url, llm.model, llm.timeout) == ("http://127.0.0.1:8080/v1", "local-model", 12.5)


def test_mnemo_api_key_wins_over_the_environment_on_the_wire(tmp_path, server):
    server.enqueue(Reply.text("ok"))
    llm = OpenAICompatibleLLM.from_settings(
        settings(tmp_path, llm_base_url=server.base_url, llm_model="m", llm_api_key="sk-mnemo"),
        environ={"OPENAI_API_KEY": "sk-env"}, max_retries=0,
    )
    llm.complete(USER)
    assert server.headers[0]["authorization"] == "Bearer sk-mnemo"


def test_openai_environment_fills_in_an_unset_endpoint_and_key(tmp_path, server):
    server.enqueue(Reply.text("ok"))
    llm = OpenAICompatibleLLM.from_settings(
        settings(tmp_path, llm_model="m"),
        environ={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-env"}, max_retries=0,
    )
    assert llm.complete(USER).content == "ok"
    assert server.headers[0]["authorization"] == "Bearer sk-env"


def test_the_process_environment_is_the_default_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    llm = OpenAICompatibleLLM.from_settings(settings(tmp_path, llm_model="m"))
    assert llm.base_url == "http://127.0.0.1:11434/v1"


def test_settings_from_mnemo_environment_variables_are_used(tmp_path):
    loaded = load_settings(tmp_path, environ={"MNEMO_LLM_BASE_URL": "http://127.0.0.1:1234/v1",
                                              "MNEMO_LLM_MODEL": "qwen"})
    llm = OpenAICompatibleLLM.from_settings(loaded, environ={})
    assert (llm.base_url, llm.model) == ("http://127.0.0.1:1234/v1", "qwen")


def test_no_key_anywhere_sends_the_placeholder(tmp_path, server):
    server.enqueue(Reply.text("ok"))
    llm = OpenAICompatibleLLM.from_settings(settings(tmp_path, llm_base_url=server.base_url, llm_model="m"),
                                            environ={}, max_retries=0)
    llm.complete(USER)
    assert server.headers[0]["authorization"] == f"Bearer {NO_API_KEY}"


def test_a_missing_endpoint_is_not_configured_and_says_how_to_set_it(tmp_path):
    with pytest.raises(LLMNotConfigured, match="llm_base_url.*OPENAI_BASE_URL"):
        OpenAICompatibleLLM.from_settings(settings(tmp_path, llm_model="m"), environ={})


def test_a_missing_model_is_not_configured_even_with_an_endpoint(tmp_path):
    with pytest.raises(LLMNotConfigured, match="llm_model") as caught:
        OpenAICompatibleLLM.from_settings(settings(tmp_path), environ={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
    assert "llm_base_url" not in str(caught.value)


def test_nothing_configured_names_both_missing_settings(tmp_path):
    with pytest.raises(LLMNotConfigured, match="llm_base_url.*llm_model"):
        OpenAICompatibleLLM.from_settings(settings(tmp_path), environ={})


def test_constructor_options_are_passed_through(tmp_path):
    llm = OpenAICompatibleLLM.from_settings(settings(tmp_path, llm_base_url="http://127.0.0.1:1/v1", llm_model="m"),
                                            environ={}, max_retries=3)
    assert llm.max_retries == 3
