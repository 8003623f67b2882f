"""Full-text ranking where several scopes share one archive, on either engine: SQLite's FTS5 and PostgreSQL's
probes count words over the whole table, so how rare a word is, and which sessions hold it, are taken from the
reader's own messages."""

from __future__ import annotations

from mnemo.archive import Archive
from mnemo.scope import Scope
from mnemo.storage import open_archive

from .conftest import conversation

# Every message three words long: bm25 then scores them alike whoever else shares the table.
_ALICE = [
    "walrus budget draft", "tangerine budget draft", "tangerine budget review",
    "quarterly budget plan", "ferry timetable change", "walrus tangerine poster",
]  # fmt: skip
_BOB = [f"walrus sighting {n}" for n in range(40)]


def _texts(archive: Archive, query: str) -> list[str]:
    return [hit.message.text for hit in archive.search_messages(query, limit=10)]


def _with_bob(target) -> None:
    with open_archive(target, scope=Scope("bob")) as bob:
        conversation(bob, _BOB)


def test_a_readers_ranking_is_the_one_it_has_alone_in_its_archive(archive_target, separate_target):
    with open_archive(separate_target, scope=Scope("alice")) as alone:
        conversation(alone, _ALICE)
        expected = _texts(alone, "walrus tangerine budget")
    _with_bob(archive_target)
    with open_archive(archive_target, scope=Scope("alice")) as alice:
        conversation(alice, _ALICE)
        assert _texts(alice, "walrus tangerine budget") == expected


def test_a_word_another_scope_writes_often_is_still_rare_among_the_readers_messages(archive_target):
    _with_bob(archive_target)
    with open_archive(archive_target, scope=Scope("alice")) as alice:
        conversation(alice, ["walrus notes", "tangerine notes", "tangerine again", "ferry notes"])
        # "walrus" is in one of alice's messages and "tangerine" in two: her walrus message is the rarer match.
        assert _texts(alice, "walrus or tangerine")[0] == "walrus notes"


def test_other_scopes_messages_are_never_returned_while_their_words_are_weighed(archive_target):
    _with_bob(archive_target)
    with open_archive(archive_target, scope=Scope("alice")) as alice:
        conversation(alice, _ALICE)
        assert set(_texts(alice, "walrus sighting")) <= set(_ALICE)


def test_a_reader_counts_words_per_scope_once_another_scope_arrives_after_its_first_search(archive_target):
    with open_archive(archive_target, scope=Scope("alice")) as alice:
        conversation(alice, ["walrus notes", "tangerine notes", "tangerine again", "ferry notes"])
        assert _texts(alice, "walrus or tangerine")[0] == "walrus notes"  # alone: nothing to tell apart yet
        _with_bob(archive_target)
        assert _texts(alice, "walrus or tangerine")[0] == "walrus notes"
