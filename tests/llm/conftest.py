"""Fixtures for the LLM tests: a real chat-completions server on loopback, and a client pointed at it."""

from collections.abc import Iterator

import pytest

from mnemo.llm import OpenAICompatibleLLM
from support.openai_server import OpenAIServer


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def llm(server: OpenAIServer) -> Iterator[OpenAICompatibleLLM]:
    # No retries: each test scripts exactly the answers it expects to be asked for.
    with OpenAICompatibleLLM(server.base_url, "test-model", timeout=10, max_retries=0) as client:
        yield client
