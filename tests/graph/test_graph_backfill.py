"""Back-filling the graph from archived sessions: `mnemo graph extract`, resumable and idempotent."""

from __future__ import annotations

import json

import pytest

from mnemo.config import load_settings
from mnemo.errors import InvalidArgument
from mnemo.graph import MemoryType, Scope
from mnemo.graph.backfill import archived_sessions, backfill, pending_messages
from mnemo.graph.extraction import source_messages
from mnemo.graph.recalled import recall_memories
from mnemo.storage import open_archive, open_graph

SESSIONS = {
    "monday": [
        {"role": "user", "content": "I prefer dark roast coffee in the morning."},
        {"role": "assistant", "content": "Good to know."},
        {"role": "user", "content": "We decided to move the standup to ten o'clock."},
    ],
    "tuesday": [
        {"role": "user", "content": "Remind me to renew the passport before June."},
        {"role": "user", "content": "My sister lives in Lisbon with her two cats."},
    ],
}


def _archive(path, scope: Scope | None = None) -> None:
    with open_archive(path, scope=scope) as archive:
        for session_id, messages in SESSIONS.items():
            archive.start_session(session_id)
            archive.append_many(session_id, messages)


@pytest.fixture
def archive(db_path):
    _archive(db_path)
    with open_archive(db_path) as opened:
        yield opened


def test_every_archived_session_is_walked_oldest_first(graph, archive):
    assert list(archived_sessions(archive)) == ["monday", "tuesday"]


def test_backfill_types_the_statements_and_links_them_to_their_rows(graph, archive):
    report = backfill(graph, archive, archived_sessions(archive))
    assert report.messages == 5 and len(report.memories) == 4
    kinds = sorted(m.type.value for m in report.memories)
    assert kinds == sorted(t.value for t in (MemoryType.PREFERENCE, MemoryType.DECISION, MemoryType.TODO, MemoryType.FACT))
    links = source_messages(graph, [m.id for m in report.memories])
    assert {link[0].session_id for link in links.values()} == {"monday", "tuesday"}
    assert all(link[0].message_id is not None for link in links.values())


def test_a_second_backfill_adds_nothing(graph, archive):
    backfill(graph, archive, archived_sessions(archive))
    again = backfill(graph, archive, archived_sessions(archive))
    assert again.memories == [] and again.skipped == 5 and again.messages == 0
    assert pending_messages(graph, archive, ["monday", "tuesday"]) == 0


def test_an_interrupted_backfill_resumes_where_it_stopped(graph, archive):
    complete_count = 4

    def stop(_n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backfill(graph, archive, archived_sessions(archive), batch=1, advance=stop)
    assert len(graph.memories()) == 1  # the first batch was saved before the interruption
    assert pending_messages(graph, archive, ["monday", "tuesday"]) == 4
    rest = backfill(graph, archive, archived_sessions(archive), batch=1)
    assert rest.skipped == 1
    assert len(graph.memories()) == complete_count


def test_a_graph_and_archive_of_different_scopes_are_refused(graph, db_path):
    with open_archive(db_path, scope=Scope(user_id="bob")) as other, pytest.raises(InvalidArgument, match="scope"):
        backfill(graph, other, ["monday"])


def test_another_users_sessions_are_not_seen(db_path):
    _archive(db_path, Scope(user_id="alice"))
    with open_graph(db_path, scope=Scope(user_id="bob")) as bob, open_archive(db_path, scope=Scope(user_id="bob")) as mine:
        assert list(archived_sessions(mine)) == []
        assert backfill(bob, mine, ["monday"]).messages == 0
        assert bob.memories() == []


def test_recall_shows_where_an_extracted_memory_was_said(graph, archive):
    backfill(graph, archive, ["tuesday"])
    found = recall_memories(graph, "passport renewal")
    assert found and found[0].said_in[0].session_id == "tuesday"
    assert found[0].as_tool_dict()["said_in"] == [found[0].said_in[0].as_dict()]


def test_a_memory_written_directly_has_no_said_in(graph):
    graph.remember("The VPN endpoint is vpn.example.org", "fact")
    found = recall_memories(graph, "VPN endpoint")
    assert found[0].said_in == () and "said_in" not in found[0].as_tool_dict()


def _home_with_archive(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    _archive(load_settings(home).database_path)
    return home


def test_cli_extract_all_reports_what_it_did(run, tmp_path):
    _home_with_archive(tmp_path)
    code, out, _ = run("graph", "extract", "--all", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["sessions"] == 2 and report["memories"] == 4 and report["skipped"] == 0
    code, out, _ = run("graph", "extract", "--all", "--json")
    assert json.loads(out)["memories"] == 0 and json.loads(out)["skipped"] == 5


def test_cli_extract_one_session(run, tmp_path):
    _home_with_archive(tmp_path)
    code, out, _ = run("graph", "extract", "--session", "tuesday", "--json")
    assert code == 0 and json.loads(out)["memories"] == 2


def test_cli_extract_an_unknown_session_fails_with_its_name(run, tmp_path):
    _home_with_archive(tmp_path)
    code, _, err = run("graph", "extract", "--session", "nope")
    assert code == 1 and "'nope'" in err


def test_cli_extract_with_llm_but_no_model_fails_naming_what_is_missing(run, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _home_with_archive(tmp_path)
    code, _, err = run("graph", "extract", "--all", "--llm")
    assert code == 1 and "no LLM configured" in err


def test_cli_extract_needs_a_session_or_all(run):
    code, _, err = run("graph", "extract")
    assert code == 2 and "--session" in err
