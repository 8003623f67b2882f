"""Relevance ranking of archive search: questions and their replies, whole-session evidence, and the
messages of participants the query names."""

from __future__ import annotations

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
