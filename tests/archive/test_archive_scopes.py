"""Archive scopes: every read path confined to the archive's own (user, agent, channel) triple, on both
engines (two archive objects over one SQLite file, or over one PostgreSQL database)."""

from __future__ import annotations

import pytest

from mnemo.archive import SessionNotFound
from mnemo.errors import InvalidArgument
from mnemo.scope import Scope
from mnemo.storage import open_archive


@pytest.fixture
def alice(archive_target):
    with open_archive(archive_target, scope=Scope("alice")) as archive:
        archive.start_session("a-root")
        archive.append_many("a-root", [{"role": "user", "content": "the walrus budget is approved"}])
        archive.start_session("a-child", parent_session_id="a-root")
        archive.append_many("a-child", [{"role": "assistant", "content": "walrus budget noted"}])
        yield archive


@pytest.fixture
def bob(archive_target, alice):
    with open_archive(archive_target, scope=Scope("bob")) as archive:
        archive.start_session("b-1")
        archive.append_many("b-1", [{"role": "user", "content": "my walrus poster arrived"}])
        yield archive


def test_search_and_search_messages_return_only_the_scopes_messages(alice, bob):
    assert [g.root.id for g in bob.search("walrus")] == ["b-1"]
    assert {h.message.session_id for h in bob.search_messages("walrus", limit=10)} == {"b-1"}
    assert [g.root.id for g in alice.search("walrus")] == ["a-root"]


def test_sessions_and_messages_of_another_scope_do_not_exist(alice, bob):
    message_id = alice.messages("a-root")[0].id
    assert bob.get_session("a-root") is None
    assert bob.messages("a-root") == []
    assert bob.get_message(message_id) is None
    assert bob.window(message_id) == []
    assert [s.id for s in bob.list_sessions()] == ["b-1"]
    assert bob.count_messages() == 1 and alice.count_messages() == 2


def test_writes_and_deletes_to_another_scopes_session_are_refused(alice, bob):
    with pytest.raises(SessionNotFound):
        bob.append("a-root", {"role": "user", "content": "x"})
    with pytest.raises(SessionNotFound):
        bob.end_session("a-root")
    with pytest.raises(SessionNotFound):
        bob.delete_session("a-root")
    with pytest.raises(InvalidArgument, match="parent_session_id"):
        bob.start_session("b-2", parent_session_id="a-root")
    assert alice.get_session("a-root").message_count == 1


def test_lineage_stays_inside_the_scope(alice, bob):
    assert sorted(alice.lineage("a-child")) == ["a-child", "a-root"]
    assert bob.lineage("a-child") == ["a-child"]  # unknown here: its own root, nothing below
    assert bob.lineage_root("a-child") == "a-child"


def test_a_session_remembers_its_scope(alice):
    assert alice.get_session("a-root").scope == Scope("alice")
