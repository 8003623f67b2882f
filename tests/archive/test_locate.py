"""Finding archived rows again from plain ``{"role", "content"}`` messages, as context compression hands them over."""

from __future__ import annotations

from .conftest import conversation


def _plain(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in pairs]


def test_a_repeated_message_maps_each_occurrence_to_its_own_row_in_order(archive):
    session, ids = conversation(archive, ["ok", "sure", "ok", "sure", "ok"])
    found = archive.locate(session, _plain(("user", "ok"), ("user", "ok"), ("user", "ok"), ("user", "ok")))
    assert found == [ids[0], ids[2], ids[4], None]


def test_the_same_text_said_by_the_other_role_is_not_a_match(archive):
    session, ids = conversation(archive, ["the build is green", "noted"])
    assert archive.locate(session, _plain(("assistant", "the build is green"), ("user", "the build is green"))) == [
        None, ids[0],
    ]  # fmt: skip


def test_messages_of_the_session_it_continues_are_found_but_not_other_sessions(archive):
    parent, earlier = conversation(archive, ["from the first part", "reply one"])
    conversation(archive, ["from another session", "reply two"])
    child, later = conversation(archive, ["from the second part", "reply three"], parent_session_id=parent)
    found = archive.locate(
        child, _plain(("user", "from the first part"), ("user", "from the second part"), ("user", "from another session"))
    )
    assert found == [earlier[0], later[0], None]


def test_a_whole_long_session_is_located_past_one_querys_worth_of_texts(archive):
    texts = [f"message number {n}" for n in range(1_200)]
    session, ids = conversation(archive, texts)
    messages = _plain(*(("user" if n % 2 == 0 else "assistant", text) for n, text in enumerate(texts)))
    assert archive.locate(session, messages) == ids


def test_messages_without_text_are_not_located(archive):
    session, _ = conversation(archive, ["hello"])
    assert archive.locate(session, [{"role": "user", "content": None}, {"role": "user"}, {"content": "hello"}]) == [
        None, None, None,
    ]  # fmt: skip
