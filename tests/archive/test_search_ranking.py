"""Relevance ranking of archive search: questions and their replies, whole-session evidence, and the
messages of participants and periods the query names."""

from __future__ import annotations

from datetime import UTC, datetime

from .conftest import conversation

_SMALL_TALK = [
    "Morning! Did you sleep well?",
    "Not bad, the neighbours were quiet for once.",
    "I still need to buy groceries today.",
    "The bakery on the corner has fresh bread on Fridays.",
    "Traffic was terrible on the bridge this morning.",
    "I finally finished that novel about the lighthouse keeper.",
]


def _texts(hits) -> list[str]:
    return [hit.message.text for hit in hits]


def test_the_reply_to_a_question_outranks_the_question_that_echoes_the_query(archive):
    conversation(archive, _SMALL_TALK)
    conversation(archive, ["What should we call the new puppy?", "We named the puppy Biscuit.", *_SMALL_TALK])
    hits = archive.search_messages("what did they call the puppy", limit=2)
    assert _texts(hits) == ["We named the puppy Biscuit.", "What should we call the new puppy?"]


def test_a_session_that_discusses_the_topic_across_several_messages_ranks_its_best_message_higher(archive):
    filler = _SMALL_TALK[:3]
    conversation(archive, _SMALL_TALK)
    conversation(archive, _SMALL_TALK)
    conversation(archive, ["Our kayak trip to the lake was lovely.", *_SMALL_TALK])
    conversation(archive, [
        "We paddled the kayak across the lake at dawn.", *filler,
        "The kayak needs a new seat.", *filler,
        "The lake was colder than last year.", *filler,
        "I want a lighter kayak paddle.",
    ])
    hits = archive.search_messages("kayak lake", limit=2)
    assert _texts(hits) == ["We paddled the kayak across the lake at dawn.", "Our kayak trip to the lake was lovely."]


def test_messages_of_a_participant_the_query_names_rank_higher(archive):
    sid = archive.start_session()
    archive.append_many(sid, [
        {"role": "user", "name": "dana", "content": "The budget for the offsite looks fine."},
        *({"role": "assistant", "content": text} for text in _SMALL_TALK[:3]),
        {"role": "user", "name": "omar", "content": "The budget for the offsite looks fine."},
        *({"role": "assistant", "content": text} for text in _SMALL_TALK[3:]),
    ])
    [first, second] = archive.search_messages("what did Dana think of the offsite budget?", limit=2)
    assert (first.message.extra["name"], second.message.extra["name"]) == ("dana", "omar")


def test_messages_written_in_a_period_the_query_names_rank_higher(archive):
    may, september = datetime(2023, 5, 8, tzinfo=UTC).timestamp(), datetime(2023, 9, 2, tzinfo=UTC).timestamp()
    spring = archive.start_session("spring", started_at=may)
    (in_may,) = archive.append_many(spring, [{"role": "user", "content": "Went to a pottery class", "timestamp": may}])
    autumn = archive.start_session("autumn", started_at=september)  # newer, same words
    archive.append_many(autumn, [{"role": "user", "content": "Went to a pottery class", "timestamp": september}])
    assert archive.search_messages("pottery class in May 2023", limit=2)[0].message.id == in_may


def _one_session_with_a_weak_match_beside_the_best(archive) -> None:
    conversation(archive, [
        "The lighthouse ferry timetable changed in spring.",
        "Ferry cancellations happen there now and then, people say, whatever the season may bring.",
        *_SMALL_TALK,
        "The timetable is pinned up.",
    ])  # fmt: skip


def test_grouped_search_shown_with_context_does_not_lift_a_message_for_its_neighbour(archive):
    _one_session_with_a_weak_match_beside_the_best(archive)
    [group] = archive.search("ferry timetable", hits_per_session=2, context=1)
    assert _texts(group.hits) == ["The lighthouse ferry timetable changed in spring.", "The timetable is pinned up."]


def test_search_without_context_lifts_a_message_beside_the_best_match(archive):
    _one_session_with_a_weak_match_beside_the_best(archive)
    hits = archive.search_messages("ferry timetable", limit=2)
    assert _texts(hits)[1].startswith("Ferry cancellations")


def _turtles(archive, *, between: list[dict] = ()) -> str:
    """A session where the answer to a question shares no word with it; returns the session id."""
    session = archive.start_session()
    archive.append_many(session, [
        {"role": "user", "content": "My turtles love the new tank."},
        {"role": "assistant", "content": "How long have you had your turtles?"},
        *between,
        {"role": "user", "content": "Three years now, and they bring me so much joy."},
        *({"role": "assistant" if n % 2 else "user", "content": text} for n, text in enumerate(_SMALL_TALK)),
    ])  # fmt: skip
    return session


def test_the_reply_after_a_matched_question_is_found_though_it_shares_no_word_with_the_query(archive):
    _turtles(archive)
    conversation(archive, _SMALL_TALK)
    hits = archive.search_messages("how long has Nate had his turtles", limit=3)
    assert "Three years now, and they bring me so much joy." in _texts(hits)


def test_a_turn_beside_a_match_is_left_out_when_the_filters_leave_it_out(archive):
    _turtles(archive)
    hits = archive.search_messages("how long has Nate had his turtles", limit=3, role="assistant")
    assert _texts(hits) == ["How long have you had your turtles?"]


def test_tool_traffic_between_a_question_and_its_reply_does_not_part_them(archive):
    _turtles(archive, between=[
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calendar", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "no events"},
    ])  # fmt: skip
    hits = archive.search_messages("how long has Nate had his turtles", limit=3)
    assert "Three years now, and they bring me so much joy." in _texts(hits)


def test_another_sessions_message_written_between_a_question_and_its_reply_does_not_part_them(archive):
    conversation(archive, _SMALL_TALK)
    ours, theirs = archive.start_session(), archive.start_session()
    archive.append(ours, {"role": "user", "content": "What should we call the new puppy?"})
    archive.append(theirs, {"role": "user", "content": "Any plans for the weekend?"})
    archive.append_many(ours, [
        {"role": "assistant", "content": "We named the puppy Biscuit."},
        *({"role": "user" if n % 2 else "assistant", "content": text} for n, text in enumerate(_SMALL_TALK)),
    ])  # fmt: skip
    hits = archive.search_messages("what did they call the puppy", limit=2)
    assert _texts(hits) == ["We named the puppy Biscuit.", "What should we call the new puppy?"]


def test_grouped_search_adds_no_turn_that_no_channel_found(archive):
    _turtles(archive)
    groups = archive.search("how long has Nate had his turtles", hits_per_session=5, context=1)
    assert [hit.message.text for group in groups for hit in group.hits] == [
        "How long have you had your turtles?", "My turtles love the new tank.",
    ]  # fmt: skip


def test_a_message_deleted_while_it_was_ranked_stands_apart_from_its_session():
    from mnemo.archive.search import _turn_placements

    # Another process may delete a session between a search's queries: its messages have no turns to count.
    rows = [(1, "s", "What should we call the puppy?", None, 0.0), (2, "s", "Biscuit.", None, 0.0)]
    places = _turn_placements(rows, {}, reach=2)
    assert abs(places[2].position - places[1].position) > 2
