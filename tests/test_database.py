"""mnemo's own database: its name, the read-only ownership check, Hermes homes and mnemo 0.1 homes."""

from __future__ import annotations

import json
import sqlite3

import pytest

from mnemo import AgentMemory, DatabaseTooNew, ForeignDatabase, RecalledMemory, StorageUnavailable, _db
from mnemo.archive import schema as archive_schema
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.cli import main
from mnemo.config import load_settings
from mnemo.database import DATABASE_FILENAME, check_owned, database_path
from mnemo.graph import schema as graph_schema
from mnemo.storage import open_graph
from support.homes import digest, make_hermes_state_db, make_mnemo_01_home

FAST = {"graph_embedder": "none", "archive_embedder": "none"}


def _hermes_home(tmp_path):
    home = tmp_path / ".hermes"
    make_hermes_state_db(home / "state.db")
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("Deploys go through the staging cluster first", encoding="utf-8")
    return home


def _sidecars(path):
    return sorted(p.name for p in path.parent.glob(path.name + "-*"))


def _cli(home, *argv):
    return main(["--home", str(home), *argv])


# -- the name and the check -----------------------------------------------------------------------


def test_a_new_home_gets_mnemo_db(tmp_path):
    with AgentMemory.open("s1", tmp_path, **FAST) as memory:
        memory.handle_tool_call("remember", {"content": "The wiki lives at wiki.internal"})
    assert (tmp_path / DATABASE_FILENAME).is_file()
    assert not (tmp_path / "state.db").exists()


def test_a_foreign_database_under_mnemos_name_is_refused_untouched(tmp_path):
    make_hermes_state_db(tmp_path / DATABASE_FILENAME)
    before = digest(tmp_path / DATABASE_FILENAME)
    with pytest.raises(ForeignDatabase) as caught:
        SessionArchive(tmp_path / DATABASE_FILENAME)
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / DATABASE_FILENAME) in message
    assert "schema_version" in message  # names what is not mnemo's
    with pytest.raises(ForeignDatabase):
        open_graph(tmp_path / DATABASE_FILENAME)
    assert digest(tmp_path / DATABASE_FILENAME) == before


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path):
    path = tmp_path / DATABASE_FILENAME
    path.write_bytes(b"these are someone's notes, not a database\n" * 20)
    before = digest(path)
    with pytest.raises(ForeignDatabase, match="not an SQLite database"):
        open_graph(path)
    assert digest(path) == before


def _mnemo_db_with_version(path, component, version):
    with SessionArchive(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO schema_versions (component, version) VALUES (?, ?)"
        " ON CONFLICT(component) DO UPDATE SET version = excluded.version",
        (component, version),
    )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def test_a_database_from_a_newer_mnemo_is_refused_untouched(tmp_path):
    path = tmp_path / DATABASE_FILENAME
    _mnemo_db_with_version(path, "archive", len(archive_schema.MIGRATIONS) + 1)
    before = digest(path)
    with pytest.raises(DatabaseTooNew, match=r"archive schema \d+, this mnemo knows \d+") as caught:
        open_graph(path)  # the graph refuses too: the file as a whole is newer
    assert str(path) in str(caught.value)
    assert digest(path) == before


def test_a_component_this_mnemo_does_not_know_means_a_newer_mnemo(tmp_path):
    path = tmp_path / DATABASE_FILENAME
    _mnemo_db_with_version(path, "maintenance", 1)
    with pytest.raises(DatabaseTooNew, match="unknown component 'maintenance'"):
        SessionArchive(path)


