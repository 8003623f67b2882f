"""Shared fixtures: one real MiniLM model per test session (loading it takes about a second)."""

from __future__ import annotations

import pytest

from mnemo.embeddings import MiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()
