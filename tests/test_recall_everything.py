"""What the user said reaches later sessions: per-turn context, recall() and the recall tool rank the graph's
memories with the archived messages of earlier sessions, and extraction reads the archive's own record of
each session once it is over, with no help from the host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graph._support import ConceptEmbedder
from mnemo import AgentMemory, RecalledMemory, RecalledMessage
from mnemo.errors import InvalidArgument
from mnemo.recollection import recall_everything
from mnemo.storage import open_archive, open_graph

FAST = {"graph_embedder": "none", "archive_embedder": "none"}


def _say(home: Path, session: str, *turns: tuple[str, str], user: str = "ada", **settings: object) -> None:
    """One session of the agent loop the README shows: prepare_messages, turn_complete per exchange, then close()."""
    with AgentMemory.open(session, home=home, user_id=user, **{**FAST, **settings}) as memory:
        history: list[dict[str, str]] = []
        for said, reply in turns:
            memory.prepare_messages(said, history)
            memory.turn_complete(said, reply)
            history += [{"role": "user", "content": said}, {"role": "assistant", "content": reply}]


def _context(memory: AgentMemory, question: str) -> str:
    return memory.prepare_messages(question, [])[-1]["content"][len(question) :]


def _wait_for(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_what_the_user_said_reaches_the_next_sessions_context(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("By the way, my bike is a green Brompton.", "Lovely bike."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        assert "green Brompton" in _context(memory, "What colour is my bike?")


def test_context_names_the_session_a_message_was_said_in(tmp_path: Path) -> None:
    _say(tmp_path, "trip-planning", ("We fly to Lisbon on the third of May.", "Noted."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        block = _context(memory, "When do we fly to Lisbon?")
    assert "earlier session trip-planning (" in block
    assert "  - user: We fly to Lisbon on the third of May." in block


def _archived_turn(memory: AgentMemory, said: str, reply: str) -> None:
    """A turn recorded before the call returns (the archive keeps the messages handed to turn_complete)."""
    memory.prepare_messages(said, [])
    memory.turn_complete(said, reply, messages=[{"role": "user", "content": said}, {"role": "assistant", "content": reply}])


def test_the_current_sessions_messages_stay_out_of_its_context(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        _archived_turn(memory, "The staging database listens on port 6543.", "Got it.")
        assert "6543" not in _context(memory, "Which port does the staging database use?")


def test_what_compression_took_out_of_the_context_comes_back(tmp_path: Path) -> None:
    said = "The staging database listens on port 6543."
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        _archived_turn(memory, said, "Got it.")
        _archived_turn(memory, "The staging database also rotates its password weekly.", "Sure.")
        memory.before_compress([{"role": "user", "content": said}, {"role": "assistant", "content": "Got it."}], 1)
        block = _context(memory, "Which port does the staging database use?")
    assert "6543" in block
    assert "rotates its password" not in block  # after what was compressed: the model still holds it


def test_a_long_message_shows_its_best_passage_not_its_opening(tmp_path: Path) -> None:
    opening = "Here is a long story about my week. " + "We walked along the river and talked about many things. " * 8
    long_message = opening + "Most importantly, my passport expires on the ninth of June."
    _say(tmp_path, "s1", (long_message, "Thanks for sharing."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        block = _context(memory, "When does my passport expire?")
    assert "passport expires on the ninth of June" in block
    assert "Here is a long story" not in block


def test_tool_output_is_never_recalled_into_context(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        turn = [
            {"role": "user", "content": "Read the release notes please."},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Release notes: the zebra migration ships on Friday."},
            {"role": "assistant", "content": "Done reading."},
        ]
        memory.turn_complete("Read the release notes please.", "Done reading.", messages=turn)
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        assert "zebra" not in _context(memory, "When does the zebra migration ship?")


def test_a_reply_that_only_called_tools_is_not_recalled(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        call = {"id": "c1", "type": "function", "function": {"name": "memory", "arguments": '{"content": "okapi notes"}'}}
        turn = [
            {"role": "user", "content": "Keep my okapi notes."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "saved"},
            {"role": "assistant", "content": "Saved."},
        ]
        memory.turn_complete("Keep my okapi notes.", "Saved.", messages=turn)
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        found = [item for item in memory.recall("okapi notes") if isinstance(item, RecalledMessage)]
    assert found and all(item.passage for item in found)


def test_context_stays_within_the_character_budget(tmp_path: Path) -> None:
    turns = [(f"Note {i}: the orchard project uses pear trees of kind {i} in row {i}.", "Noted.") for i in range(60)]
    _say(tmp_path, "s1", *turns, graph_context_chars=400)
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", graph_context_chars=400, **FAST) as memory:
        block = _context(memory, "Which pear trees does the orchard project use?")
    lines = [line for line in block.splitlines() if line.startswith(("- ", "  - "))]
    assert lines
    assert sum(len(line) + 1 for line in lines) <= 400


def test_a_newer_statement_is_shown_before_the_one_it_updates(tmp_path: Path) -> None:
    _say(tmp_path, "first", ("The staging server runs on port 6543.", "Noted."))
    time.sleep(1.1)  # a later second, so the two sessions are told apart by their dates
    _say(tmp_path, "second", ("Update: the staging server now runs on port 7000.", "Noted."))
    with AgentMemory.open("third", home=tmp_path, user_id="ada", **FAST) as memory:
        block = _context(memory, "Which port does the staging server run on?")
    assert block.index("7000") < block.index("6543")


def test_another_users_sessions_never_reach_the_context(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("My bike is a green Brompton.", "Nice."), user="ada")
    with AgentMemory.open("s2", home=tmp_path, user_id="bob", **FAST) as memory:
        assert "Brompton" not in _context(memory, "What colour is my bike?")
        assert memory.recall("Brompton bike") == []


def test_recall_ranks_memories_and_earlier_messages_together(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("How do deploys work here?", "Deploys go out through ArgoCD every Tuesday."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        memory.remember("Deploy freezes start every December", type="fact")
        found = memory.recall("when do deploys happen?")
    kinds = {type(item) for item in found}
    assert kinds == {RecalledMemory, RecalledMessage}
    message = next(item for item in found if isinstance(item, RecalledMessage) and "ArgoCD" in item.passage)
    assert (message.session_id, message.role) == ("s1", "assistant")


def test_a_memory_extracted_from_a_message_stands_for_it(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("I'm allergic to peanuts.", "Noted."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        found = memory.recall("peanuts allergy")
    assert [type(item) for item in found] == [RecalledMemory]
    assert found[0].said_in[0].session_id == "s1"


def test_recall_with_memory_types_returns_memories_only(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("Our deploys go through ArgoCD on Tuesdays.", "Noted."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        memory.remember("Deploys need a green build first", type="fact")
        found = memory.recall("deploys", types=["fact"])
    assert found and all(isinstance(item, RecalledMemory) for item in found)


def test_recall_refuses_a_bad_limit_naming_it(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory, pytest.raises(InvalidArgument) as raised:
        memory.recall("anything", limit=0)
    assert raised.value.field == "limit"


def test_the_recall_tool_returns_earlier_messages_as_kind_message(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("Which bakery opens earliest?", "Rosa's Bakery on Elm Street opens at seven."))
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **FAST) as memory:
        result = json.loads(memory.handle_tool_call("recall", {"query": "when does the bakery open"}))
    messages = [item for item in result["results"] if item.get("kind") == "message"]
    assert result["success"]
    assert {(m["session_id"], m["role"], m["passage"]) for m in messages} >= {
        ("s1", "assistant", "Rosa's Bakery on Elm Street opens at seven.")
    }


# -- extraction with no help from the host ------------------------------------------------------------


def _memories(home: Path, user: str = "ada") -> list[str]:
    with AgentMemory.open("inspect", home=home, user_id=user, **FAST) as memory:
        return [m.content for m in memory._graph().memories()]


def test_closing_extracts_the_session_from_the_archive(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("I love hiking in the Alps every summer.", "Sounds great."))
    assert any("hiking" in content for content in _memories(tmp_path))


def test_switching_sessions_extracts_the_one_left(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        memory.turn_complete("I love hiking in the Alps every summer.", "Sounds great.")
        memory.switch_session("s2")
        graph = memory._graph()
        assert _wait_for(lambda: any("hiking" in m.content for m in graph.memories()))


def test_each_message_is_extracted_once(tmp_path: Path) -> None:
    _say(tmp_path, "s1", ("I love hiking in the Alps every summer.", "Sounds great."))
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        memory.end_session([{"role": "user", "content": "I love hiking in the Alps every summer."}])
    assert sum("hiking" in content for content in _memories(tmp_path)) == 1


def test_messages_the_host_hands_over_count_where_the_archive_lacks_them(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        memory.end_session([{"role": "user", "content": "I prefer green tea over coffee in the morning."}])
    assert any("green tea" in content for content in _memories(tmp_path))


def test_a_session_whose_process_was_killed_is_extracted_on_the_next_open(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from mnemo import AgentMemory
        memory = AgentMemory.open("killed", home={str(tmp_path)!r}, user_id="ada", graph_embedder="none", archive_embedder="none")
        memory.turn_complete("I love sailing on the lake every weekend.", "Nice.")
        memory.registry.shutdown_all()  # the turn is on disk; now die without ending the session
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    child = subprocess.run([sys.executable, "-c", script], env={**os.environ}, timeout=120)
    assert child.returncode == -signal.SIGKILL
    with AgentMemory.open("next", home=tmp_path, user_id="ada", **FAST) as memory:
        graph = memory._graph()
        assert _wait_for(lambda: any("sailing" in m.content for m in graph.memories()))


def test_recall_puts_the_newer_of_two_disagreeing_messages_first_and_keeps_the_earlier(tmp_path: Path) -> None:
    # Questions, so extraction keeps no memory and what recall ranks is the two archived messages.
    _say(tmp_path, "first", ("Why does the backup job on the NAS start at 2am every night?", "Cron."))
    time.sleep(1.1)
    _say(tmp_path, "second", ("Why does the backup job on the NAS start at 4am every night now?", "Cron."))
    with AgentMemory.open("third", home=tmp_path, user_id="ada", **FAST) as memory:
        found = [item.passage for item in memory.recall("backup job NAS 2am") if isinstance(item, RecalledMessage)]
        searched = memory.search_sessions("backup 2am")
    assert [("4am" in passage, "2am" in passage) for passage in found[:2]] == [(True, False), (False, True)]
    assert "first" in [hits.root.id for hits in searched]  # the earlier one is still found by search


def test_the_side_whose_nearest_item_is_nearer_in_meaning_leads_the_merged_ranking(tmp_path: Path) -> None:
    path = tmp_path / "mnemo.db"
    with open_graph(path, embedder=ConceptEmbedder()) as graph, open_archive(path, embedder=ConceptEmbedder()) as archive:
        graph.remember("The hound slept in the sedan")  # half about dogs: a fragment of what was said
        session = archive.start_session()
        archive.append_many(session, [{"role": "user", "content": "My puppy is a good dog"}])
        archive.embed_pending()
        found = recall_everything(graph, archive, "canine", limit=2)
    assert [type(item) for item in found] == [RecalledMessage, RecalledMemory]


def test_recalled_items_carry_their_similarity_to_the_query(tmp_path: Path) -> None:
    path = tmp_path / "mnemo.db"
    with open_graph(path, embedder=ConceptEmbedder()) as graph, open_archive(path, embedder=ConceptEmbedder()) as archive:
        graph.remember("The hound slept in the sedan")
        session = archive.start_session()
        archive.append_many(session, [{"role": "user", "content": "My puppy is a good dog"}])
        archive.embed_pending()
        found = recall_everything(graph, archive, "canine", limit=2)
    similarity = {type(item): item.similarity for item in found}
    assert similarity[RecalledMessage] == pytest.approx(1.0, abs=1e-3)
    assert similarity[RecalledMemory] == pytest.approx(0.5**0.5, abs=1e-3)
