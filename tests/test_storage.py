"""mnemo.storage picks the backend from the database named; the domains never open one themselves."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.backends.sqlite.graph import SqliteEngine
from mnemo.config import load_settings
from mnemo.errors import InvalidArgument
from mnemo.graph import MemoryGraph
from mnemo.storage import is_url, open_archive, open_curated, open_graph, open_graph_engine


def test_a_path_opens_the_graph_in_sqlite(tmp_path: Path):
    with open_graph(tmp_path / "mnemo.db") as graph:
        assert isinstance(graph._engine, SqliteEngine)
        assert graph.get(graph.remember("the deploy runs on fridays").id).content == "the deploy runs on fridays"


def test_a_borrowed_connection_stays_open_after_the_graph_closes(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / "mnemo.db")
    open_graph(conn).close()
    assert conn.execute("SELECT count(*) FROM graph_memories").fetchone() == (0,)
    conn.close()


def test_a_graph_handed_a_path_instead_of_an_engine_names_open_graph(tmp_path: Path):
    with pytest.raises(InvalidArgument, match="open_graph"):
        MemoryGraph(tmp_path / "mnemo.db")  # type: ignore[arg-type]


def test_a_bad_scan_threshold_is_refused_before_the_database_is_created(tmp_path: Path):
    with pytest.raises(InvalidArgument, match="scan_threshold"):
        open_graph(tmp_path / "mnemo.db", scan_threshold=2.0)
    assert not (tmp_path / "mnemo.db").exists()


def test_a_path_opens_the_archive_in_sqlite(tmp_path: Path):
    with open_archive(tmp_path / "mnemo.db") as archive:
        assert isinstance(archive, SessionArchive)


def test_only_postgresql_urls_name_a_server():
    assert is_url("postgresql://u@h/db") and is_url("postgres://h/db")
    assert not is_url("mnemo.db") and not is_url(Path("postgresql:/x"))


def test_the_default_settings_keep_the_curated_pair_in_files(tmp_path: Path):
    store = open_curated(load_settings(tmp_path))
    assert store.directory == tmp_path / "memories"
    store.close()


def test_the_graph_engine_for_a_path_is_sqlite(tmp_path: Path):
    engine = open_graph_engine(tmp_path / "mnemo.db")
    try:
        assert isinstance(engine, SqliteEngine)
    finally:
        engine.close()
