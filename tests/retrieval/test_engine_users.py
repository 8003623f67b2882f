"""The graph's recall and the archive's search rank through the same engine: its rules hold in both."""

from __future__ import annotations

from datetime import UTC, datetime

from graph._support import Clock, ConceptEmbedder
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.graph.types import Scope
from mnemo.storage import open_graph


def test_the_newest_version_is_preferred_over_the_superseded_one(tmp_path):
    with open_graph(tmp_path / "state.db", clock=Clock()) as graph:
        old = graph.remember("Deploys run from the staging branch")
        new = graph.replace(old.id, "Deploys run from the release branch")
        assert [r.memory.id for r in graph.recall("which branch do deploys run from")] == [new.id]


def test_forgotten_memories_are_excluded_from_every_channel(tmp_path):
    with open_graph(tmp_path / "state.db", clock=Clock(), embedder=ConceptEmbedder()) as graph:
        dog = graph.remember("Our dog is called Rex")
        graph.forget(dog.id)
        assert graph.recall("canine dog Rex") == []


def test_recall_never_crosses_scopes(tmp_path):
    with open_graph(tmp_path / "state.db", clock=Clock(), embedder=ConceptEmbedder()) as graph:
        alice = graph.with_scope(Scope(user_id="alice"))
        bob = graph.with_scope(Scope(user_id="bob"))
        alice.remember("Alice drives a sedan")
        first = alice.remember("Alice has a puppy", source="chat-1")
        alice.remember("The puppy is a beagle", source="chat-1")
        assert bob.recall("puppy sedan dog car") == []
        assert first.id in {r.memory.id for r in alice.recall("puppy")}


def test_type_and_time_filters_apply_to_fused_results(tmp_path):
    clock = Clock(datetime(2024, 1, 1, tzinfo=UTC).timestamp())
    with open_graph(tmp_path / "state.db", clock=clock, embedder=ConceptEmbedder()) as graph:
        graph.remember("Coffee with the team every Monday", "event", source="s")
        clock.now = datetime(2024, 6, 1, tzinfo=UTC).timestamp()
        wanted = graph.remember("Prefers espresso over latte", "preference", source="s")
        graph.remember("Coffee machine repaired", "event", source="s")
        found = graph.recall("coffee", types=["preference"], since="2024-05-01")
        assert [r.memory.id for r in found] == [wanted.id]


def test_a_memory_next_to_a_strong_match_from_the_same_source_ranks_above_a_lone_weak_match(tmp_path):
    with open_graph(tmp_path / "state.db", clock=Clock()) as graph:
        graph.remember("Where should we go hiking this summer?", source="chat-1")
        answer = graph.remember("The Dolomites, hiking trails near Cortina", source="chat-1")
        graph.remember("Weather today: summer heat", source="chat-2")
        lone = graph.remember("Bought hiking socks", source="chat-3")
        ranked = [r.memory.id for r in graph.recall("hiking summer trip")]
        assert ranked.index(answer.id) < ranked.index(lone.id)


def test_archive_hybrid_search_finds_a_paraphrase_that_full_text_misses(tmp_path):
    texts = ["We adopted a puppy last spring", "The sedan needs new tyres", "Lunch was fine"]
    with SessionArchive(tmp_path / "plain.db") as plain:
        session = plain.start_session()
        plain.append_many(session, [{"role": "user", "content": t} for t in texts])
        assert plain.search_messages("canine") == []
    with SessionArchive(tmp_path / "hybrid.db", embedder=ConceptEmbedder()) as hybrid:
        session = hybrid.start_session()
        ids = hybrid.append_many(session, [{"role": "user", "content": t} for t in texts])
        hits = hybrid.search_messages("canine")
        assert [h.message.id for h in hits] == [ids[0]]


def test_archive_vectors_respect_filters_and_deletion(tmp_path):
    with SessionArchive(tmp_path / "state.db", embedder=ConceptEmbedder()) as archive:
        kept = archive.start_session()
        gone = archive.start_session()
        archive.append_many(kept, [{"role": "assistant", "content": "A hound barked all night"}])
        archive.append_many(gone, [{"role": "user", "content": "The puppy chewed a shoe"}])
        assert archive.embed_pending() == 2
        assert {h.message.session_id for h in archive.search_messages("canine")} == {kept, gone}
        assert [h.message.session_id for h in archive.search_messages("canine", role="user")] == [gone]
        archive.delete_session(gone)
        assert [h.message.session_id for h in archive.search_messages("canine")] == [kept]
