"""Tool output and what was said are searched apart by the vector channel, on both engines: a tool-using
agent's results, often many and near the user's words, never take the places of the spoken messages recall
asks for, and a search of every role, or of tool output alone, still finds them by meaning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graph._support import ConceptEmbedder
from mnemo.archive import Archive
from mnemo.storage import open_archive

# More tool results than a search takes candidates, each nearer to "canine" than what the user said.
TOOL_RESULTS = 150
SAID = "The hound slept in the sedan"


@pytest.fixture
def agent_archive(archive_target: str | Path) -> Iterator[Archive]:
    with open_archive(archive_target, embedder=ConceptEmbedder()) as archive:
        session = archive.start_session()
        results = [{"role": "tool", "tool_call_id": f"c{n}", "content": f"dog number {n}"} for n in range(TOOL_RESULTS)]
        archive.append_many(session, [*results, {"role": "user", "content": SAID}])
        archive.embed_pending()
        yield archive


def test_tool_output_nearer_the_query_does_not_crowd_what_was_said_out_of_a_search_for_it(agent_archive):
    hits = agent_archive.search_messages("canine", role=["user", "assistant"])
    assert [hit.message.content for hit in hits] == [SAID]


def test_a_search_of_every_role_finds_tool_output_and_what_was_said_by_meaning(agent_archive):
    roles = {hit.message.role for hit in agent_archive.search_messages("canine", limit=200)}
    assert roles == {"tool", "user"}


def test_a_search_for_tool_output_alone_finds_it_by_meaning(agent_archive):
    hits = agent_archive.search_messages("canine", role="tool", limit=5)
    assert [hit.message.role for hit in hits] == ["tool"] * 5
