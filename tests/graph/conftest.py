"""Fixtures for the memory graph tests: a graph on a fresh ``state.db`` with a hand-moved clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mnemo.graph import MemoryGraph

from ._support import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "state.db"


@pytest.fixture
def graph(db_path, clock) -> Iterator[MemoryGraph]:
    with MemoryGraph(db_path, clock=clock) as opened:
        yield opened
