"""mnemo's PostgreSQL database: its own schema, refusals before any write, URLs, and a server that crashes
while a writer is busy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from mnemo._db import DatabaseError
from mnemo.backends.postgres.connection import PostgresDatabase, is_url, redact
from mnemo.config import load_settings
from mnemo.storage import open_archive, open_graph
from support.forking import in_forked_child


def test_everything_mnemo_creates_lives_in_its_own_schema(postgres_url):
    with open_archive(postgres_url) as archive:
        archive.append(archive.start_session("s"), {"role": "user", "content": "hello"})
    with psycopg.connect(postgres_url) as conn:
        public = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
        ours = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'mnemo'"
        ).fetchall()}  # fmt: skip
    assert public == []
    assert {"sessions", "messages", "message_vectors", "schema_versions"} <= ours


def test_every_statement_is_planned_for_its_own_parameters(postgres_url):
    # A plan made once for any parameters sends a short window of recent ids to the full-text index.
    with open_archive(postgres_url) as archive, archive._reading() as conn:
        assert conn.execute("SHOW plan_cache_mode").fetchone()[0] == "force_custom_plan"


@pytest.fixture
def session(postgres_url):
    database = PostgresDatabase(postgres_url)
    held = database.session()
    try:
        yield held
    finally:
        held.close()
        database.close()


def test_a_hint_transaction_commits_without_waiting_for_the_disk_and_only_it(session):
    with session.transaction(["a lock"], durable=False):
        assert session.execute("SHOW synchronous_commit").fetchone()[0] == "off"
    with session.transaction(["a lock"]):
        assert session.execute("SHOW synchronous_commit").fetchone()[0] == "on"
    assert session.execute("SHOW synchronous_commit").fetchone()[0] == "on"


def test_a_transaction_holds_its_advisory_locks_until_it_ends(session):
    with session.transaction(["mnemo:test"]):
        held = session.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").fetchone()
        assert held[0] == 1
    assert session.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0] == 0


def test_a_transaction_that_raises_is_rolled_back_and_the_session_goes_on(session):
    session.execute("CREATE TEMP TABLE t (x int)")
    with pytest.raises(psycopg.errors.DivisionByZero), session.transaction(["mnemo:test"]):
        session.execute("INSERT INTO t VALUES (1)")
        session.execute("SELECT 1 / 0")
    assert session.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    with session.transaction(["mnemo:test"]):
        session.execute("INSERT INTO t VALUES (2)")
    assert [tuple(r) for r in session.execute("SELECT x FROM t")] == [(2,)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_pool_opened_before_a_fork_is_refused_in_the_child_and_stays_the_parents(postgres_url):
    database = PostgresDatabase.shared(postgres_url)
    try:
        with database.read() as executor:
            backend = executor.execute("SELECT pg_backend_pid()").fetchone()[0]

        def inherited_refused_and_fresh_works() -> bool:
            try:
                with database.read():
                    return False
            except DatabaseError as exc:
                refused = "before this process forked" in str(exc)
            database.close()  # must leave the parent's connections alone
            fresh = PostgresDatabase.shared(postgres_url)
            with fresh.read() as executor:
                return refused and fresh is not database and executor.execute("SELECT 1").fetchone()[0] == 1

        assert in_forked_child(inherited_refused_and_fresh_works)
        with database.read() as executor:  # the same session as before: the child did not end it
            assert executor.execute("SELECT pg_backend_pid()").fetchone()[0] == backend
    finally:
        database.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_session_opened_before_a_fork_is_refused_in_the_child(session):
    def refused_by_name() -> bool:
        try:
            session.execute("SELECT 1")
        except DatabaseError as exc:
            return "before this process forked" in str(exc)
        return False

    assert in_forked_child(refused_by_name)
    assert session.execute("SELECT 1").fetchone()[0] == 1


def test_a_schema_holding_another_programs_tables_is_refused_and_left_untouched(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA mnemo")
        conn.execute("CREATE TABLE mnemo.invoices (id int)")
    with pytest.raises(DatabaseError, match="not mnemo's .*invoices"):
        open_archive(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'mnemo'").fetchall()
    assert tables == [("invoices",)]


def test_a_schema_written_by_a_newer_mnemo_is_refused(postgres_url):
    open_archive(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE mnemo.schema_versions SET version = 99 WHERE component = 'archive'")
    with pytest.raises(DatabaseError, match="newer than this mnemo"):
        open_archive(postgres_url)


def test_an_unreachable_server_is_one_line_naming_it_without_the_password(tmp_path: Path):
    url = f"postgresql://mnemo:hunter2@/mnemo?host={tmp_path}&connect_timeout=1"
    started = time.monotonic()
    with pytest.raises(DatabaseError) as caught:
        open_archive(url)
    assert "hunter2" not in str(caught.value)
    assert "cannot connect to postgresql://mnemo@" in str(caught.value)
    assert time.monotonic() - started < 60


def test_urls_are_recognised_and_redacted():
    assert is_url("postgresql://u:p@db/x") and is_url("postgres://db/x")
    assert not is_url("/home/me/.mnemo/mnemo.db") and not is_url(Path("postgresql:"))
    assert redact("postgresql://u:secret@db:5432/x?sslmode=require") == "postgresql://u@db:5432/x?sslmode=require"
    assert redact("postgresql:///x?host=/tmp") == "postgresql:///x?host=/tmp"


def test_database_url_comes_from_the_environment_and_is_checked(tmp_path: Path):
    settings = load_settings(tmp_path, environ={"MNEMO_DATABASE_URL": "postgresql://db/mnemo"})
    assert settings.database_target == "postgresql://db/mnemo"
    assert load_settings(tmp_path, environ={}).database_target == tmp_path / "mnemo.db"
    with pytest.raises(Exception, match="postgresql:// URL"):
        load_settings(tmp_path, environ={"MNEMO_DATABASE_URL": "mysql://db/mnemo"})


_WRITER = """
import sys
from mnemo._db import DatabaseError
from mnemo.storage import open_archive
url, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
with open_archive(url) as archive:
    archive.start_session("crash", exist_ok=True)
    for batch in range(400):
        try:
            archive.append_many("crash", [{"role": "user", "content": f"batch{batch} line{n}"} for n in range(5)])
        except DatabaseError as exc:
            print("unknown", batch, exc, file=log)  # the commit's outcome is unknown: not acknowledged
            continue
        print("ok", batch, file=log)
