"""Full-text ranking where several scopes share one SQLite archive: FTS5 counts words over its whole table,
so how rare a word is, and which sessions hold it, are taken from the reader's own messages."""

from __future__ import annotations

from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.scope import Scope

from .conftest import conversation

# Every message three words long: bm25 then scores them alike whoever else shares the table.
_ALICE = [
    "walrus budget draft", "tangerine budget draft", "tangerine budget review",
    "quarterly budget plan", "ferry timetable change", "walrus tangerine poster",
]  # fmt: skip
_BOB = [f"walrus sighting {n}" for n in range(40)]


def _texts(archive: SessionArchive, query: str) -> list[str]:
    return [hit.message.text for hit in archive.search_messages(query, limit=10)]


def _alice_alone(path) -> list[str]:
    with SessionArchive(path, scope=Scope("alice")) as alice:
        conversation(alice, _ALICE)
        return _texts(alice, "walrus tangerine budget")


def test_a_readers_ranking_is_the_one_it_has_alone_in_its_archive(tmp_path):
    alone = _alice_alone(tmp_path / "alone.db")
    path = tmp_path / "shared.db"
    with SessionArchive(path, scope=Scope("bob")) as bob:
        conversation(bob, _BOB)
    with SessionArchive(path, scope=Scope("alice")) as alice:
        conversation(alice, _ALICE)
        assert _texts(alice, "walrus tangerine budget") == alone


def test_a_word_another_scope_writes_often_is_still_rare_among_the_readers_messages(tmp_path):
    path = tmp_path / "shared.db"
    with SessionArchive(path, scope=Scope("bob")) as bob:
        conversation(bob, _BOB)
    with SessionArchive(path, scope=Scope("alice")) as alice:
        conversation(alice, ["walrus notes", "tangerine notes", "tangerine again", "ferry notes"])
        # "walrus" is in one of alice's messages and "tangerine" in two: her walrus message is the rarer match.
        assert _texts(alice, "walrus or tangerine")[0] == "walrus notes"


def test_other_scopes_messages_are_never_returned_while_their_words_are_weighed(tmp_path):
    path = tmp_path / "shared.db"
    with SessionArchive(path, scope=Scope("bob")) as bob:
        conversation(bob, _BOB)
    with SessionArchive(path, scope=Scope("alice")) as alice:
        conversation(alice, _ALICE)
        assert set(_texts(alice, "walrus sighting")) <= set(_ALICE)
