"""Leaving out what an agent still holds in its context: a session's messages after a given id."""

from __future__ import annotations

import pytest

from mnemo.errors import InvalidArgument

from .conftest import conversation


def _found(archive, query: str, **kwargs) -> set[int]:
    return {hit.message.id for hit in archive.search_messages(query, **kwargs)}


def test_in_context_leaves_out_the_sessions_messages_after_the_id(archive):
    session, ids = conversation(archive, ["alpha kiwi one", "alpha kiwi two", "alpha kiwi three", "alpha kiwi four"])
    assert _found(archive, "alpha kiwi", in_context=(session, ids[1])) == set(ids[:2])


def test_in_context_zero_leaves_out_the_whole_session(archive):
    session, _ = conversation(archive, ["alpha kiwi one", "alpha kiwi two"])
    assert _found(archive, "alpha kiwi", in_context=(session, 0)) == set()


def test_in_context_keeps_every_other_session(archive):
    current, _ = conversation(archive, ["alpha kiwi now"])
    _, earlier = conversation(archive, ["alpha kiwi before"])
    assert _found(archive, "alpha kiwi", in_context=(current, 0)) == set(earlier)


def test_a_malformed_in_context_is_refused_naming_it(archive):
    session, _ = conversation(archive, ["alpha kiwi"])
    with pytest.raises(InvalidArgument) as raised:
        archive.search_messages("alpha", in_context=[session, "x"])
    assert raised.value.field == "in_context"


def test_locate_finds_the_rows_of_plain_messages(archive):
    session, ids = conversation(archive, ["hello there", "general kenobi"])
    found = archive.locate(session, [{"role": "assistant", "content": "general kenobi"}, {"role": "user", "content": "never said"}])
    assert found == [ids[1], None]
