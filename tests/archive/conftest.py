from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.archive import SessionArchive


@pytest.fixture
def archive(tmp_path: Path):
    with SessionArchive(tmp_path / "state.db") as opened:
        yield opened


def conversation(archive: SessionArchive, texts: list[str], **session) -> tuple[str, list[int]]:
    """A session whose messages alternate user/assistant with ``texts``; returns (id, message ids)."""
    session_id = archive.start_session(**session)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
    return session_id, archive.append_many(session_id, messages)
