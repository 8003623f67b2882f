"""Fixtures of the ``mnemo serve`` tests: asyncio for anyio, and a home configured for fast sessions."""

from __future__ import annotations

import pytest

from support.mcp_clients import write_config


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path):
    write_config(tmp_path / "home")
    return tmp_path / "home"
