"""The archive's message vectors are searched from a vector file beside the database: a new process
answers as before, deleted sessions leave no vector behind in it, and a damaged file is rebuilt."""

from __future__ import annotations

import numpy as np

from graph._support import ConceptEmbedder
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.embeddings.vector_file import HEADER_BYTES, row_dtype, vector_file_status, vector_files

TEXTS = ("A hound barked all night", "The puppy chewed a shoe", "We drove the sedan to Paris",
         "An espresso after lunch", "Berlin in the spring", "The vehicle needs new tyres")  # fmt: skip


def _archive(path) -> SessionArchive:
    return SessionArchive(path, embedder=ConceptEmbedder())


def _hits(archive: SessionArchive) -> list[list[int]]:
    return [[h.message.id for h in archive.search_messages(q)] for q in ("canine", "automobile", "coffee")]


def _filled(path) -> tuple[list[list[int]], str]:
    with _archive(path) as archive:
        session = archive.start_session()
        archive.append_many(session, [{"role": "user", "content": t} for t in TEXTS])
        archive.embed_pending()
        return _hits(archive), session


def test_a_new_process_searches_the_vector_file_and_finds_the_same(tmp_path):
    path = tmp_path / "state.db"
    before, _ = _filled(path)
    (file,) = vector_files(path)
    assert vector_file_status(file).rows == len(TEXTS)
    with _archive(path) as archive:
        assert _hits(archive) == before


def test_deleting_a_session_erases_its_vectors_from_the_file(tmp_path):
    path = tmp_path / "state.db"
    _, session = _filled(path)
    (file,) = vector_files(path)
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
    (file,) = vector_files(path)
    rows = np.memmap(file, dtype=row_dtype(8), mode="r+", offset=HEADER_BYTES)
    rows["vector"] = np.float32(0.5)
    rows.flush()
    del rows
    with _archive(path) as archive:
        assert _hits(archive) == before
    assert vector_file_status(file).state == "ok"
