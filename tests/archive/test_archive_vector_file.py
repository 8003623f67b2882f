"""The archive's message vectors are searched from vector files beside the database, one per scope and kind
(spoken messages, and the rest): a new process answers as before, deleted sessions leave no vector behind, a
damaged file is rebuilt, and one user's many messages never crowd another's out of the vector channel."""

from __future__ import annotations

import numpy as np

from graph._support import ConceptEmbedder
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.embeddings.vector_file import (
    HEADER_BYTES,
    directory_for,
    file_name,
    row_dtype,
    vector_file_status,
    vector_files,
)
from mnemo.scope import Scope

TEXTS = ("A hound barked all night", "The puppy chewed a shoe", "We drove the sedan to Paris",
         "An espresso after lunch", "Berlin in the spring", "The vehicle needs new tyres")  # fmt: skip


def _archive(path, scope: Scope | None = None) -> SessionArchive:
    return SessionArchive(path, embedder=ConceptEmbedder(), scope=scope)


def _hits(archive: SessionArchive) -> list[list[int]]:
    return [[h.message.id for h in archive.search_messages(q)] for q in ("canine", "automobile", "coffee")]


def _spoken_file(path):
    (file,) = [file for file in vector_files(path) if vector_file_status(file).key.endswith("\x1fspoken")]
    return file


def _filled(path) -> tuple[list[list[int]], str]:
    with _archive(path) as archive:
        session = archive.start_session()
        archive.append_many(session, [{"role": "user", "content": t} for t in TEXTS])
        archive.embed_pending()
        return _hits(archive), session


def test_a_new_process_searches_the_vector_file_and_finds_the_same(tmp_path):
    path = tmp_path / "state.db"
    before, _ = _filled(path)
    assert vector_file_status(_spoken_file(path)).rows == len(TEXTS)
    with _archive(path) as archive:
        assert _hits(archive) == before


def test_deleting_a_session_erases_its_vectors_from_the_file(tmp_path):
    path = tmp_path / "state.db"
    _, session = _filled(path)
    file = _spoken_file(path)
    hound = ConceptEmbedder().embed([TEXTS[0]])[0].tobytes()
    assert hound in file.read_bytes()
    with _archive(path) as archive:
        archive.delete_session(session)
        assert hound not in file.read_bytes()
        assert archive.search_messages("canine") == []
    assert vector_file_status(file).erased == len(TEXTS)


def test_a_damaged_vector_file_is_rebuilt_with_the_same_answers(tmp_path):
    path = tmp_path / "state.db"
    before, _ = _filled(path)
    file = _spoken_file(path)
    rows = np.memmap(file, dtype=row_dtype(8), mode="r+", offset=HEADER_BYTES)
    rows["vector"] = np.float32(0.5)
    rows.flush()
    del rows
    with _archive(path) as archive:
        assert _hits(archive) == before
    assert vector_file_status(file).state == "ok"


def test_each_scope_searches_a_vector_file_of_its_own(tmp_path):
    path = tmp_path / "state.db"
    for user, texts in (("alice", TEXTS[:2]), ("bob", TEXTS[2:])):
        with _archive(path, Scope(user)) as archive:
            archive.append_many(archive.start_session(), [{"role": "user", "content": t} for t in texts])
            archive.embed_pending()
            archive.search_messages("canine")
    statuses = [vector_file_status(file) for file in vector_files(path)]
    spoken = sorted((status.key.split("\x1f")[1], status.rows) for status in statuses if status.key.endswith("\x1fspoken"))
    assert spoken == [("alice", 2), ("bob", 4)]


def test_another_scopes_nearer_messages_do_not_crowd_a_readers_own_out(tmp_path):
    path = tmp_path / "state.db"
    with _archive(path, Scope("bob")) as bob:
        # More messages than a search takes candidates, each nearer to "canine" than alice's one.
        bob.append_many(bob.start_session(), [{"role": "user", "content": f"dog number {n}"} for n in range(150)])
        bob.embed_pending()
    with _archive(path, Scope("alice")) as alice:
        alice.append_many(alice.start_session(), [{"role": "user", "content": "The hound slept in the sedan"}])
        alice.embed_pending()
        assert [h.message.content for h in alice.search_messages("canine")] == ["The hound slept in the sedan"]


def test_the_file_of_every_scopes_vectors_an_earlier_version_kept_is_removed(tmp_path):
    path = tmp_path / "state.db"
    _filled(path)
    embedder = ConceptEmbedder()
    unscoped = directory_for(path) / file_name(f"archive\x1f{embedder.name}\x1f{embedder.dim}")
    unscoped.write_bytes(b"vectors of every scope")
    with _archive(path) as archive:
        assert not unscoped.exists()
        assert _hits(archive)[0] != []


def test_the_file_of_a_scopes_vectors_of_every_role_an_earlier_version_kept_is_removed(tmp_path):
    path = tmp_path / "state.db"
    _filled(path)
    embedder = ConceptEmbedder()
    every_role = directory_for(path) / file_name("\x1f".join(("archive", *Scope().as_params(), embedder.name, str(embedder.dim))))
    every_role.write_bytes(b"vectors of every role")
    with _archive(path) as archive:
        assert not every_role.exists()
        assert _hits(archive)[0] != []
