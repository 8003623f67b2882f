"""Archive.pop_message: a host undoes the newest message of a session, and nothing of it stays searchable."""

from __future__ import annotations

import pytest

from mnemo.archive import SessionNotFound
from mnemo.scope import Scope
from mnemo.storage import open_archive

from .conftest import conversation


def test_pop_returns_the_newest_message_and_removes_it(archive) -> None:
    session, _ = conversation(archive, ["first question", "first answer", "second question"])
    popped = archive.pop_message(session)
    assert popped.to_message() == {"role": "user", "content": "second question"}
    assert [m.text for m in archive.messages(session)] == ["first question", "first answer"]
    assert archive.get_session(session).message_count == 2


def test_a_popped_message_is_no_longer_found_by_search(archive) -> None:
    session, _ = conversation(archive, ["the parrot is called Kiwi", "noted: zanzibar"])
    archive.pop_message(session)
    assert archive.search_messages("zanzibar") == []
    assert archive.search_messages("parrot")


def test_pop_on_an_empty_session_is_none(archive) -> None:
    session = archive.start_session()
    assert archive.pop_message(session) is None


def test_pop_cannot_reach_another_scopes_session(archive_target) -> None:
    with open_archive(archive_target, scope=Scope("alice")) as alice:
        session, _ = conversation(alice, ["alice's secret"])
    with open_archive(archive_target, scope=Scope("bob")) as bob:
        with pytest.raises(SessionNotFound):
            bob.pop_message(session)
    with open_archive(archive_target, scope=Scope("alice")) as alice:
        assert [m.text for m in alice.messages(session)] == ["alice's secret"]
