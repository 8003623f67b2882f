"""The Honcho provider against a real Honcho server: opt-in, run only when ``HONCHO_URL`` is set (with
``HONCHO_API_KEY`` when the server wants one), e.g. a self-hosted Honcho on http://localhost:8000.

Everything else about the provider is tested against the local reference server
(test_honcho_provider.py); this checks the same calls are accepted by the real thing. Honcho reasons in
the background, so the test looks for a conclusion it wrote directly, polling for up to a minute.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

pytest.importorskip("honcho")

from mnemo.providers.honcho import HonchoProvider
from mnemo.scope import Scope

URL = os.environ.get("HONCHO_URL")

pytestmark = pytest.mark.skipif(not URL, reason="set HONCHO_URL to run against a real Honcho server")


def test_a_real_honcho_takes_turns_and_conclusions_and_gives_them_back_per_turn():
    run = uuid.uuid4().hex[:12]
    provider = HonchoProvider(scope=Scope(user_id=f"mnemo-live-{run}"))
    provider.initialize(
        f"live-{run}",
        {
            "base_url": URL,
            "api_key": os.environ.get("HONCHO_API_KEY", ""),
            "workspace": "mnemo-live-tests",
            "timeout": 30.0,
        },
    )
    try:
        provider.on_turn_complete("I keep bees on my roof", "How many hives?")
        provider.on_memory_write("add", "user", f"Keeps bees, run {run}")
        deadline = time.monotonic() + 60
        context = None
        while time.monotonic() < deadline:
            context = provider.enrich_turn("what do I keep on my roof?", [])
            if context and run in context:
                break
            time.sleep(2)
        assert context is not None and run in context
        assert run in provider.handle_tool_call("honcho_search", {"query": "bees"})
        provider.on_memory_write("remove", "user", "", f"run {run}")
        assert run not in provider.handle_tool_call("honcho_search", {"query": "bees"})
    finally:
        provider.shutdown()
