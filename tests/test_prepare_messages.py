"""``prepare_messages(user_message, history)``: the current user message, and only it, carries the context,
whether or not ``history`` already ends with it."""

from __future__ import annotations

import pytest

from mnemo import AgentMemory
from mnemo.providers import BaseProvider
from mnemo.safety import MEMORY_CONTEXT_TAG


class TeamNotes(BaseProvider):
    name = "team"

    def __init__(self) -> None:
        self.seen: list[tuple[str, list]] = []

    def enrich_turn(self, user_message, messages):
        self.seen.append((user_message, list(messages)))
        return "The team deploys on Fridays."


@pytest.fixture
def memory(tmp_path):
    provider = TeamNotes()
    with AgentMemory.open("s1", tmp_path, providers=[provider], archive_enabled=False, graph_enabled=False) as opened:
        opened.notes = provider
        yield opened


def _carriers(api):
    return [i for i, m in enumerate(api) if MEMORY_CONTEXT_TAG in str(m.get("content"))]


def test_history_ending_with_the_current_message_gets_the_context_on_that_message(memory):
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
               {"role": "user", "content": "deploy day?"}]  # fmt: skip
    api = memory.prepare_messages("deploy day?", history)
    assert len(api) == 3 and _carriers(api) == [2]
    assert api[2]["content"].startswith("deploy day?")


def test_history_without_the_current_message_gets_it_appended_with_the_context(memory):
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    api = memory.prepare_messages("deploy day?", history)
    assert api[:2] == history
    assert api[2]["role"] == "user" and api[2]["content"].startswith("deploy day?")
    assert _carriers(api) == [2]


def test_an_older_user_message_never_carries_the_context(memory):
    # The history ends with a different user message (say, one left unanswered): it is not the current one.
    history = [{"role": "user", "content": "are you there?"}]
    api = memory.prepare_messages("deploy day?", history)
    assert api[0] == {"role": "user", "content": "are you there?"}
    assert _carriers(api) == [1] and api[1]["content"].startswith("deploy day?")


def test_an_empty_history_becomes_the_current_message_alone(memory):
    api = memory.prepare_messages("deploy day?", [])
    assert len(api) == 1 and _carriers(api) == [0]


def test_the_history_is_never_modified(memory):
    history = [{"role": "user", "content": "hello"}]
    memory.prepare_messages("deploy day?", history)
    memory.prepare_messages("hello", history)
    assert history == [{"role": "user", "content": "hello"}]


def test_providers_see_the_history_ending_with_the_current_message(memory):
    memory.prepare_messages("deploy day?", [{"role": "assistant", "content": "hi"}])
    user_message, seen = memory.notes.seen[-1]
    assert user_message == "deploy day?" and seen[-1] == {"role": "user", "content": "deploy day?"}


def test_without_context_the_current_message_is_still_appended(tmp_path):
    with AgentMemory.open("s1", tmp_path, archive_enabled=False, graph_enabled=False) as memory:
        api = memory.prepare_messages("deploy day?", [{"role": "assistant", "content": "hi"}])
    assert api == [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "deploy day?"}]
