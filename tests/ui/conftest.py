"""A running ``mnemo ui`` on a seeded home, shared by a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mnemo.config import load_settings
from mnemo.tokens import TokenMap
from mnemo.ui import UIServer

from .seeding import Seeded, seed_home


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seed_home(tmp_path_factory.mktemp("ui-home"))


@pytest.fixture(scope="module")
def server(seeded: Seeded) -> Iterator[UIServer]:
    """``mnemo ui`` on the seeded home, as the command starts it, on a free port."""
    settings = load_settings(seeded.home)
    with UIServer(settings, port=0, tokens=TokenMap.from_settings(settings)) as ui:
        ui.start()
        yield ui
