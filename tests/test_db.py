"""The SQLite conventions every mnemo database shares."""

import multiprocessing
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from mnemo._db import DatabaseError, close, connect, file_problem, migrate, write_transaction

STEPS = [
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
    " CREATE TABLE log (note_id INTEGER);"
    " CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN INSERT INTO log VALUES (new.id); END;",
    "ALTER TABLE notes ADD COLUMN tag TEXT;",
]


def test_connection_uses_wal_and_foreign_keys(tmp_path):
    conn = connect(tmp_path / "state.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_migrate_applies_every_step_once(tmp_path):
    conn = connect(tmp_path / "state.db")
    assert migrate(conn, "notes", STEPS) == 2
    assert migrate(conn, "notes", STEPS) == 2
    conn.execute("INSERT INTO notes (body, tag) VALUES ('x', 't')")
    assert conn.execute("SELECT count(*) FROM log").fetchone()[0] == 1


def test_migrate_resumes_from_the_recorded_version(tmp_path):
    conn = connect(tmp_path / "state.db")
    migrate(conn, "notes", STEPS[:1])
    assert migrate(conn, "notes", STEPS) == 2
    assert "tag" in {row[1] for row in conn.execute("PRAGMA table_info(notes)")}


def test_components_are_versioned_independently(tmp_path):
    conn = connect(tmp_path / "state.db")
    migrate(conn, "notes", STEPS)
    assert migrate(conn, "other", ["CREATE TABLE other (x);"]) == 1


def test_a_database_newer_than_the_code_is_refused(tmp_path):
    conn = connect(tmp_path / "state.db")
    migrate(conn, "notes", STEPS)
    with pytest.raises(DatabaseError, match="newer"):
        migrate(conn, "notes", STEPS[:1])


def test_a_failing_step_leaves_the_previous_version(tmp_path):
    conn = connect(tmp_path / "state.db")
    migrate(conn, "notes", STEPS[:1])
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, "notes", [STEPS[0], "ALTER TABLE missing ADD COLUMN y;"])
    version = conn.execute("SELECT version FROM schema_versions WHERE component='notes'").fetchone()[0]
    assert version == 1


def test_write_transaction_rolls_back_on_error(tmp_path):
    conn = connect(tmp_path / "state.db")
    migrate(conn, "notes", STEPS)
    with pytest.raises(RuntimeError):
        with write_transaction(conn):
            conn.execute("INSERT INTO notes (body) VALUES ('lost')")
            raise RuntimeError("boom")
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 0


def _insert_many(path, worker, count):
    conn = connect(path)
    for i in range(count):
        with write_transaction(conn):
            conn.execute("INSERT INTO notes (body) VALUES (?)", (f"{worker}-{i}",))


def test_concurrent_processes_lose_no_write(tmp_path):
    path = tmp_path / "state.db"
    migrate(connect(path), "notes", STEPS)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_insert_many, args=(path, w, 100)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert connect(path).execute("SELECT count(DISTINCT body) FROM notes").fetchone()[0] == 400


def test_a_file_that_is_not_a_database_is_an_error(tmp_path):
    path = tmp_path / "state.db"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(DatabaseError):
        connect(path)
    assert path.read_bytes() == b"not a database at all" * 100


def test_a_write_transaction_inside_another_is_a_savepoint(tmp_path):
    conn = connect(tmp_path / "nested.db")
    conn.execute("CREATE TABLE t (x INTEGER)")
    with write_transaction(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(ValueError), write_transaction(conn):
            conn.execute("INSERT INTO t VALUES (2)")
            raise ValueError("inner part refused")
        with write_transaction(conn):
            conn.execute("INSERT INTO t VALUES (3)")
    assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")] == [1, 3]
    with pytest.raises(ValueError), write_transaction(conn):
        with write_transaction(conn):
            conn.execute("INSERT INTO t VALUES (4)")
        raise ValueError("the outer transaction fails after its inner part succeeded")
    assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")] == [1, 3]
    conn.close()


def test_the_header_check_never_opens_a_file_this_process_holds_a_connection_to(tmp_path, monkeypatch):
    # Closing a plain descriptor of the file would drop this process's SQLite locks on it.
    path = tmp_path / "state.db"
    conn = connect(path)
    conn.execute("CREATE TABLE t (x)")
    opened: list[Path] = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self) or real_open(self, *a, **k))
    assert file_problem(path) is None
    assert opened == []
    conn.close()
    assert file_problem(path) is None
    assert opened == [path]


def _copy_of(database: Path) -> list[tuple[str]]:
    """The notes in a copy of the database file alone, as a backup by copying would take it."""
    copy = database.with_name("copy.db")
    copy.write_bytes(database.read_bytes())
    with closing(sqlite3.connect(copy)) as conn:
        return conn.execute("SELECT body FROM notes").fetchall()


def test_closing_folds_the_log_into_the_database_file_while_another_connection_reads(tmp_path):
    database = tmp_path / "state.db"
    writer = connect(database)
    migrate(writer, "notes", STEPS)
    writer.execute("INSERT INTO notes (body) VALUES ('kept')")
    reader = connect(database)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM notes").fetchall()
    close(writer)
    assert _copy_of(database) == [("kept",)]
    reader.execute("COMMIT")
    reader.close()


def test_closing_beside_a_reader_of_an_older_snapshot_loses_nothing(tmp_path):
    database = tmp_path / "state.db"
    writer = connect(database)
    migrate(writer, "notes", STEPS)
    reader = connect(database)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM notes").fetchall()
    writer.execute("INSERT INTO notes (body) VALUES ('later')")
    close(writer)
    reader.execute("COMMIT")
    assert [tuple(row) for row in reader.execute("SELECT body FROM notes")] == [("later",)]
    reader.close()
