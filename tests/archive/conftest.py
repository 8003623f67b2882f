from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.archive import Archive
from mnemo.storage import open_archive

ENGINES = ("sqlite", "postgres")


@pytest.fixture(params=ENGINES)
def archive_target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where an archive lives, once per engine: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return tmp_path / "state.db"


@pytest.fixture
def separate_target(request: pytest.FixtureRequest, archive_target: str | Path, tmp_path: Path) -> str | Path:
    """Where a second archive lives, on ``archive_target``'s engine but sharing nothing with it."""
    if isinstance(archive_target, Path):
        return tmp_path / "separate.db"
    server = request.getfixturevalue("postgres_server")
    name = server.create()
    request.addfinalizer(lambda: server.drop(name))
    return server.url(name)


@pytest.fixture
def archive(archive_target):
    with open_archive(archive_target) as opened:
        yield opened


def conversation(archive: Archive, texts: list[str], **session) -> tuple[str, list[int]]:
    """A session whose messages alternate user/assistant with ``texts``; returns (id, message ids)."""
    session_id = archive.start_session(**session)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
    return session_id, archive.append_many(session_id, messages)
