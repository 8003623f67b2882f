"""Where the archive's owner embeds new messages itself (an agent's archive does after each turn), a search
never embeds: it answers from the vectors there are, and full text finds the rest."""

from __future__ import annotations

import threading

from graph._support import ConceptEmbedder
from mnemo.storage import open_archive

TEXTS = ("A hound barked all night", "The puppy chewed a shoe", "We drove the sedan to Paris")


def _filled(path, *, embed_at_search: bool):
    archive = open_archive(path, embedder=ConceptEmbedder(), embed_at_search=embed_at_search)
    session = archive.start_session()
    archive.append_many(session, [{"role": "user", "content": t} for t in TEXTS])
    return archive


def test_a_search_embeds_nothing_when_embedding_at_search_is_off(tmp_path):
    with _filled(tmp_path / "a.db", embed_at_search=False) as archive:
        archive.search_messages("canine")
        assert archive.pending_embeddings() == len(TEXTS)


def test_a_search_still_finds_by_full_text_what_has_no_vector_yet(tmp_path):
    with _filled(tmp_path / "a.db", embed_at_search=False) as archive:
        assert [hit.message.text for hit in archive.search_messages("sedan")] == ["We drove the sedan to Paris"]


def test_by_default_a_search_embeds_a_bounded_batch_first(tmp_path):
    with _filled(tmp_path / "a.db", embed_at_search=True) as archive:
        archive.search_messages("canine")
        assert archive.pending_embeddings() == 0


def test_a_search_goes_on_while_a_batch_is_being_embedded(tmp_path):
    started, release, embedded = threading.Event(), threading.Event(), threading.Event()

    class Slow(ConceptEmbedder):
        def embed(self, texts):
            if len(texts) > 1:  # the batch, not a query
                started.set()
                release.wait(10)
                embedded.set()
            return super().embed(texts)

    archive = open_archive(tmp_path / "a.db", embedder=Slow(), embed_at_search=False)
    with archive:
        session = archive.start_session()
        archive.append_many(session, [{"role": "user", "content": t} for t in TEXTS])
        worker = threading.Thread(target=archive.embed_pending)
        worker.start()
        assert started.wait(10)
        try:
            found = archive.search_messages("sedan")  # would wait for the batch if the model ran under the lock
            answered_during_the_batch = not embedded.is_set()
        finally:
            release.set()
            worker.join(10)
    assert answered_during_the_batch
    assert [hit.message.text for hit in found] == ["We drove the sedan to Paris"]
