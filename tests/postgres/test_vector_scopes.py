"""The archive's vector channel on PostgreSQL in a home many users share: each reader's search walks past the other
scopes' vectors to its own nearest messages, and never returns another scope's."""

from __future__ import annotations

import pytest

from graph._support import ConceptEmbedder
from mnemo.scope import Scope
from mnemo.storage import open_archive

READER = Scope(user_id="alice", agent_id="gateway", channel_id="chat")
OTHER_USER = Scope(user_id="bob", agent_id="gateway", channel_id="chat")
# Closer to "a canine" than anything the reader wrote: the dog concept alone (cosine ~1; the reader's ~0.7).
NEAR_DUPLICATES = 300


def _write(url: str, scope: Scope, texts: list[str]) -> list[int]:
    with open_archive(url, embedder=ConceptEmbedder(), scope=scope) as archive:
        session = archive.start_session()
        ids = archive.append_many(session, [{"role": "user", "content": text} for text in texts])
        archive.embed_pending()
        return ids


def _crowded_home(url: str) -> tuple[int, int]:
    """The reader's two messages (one about a dog, one about a car) among another user's many closer ones."""
    puppy, sedan = _write(url, READER, ["my puppy chewed the espresso machine", "the sedan needs new tyres"])
    _write(url, OTHER_USER, [f"the hound barked at the mail carrier, day {n}" for n in range(NEAR_DUPLICATES)])
    return puppy, sedan


def _channel(url: str, scope: Scope, query: str, k: int) -> list[tuple[int, float]]:
    with open_archive(url, embedder=ConceptEmbedder(), scope=scope) as archive, archive._reading() as conn:
        return archive._vectors.search(conn, query, k)


def test_a_reader_among_many_closer_messages_of_another_user_gets_its_own_nearest(postgres_url):
    puppy, sedan = _crowded_home(postgres_url)
    hits = _channel(postgres_url, READER, "a canine", 10)
    assert [mid for mid, _ in hits] == [puppy, sedan]
    assert hits[0][1] == pytest.approx(0.707, abs=0.01)


def test_the_other_user_still_gets_its_own_nearest_from_the_same_index(postgres_url):
    puppy, sedan = _crowded_home(postgres_url)
    hits = _channel(postgres_url, OTHER_USER, "a canine", NEAR_DUPLICATES + 10)
    assert len(hits) == NEAR_DUPLICATES
    assert not {puppy, sedan} & {mid for mid, _ in hits}


@pytest.mark.parametrize(
    "other",
    [
        Scope(user_id="bob", agent_id=READER.agent_id, channel_id=READER.channel_id),
        Scope(user_id=READER.user_id, agent_id="helper", channel_id=READER.channel_id),
        Scope(user_id=READER.user_id, agent_id=READER.agent_id, channel_id="email"),
    ],
    ids=["user", "agent", "channel"],
)
def test_a_scope_differing_in_one_id_never_comes_back_from_the_vector_channel(postgres_url, other):
    [sedan] = _write(postgres_url, READER, ["the sedan needs new tyres"])
    _write(postgres_url, other, ["the puppy sleeps", "a hound and a dog", "the sedan needs new tyres"])
    assert [mid for mid, _ in _channel(postgres_url, READER, "a puppy", 10)] == [sedan]


def test_a_reader_finds_its_message_by_meaning_in_a_crowded_home(postgres_url):
    # No word of the query is in the reader's message: only the vector channel can find it.
    puppy, _ = _crowded_home(postgres_url)
    with open_archive(postgres_url, embedder=ConceptEmbedder(), scope=READER) as archive:
        found = [hit.message.id for hit in archive.search_messages("a canine", limit=5)]
    assert found[0] == puppy