def test_a_refused_database_is_never_switched_to_wal(tmp_path):
    path = tmp_path / DATABASE_FILENAME
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")  # a rollback-journal database of some other program
    conn.commit()
    conn.close()
    with pytest.raises(ForeignDatabase, match="notes"):
        SessionArchive(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    assert _sidecars(path) == []


def test_an_empty_file_is_mnemos_to_create(tmp_path):
    path = tmp_path / DATABASE_FILENAME
    path.touch()
    assert check_owned(path) == {}
    with SessionArchive(path) as archive:
        archive.start_session("s")


def test_agent_memory_open_stops_naming_a_foreign_or_newer_database(tmp_path):
    make_hermes_state_db(tmp_path / DATABASE_FILENAME)
    before = digest(tmp_path / DATABASE_FILENAME)
    with pytest.raises(StorageUnavailable, match="is not mnemo's database"):
        AgentMemory.open("s1", tmp_path, **FAST)
    assert digest(tmp_path / DATABASE_FILENAME) == before
    newer = tmp_path / "newer"
    _mnemo_db_with_version(newer / DATABASE_FILENAME, "graph", 99)
    with pytest.raises(StorageUnavailable, match="written by a newer mnemo"):
        AgentMemory.open("s1", newer, **FAST)


def test_the_cli_stops_with_one_line_naming_the_file(tmp_path, capsys):
    make_hermes_state_db(tmp_path / DATABASE_FILENAME)
    before = digest(tmp_path / DATABASE_FILENAME)
    for argv in (["graph", "stats"], ["sessions", "list"], ["graph", "add", "a fact"]):
        assert _cli(tmp_path, *argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(tmp_path / DATABASE_FILENAME) in err and "not mnemo's database" in err
    assert digest(tmp_path / DATABASE_FILENAME) == before


# -- a Hermes home ------------------------------------------------------------------------------------


def test_a_hermes_home_keeps_state_db_byte_identical_through_a_session(tmp_path):
    home = _hermes_home(tmp_path)
    before = digest(home / "state.db")
    with AgentMemory.open("s1", home, **FAST) as memory:
        assert "staging cluster" in memory.system_prompt()  # curated files shared with Hermes
        memory.prepare_messages("what about the kiwi project?", [])
        assert json.loads(memory.handle_tool_call("remember", {"content": "Kiwi ships in May"}))["success"]
        assert json.loads(memory.handle_tool_call("recall", {"query": "kiwi"}))["count"] == 1
        assert json.loads(memory.handle_tool_call("session_search", {"query": "kiwi"}))["count"] == 0
        assert json.loads(memory.handle_tool_call("memory", {"target": "user", "action": "add", "content": "Likes tea"}))["success"]
        memory.turn_complete("what about the kiwi project?", "It ships in May.")
    with AgentMemory.open("s2", home, **FAST) as memory:
        found = json.loads(memory.handle_tool_call("session_search", {"query": "kiwi"}))
        assert [s["session"]["id"] for s in found["sessions"]] == ["s1"]  # mnemo's own archive, not Hermes' rows
    assert digest(home / "state.db") == before
    assert _sidecars(home / "state.db") == []
    assert (home / DATABASE_FILENAME).is_file()


def test_a_hermes_home_keeps_state_db_byte_identical_through_cli_commands(tmp_path, capsys):
    home = _hermes_home(tmp_path)
    before = digest(home / "state.db")
    for argv in (
        ["graph", "stats"],
        ["graph", "add", "Kiwi ships in May"],
        ["graph", "recall", "kiwi"],
        ["graph", "show"],
        ["graph", "export", "--format", "json"],
        ["sessions", "list"],
        ["sessions", "search", "kiwi"],
        ["memory", "show"],
        ["memory", "add", "Builds run on Jenkins"],
    ):
        assert _cli(home, *argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert digest(home / "state.db") == before
    assert _sidecars(home / "state.db") == []


def test_mnemo_home_from_the_environment_may_be_a_hermes_home(tmp_path, monkeypatch):
    home = _hermes_home(tmp_path)
    monkeypatch.setenv("MNEMO_HOME", str(home))
    assert load_settings().database_path == home / DATABASE_FILENAME
    assert load_settings().memories_dir == home / "memories"


# -- a mnemo 0.1 home -----------------------------------------------------------------------------------


def _mnemo_01_home(tmp_path):
    return make_mnemo_01_home(tmp_path / "home")


def test_a_mnemo_01_home_keeps_its_state_db_and_everything_in_it(tmp_path):
    home = _mnemo_01_home(tmp_path)
    assert database_path(home) == home / "state.db"
    with AgentMemory.open("new", home, **FAST) as memory:
        found = memory.search_sessions("quokka")
        assert [group.root.id for group in found] == ["old"]
        memories = [m for m in memory.recall("quokka") if isinstance(m, RecalledMemory)]
        assert [m.content for m in memories] == ["The quokka service moved to Frankfurt"]
    assert not (home / DATABASE_FILENAME).exists()
    conn = sqlite3.connect(home / "state.db")
    versions = dict(conn.execute("SELECT component, version FROM schema_versions"))
    scopes = conn.execute("SELECT user_id, agent_id, channel_id FROM sessions WHERE id = 'old'").fetchone()
    conn.close()
    assert versions["archive"] == len(archive_schema.MIGRATIONS) and versions["graph"] == len(graph_schema.MIGRATIONS)
    assert scopes == ("", "", "")  # sessions from before scopes belong to the empty scope


def test_a_state_db_with_anything_foreign_in_it_is_not_taken_for_mnemos(tmp_path):
    home = _mnemo_01_home(tmp_path)
    conn = sqlite3.connect(home / "state.db")
    conn.execute("CREATE TABLE hermes_settings (key TEXT)")
    conn.commit()
    conn.close()
    before = digest(home / "state.db")
    assert database_path(home) == home / DATABASE_FILENAME
    with AgentMemory.open("new", home, **FAST) as memory:
        assert memory.search_sessions("quokka") == []
    assert digest(home / "state.db") == before


def test_once_mnemo_db_exists_state_db_is_never_looked_at(tmp_path):
    home = _mnemo_01_home(tmp_path)
    (home / DATABASE_FILENAME).touch()
    assert database_path(home) == home / DATABASE_FILENAME


@pytest.mark.parametrize("provider", ["archive", "graph"])
def test_a_provider_table_with_the_old_state_db_key_is_told_the_new_name(tmp_path, provider):
    from mnemo.errors import ConfigError
    from mnemo.providers import ArchiveProvider, GraphProvider

    made = ArchiveProvider() if provider == "archive" else GraphProvider()
    with pytest.raises(ConfigError, match="'state_db' is now called 'database'"):
        made.initialize("s", {"state_db": str(tmp_path / "x.db")})
    assert not (tmp_path / "x.db").exists()


def test_a_damaged_sqlite_file_is_an_error_of_its_own_not_foreign(tmp_path):
    path = tmp_path / DATABASE_FILENAME
    with SessionArchive(path) as archive:
        archive.start_session("s")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page, past the header
    path.write_bytes(bytes(data))
    with pytest.raises(_db.DatabaseError, match="cannot read") as caught:
        check_owned(path)
    assert not isinstance(caught.value, ForeignDatabase)
