"""Shutting providers down: bounded, idempotent, after pending events, and also at interpreter exit."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
import weakref
from pathlib import Path

from mnemo.providers import ProviderRegistry

from ._fakes import Raising, Recorder, Sleeper, Stuck

MARGIN = 0.5


def started(*providers, **deadlines):
    registry = ProviderRegistry(**deadlines)
    for provider in providers:
        registry.register(provider)
    registry.initialize_all("session", {})
    return registry


def test_every_provider_is_shut_down_exactly_once_however_often_it_is_asked():
    a, b = Recorder("a"), Recorder("b")
    registry = started(a, b)
    registry.shutdown_all()
    registry.shutdown_all()
    assert a.calls_to("shutdown") == [()] and b.calls_to("shutdown") == [()]


def test_after_shutdown_nothing_is_active_and_hooks_do_nothing():
    provider = Recorder("a", context="x")
    registry = started(provider)
    registry.shutdown_all()
    assert registry.providers == ()
    assert registry.enrich_turn("hi", []) == []
    registry.on_turn_complete("hi", "hello")
    registry.on_compress([{"role": "user", "content": "x"}], 1)
    assert [hook for hook, _ in provider.calls] == ["is_available", "initialize", "capabilities", "shutdown"]


def test_shutdown_is_bounded_overall_not_per_provider(caplog):
    slow = [Sleeper(f"slow{i}", 2.0, ("shutdown",)) for i in range(3)]
    registry = started(*slow, Recorder("quick"), shutdown_timeout=0.3)
    started_at = time.monotonic()
    registry.shutdown_all()
    elapsed = time.monotonic() - started_at
    assert elapsed < 0.3 + MARGIN
    assert "slow0: shutdown did not finish within 0.3 s" in caplog.text


def test_a_raising_shutdown_neither_escapes_nor_stops_the_others():
    healthy = Recorder("healthy")
    registry = started(Raising("broken"), healthy)
    registry.shutdown_all()
    assert healthy.calls_to("shutdown") == [()]


def test_pending_events_reach_a_provider_before_it_is_shut_down():
    archive = Sleeper("archive", 0.2, ("on_turn_complete",))
    registry = started(archive)
    registry.on_turn_complete("last question", "last answer")
    registry.shutdown_all()
    assert [hook for hook, _ in archive.calls][-2:] == ["on_turn_complete", "shutdown"]


def test_a_provider_stuck_in_enrichment_does_not_stop_shutdown():
    stuck = Stuck("stuck")
    registry = started(stuck, enrich_timeout=0.1, shutdown_timeout=2)
    registry.enrich_turn("hi", [])
    started_at = time.monotonic()
    registry.shutdown_all()
    assert time.monotonic() - started_at < MARGIN
    assert stuck.calls_to("shutdown") == [()]
    stuck.release.set()


def test_a_collected_registry_shuts_its_providers_down_and_leaves_nothing_behind():
    provider = Recorder("a", context="x")
    registry = started(provider)
    assert registry.enrich_turn("hi", []) == [("a", "x")]
    registry.on_turn_complete("hi", "hello")
    alive = weakref.ref(registry)
    del registry
    gc.collect()
    assert alive() is None
    assert provider.calls_to("shutdown") == [()]


def run_python(source: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True, timeout=30
    )


PROVIDER = """
    import sys, threading
    from pathlib import Path
    from mnemo.providers import BaseProvider, ProviderRegistry

    class Flushing(BaseProvider):
        name = "flushing"
        def __init__(self, path):
            self.path = Path(path)
        def enrich_turn(self, user_message, messages):
            if user_message == "hang":
                threading.Event().wait()
            return None
        def on_turn_complete(self, user_message, assistant_response):
            with self.path.open("a") as log:
                log.write(f"turn {user_message}\\n")
        def shutdown(self):
            with self.path.open("a") as log:
                log.write("shutdown\\n")
"""


def test_providers_get_their_pending_events_and_are_shut_down_at_interpreter_exit(tmp_path: Path):
    marker = tmp_path / "shutdown.log"
    result = run_python(PROVIDER + f"""
    registry = ProviderRegistry(enrich_timeout=0.1)
    registry.register(Flushing({str(marker)!r}))
    registry.initialize_all("s", {{}})
    registry.enrich_turn("hang", [])
    registry.on_turn_complete("last", "bye")
    sys.exit(0)
    """)
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "turn last\nshutdown\n"


def test_an_explicit_shutdown_is_not_repeated_at_exit(tmp_path: Path):
    marker = tmp_path / "shutdown.log"
    result = run_python(PROVIDER + f"""
    registry = ProviderRegistry()
    registry.register(Flushing({str(marker)!r}))
    registry.initialize_all("s", {{}})
    registry.shutdown_all()
    """)
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "shutdown\n"


def test_a_registry_collected_before_exit_is_not_shut_down_again_at_exit(tmp_path: Path):
    marker = tmp_path / "shutdown.log"
    result = run_python(PROVIDER + f"""
    import gc
    def session():
        registry = ProviderRegistry()
        registry.register(Flushing({str(marker)!r}))
        registry.initialize_all("s", {{}})
    session()
    gc.collect()
    """)
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "shutdown\n"