"""


def _crash_while_writing(server, url: str, writer_script: str, log: Path, *, after: int) -> list[int]:
    """Run ``writer_script`` against ``url``, crash the server once it logged ``after`` acknowledged writes,
    and return the numbers of every write it acknowledged (it goes on through the restart)."""
    writer = subprocess.Popen([sys.executable, "-c", writer_script, url, str(log)])
    deadline = time.monotonic() + 60
    while (not log.exists() or log.read_text().count("ok") < after) and time.monotonic() < deadline:
        time.sleep(0.05)
    server.restart()
    assert writer.wait(timeout=120) == 0
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("ok")]


def test_a_server_crash_mid_write_loses_nothing_acknowledged(postgres_server, postgres_url, tmp_path: Path):
    open_archive(postgres_url).close()
    acknowledged = _crash_while_writing(postgres_server, postgres_url, _WRITER, tmp_path / "acknowledged.log", after=40)
    assert len(acknowledged) >= 390  # it went on writing after the restart (at most a few outcomes unknown)
    with open_archive(postgres_url) as archive:
        stored = {m.text for m in archive.messages("crash")}
        for batch in acknowledged:
            assert {f"batch{batch} line{n}" for n in range(5)} <= stored
        # Whole batches only: a transaction cut by the crash left nothing behind.
        assert len(stored) % 5 == 0
        assert archive.get_session("crash").message_count == len(stored)


_GRAPH_WRITER = """
import sys
from mnemo._db import DatabaseError
from mnemo.storage import open_graph
url, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
with open_graph(url) as graph:
    for n in range(300):
        try:
            graph.remember_many([{"content": f"note {n} part {p}", "source": f"batch{n}"} for p in range(3)])
        except DatabaseError as exc:
            print("unknown", n, exc, file=log)  # cut by the crash: not acknowledged
            continue
        print("ok", n, file=log)
"""


def test_a_server_crash_mid_write_loses_no_acknowledged_memory(postgres_server, postgres_url, tmp_path: Path):

    open_graph(postgres_url).close()
    log = tmp_path / "acknowledged.log"
    acknowledged = _crash_while_writing(postgres_server, postgres_url, _GRAPH_WRITER, log, after=30)
    assert len(acknowledged) >= 290  # the graph reconnected and went on writing
    with open_graph(postgres_url) as graph:
        by_batch: dict[str, int] = {}
        for memory in graph.memories():
            by_batch[memory.source] = by_batch.get(memory.source, 0) + 1
    assert all(by_batch.get(f"batch{n}") == 3 for n in acknowledged)
    assert set(by_batch.values()) == {3}  # a batch cut by the crash left nothing behind
