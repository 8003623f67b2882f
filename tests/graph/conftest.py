"""Fixtures for the memory graph tests: a graph on a fresh ``state.db`` with a hand-moved clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mnemo.cli import main
from mnemo.graph import MemoryGraph
from mnemo.providers import GraphProvider
from mnemo.storage import open_graph

from ._support import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


ENGINES = ("sqlite", "postgres")


@pytest.fixture(params=ENGINES)
def db_path(request: pytest.FixtureRequest, tmp_path):
    """Where the graph lives, once per engine: mnemo's SQLite file, or a fresh PostgreSQL database."""
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return tmp_path / "state.db"


@pytest.fixture
def sqlite_path(tmp_path):
    """mnemo's SQLite file, for what only that engine has (FTS5 tables, vector files, old schema versions)."""
    return tmp_path / "state.db"


@pytest.fixture
def graph(db_path, clock) -> Iterator[MemoryGraph]:
    with open_graph(db_path, clock=clock) as opened:
        yield opened


@pytest.fixture
def provider(tmp_path) -> Iterator[GraphProvider]:
    """A graph provider on a fresh home, shut down after the test."""
    opened = GraphProvider()
    opened.initialize("session-1", {"home": str(tmp_path)})
    yield opened
    opened.shutdown()


@pytest.fixture
def run(tmp_path, capsys):
    """``mnemo`` on a fresh home: ``run(*argv)`` gives the exit code, stdout and stderr."""
    home = str(tmp_path / "home")

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["--home", home, *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
