"""The optional lifecycle hooks: which thread runs each, how long the caller waits, and isolation when a
hook raises, hangs or is missing. Prefetch: served, dropped when stale, never blocking when stuck.

Deadlines here are the feature under test; the margins are generous so a loaded machine passes.
"""

from __future__ import annotations

import threading
import time

import pytest

from mnemo.providers.protocol import OPTIONAL_HOOKS

from ._fakes import Hooked, Raising, RaisingHooked, Recorder, SlowHooked, StuckHooked, timed

MARGIN = 0.5


def wait_until_inside(provider, hook):
    """Block until a Stuck provider is held inside ``hook``."""
    deadline = time.monotonic() + 5
    while not provider.entered.get(hook) and time.monotonic() < deadline:
        time.sleep(0.01)


def drive_lifecycle(registry):
    registry.on_turn_start(1, "hi")
    registry.on_delegation("summarise the logs", "three errors", "child-1")
    registry.prefetch("hi")
    registry.on_session_switch("next", "session", False, False)
    registry.on_session_end([{"role": "user", "content": "bye"}])


# -- detection ---------------------------------------------------------------------------------------


def test_the_registry_detects_which_optional_hooks_a_provider_defines(session):
    registry = session(Recorder("plain"), Hooked("full"))
    assert registry.hooks("plain") == frozenset()
    assert registry.hooks("full") == frozenset(OPTIONAL_HOOKS)


def test_a_provider_without_optional_hooks_still_gets_its_events(session):
    plain = Recorder("plain")
    registry = session(plain)
    drive_lifecycle(registry)
    registry.on_turn_complete("hi", "hello")
    assert plain.wait_for("on_turn_complete") == [("hi", "hello")]
    assert {hook for hook, _ in plain.calls} == {"is_available", "initialize", "capabilities", "on_turn_complete"}


def test_an_optional_hook_that_raises_is_logged_with_the_provider_name(session, caplog):
    healthy = Hooked("healthy")
    registry = session(RaisingHooked("broken"), healthy)
    drive_lifecycle(registry)
    healthy.wait_for("on_delegation")
    assert healthy.calls_to("on_session_end") == [([{"role": "user", "content": "bye"}],)]
    assert any(r.message.startswith("broken: on_session_switch failed") for r in caplog.records)
    assert any(r.message.startswith("broken: on_session_end failed") for r in caplog.records)


# -- events on the provider's event worker ---------------------------------------------------------


def test_turn_start_runs_on_the_event_worker_in_order(session):
    provider = Hooked("a")
    registry = session(provider)
    registry.on_turn_start(1, "first")
    registry.on_turn_complete("first", "reply")
    registry.on_turn_start(2, "second")
    provider.wait_for("on_turn_start", 2)
    assert [hook for hook, _ in provider.calls[3:]] == ["on_turn_start", "on_turn_complete", "on_turn_start"]
    assert provider.calls_to("on_turn_start") == [(1, "first"), (2, "second")]
    assert provider.threads["on_turn_start"].name == "mnemo-a-events"


def test_delegation_is_fire_and_forget_on_the_event_worker(session):
    provider = StuckHooked("a", blocking=("on_delegation",))
    registry = session(provider)
    _, elapsed = timed(registry.on_delegation, "task", "result", "child")
    assert elapsed < MARGIN
    provider.release.set()
    assert provider.wait_for("on_delegation") == [("task", "result", "child")]
    assert provider.threads["on_delegation"].name == "mnemo-a-events"


# -- switch and end: after pending events, waited for under a deadline ---------------------------------


def test_a_switch_is_delivered_after_the_events_of_the_old_session(session):
    provider = SlowHooked("a", 0.3, ("on_turn_complete",))
    registry = session(provider)
    registry.on_turn_complete("last of the old session", "ok")
    registry.on_session_switch("new", "session", False, False)
    hooks = [hook for hook, _ in provider.calls]
    assert hooks.index("on_turn_complete") < hooks.index("on_session_switch")
    assert provider.calls_to("on_session_switch") == [("new", "session", False, False)]
    assert provider.threads["on_session_switch"].name == "mnemo-a-events"


def test_a_hung_switch_costs_at_most_the_enrich_deadline(session):
    provider = StuckHooked("a", blocking=("on_session_switch",))
    registry = session(provider, enrich_timeout=0.3)
    _, elapsed = timed(registry.on_session_switch, "new", None, True, False)
    assert elapsed < 0.3 + MARGIN


def test_a_provider_stuck_in_a_switch_is_not_handed_another(session):
    provider = StuckHooked("a", blocking=("on_session_switch",))
    registry = session(provider, enrich_timeout=0.2)
    registry.on_session_switch("one", None, False, False)
    _, elapsed = timed(registry.on_session_switch, "two", None, False, False)
    assert elapsed < MARGIN
    provider.release.set()
    provider.wait_for("on_session_switch")
    time.sleep(0.1)
    assert provider.calls_to("on_session_switch") == [("one", None, False, False)]


def test_session_end_gets_normalised_copies_of_the_messages(session):
    first, second = Hooked("a"), Hooked("b")
    registry = session(first, second)
    registry.on_session_end([{"role": "user", "content": [{"type": "text", "text": "bye"}]}])
    [(seen_by_first,)] = first.calls_to("on_session_end")
    [(seen_by_second,)] = second.calls_to("on_session_end")
    assert seen_by_first == [{"role": "user", "content": "bye"}]
    assert seen_by_first is not seen_by_second


def test_a_hung_session_end_costs_at_most_the_compress_deadline(session):
    provider = StuckHooked("a", blocking=("on_session_end",))
    registry = session(provider, compress_timeout=0.3)
    _, elapsed = timed(registry.on_session_end, [])
    assert elapsed < 0.3 + MARGIN


def test_session_end_waits_for_a_provider_within_the_deadline(session):
    provider = SlowHooked("a", 0.3, ("on_session_end",))
    registry = session(provider, compress_timeout=5)
    registry.on_session_end([])
    assert provider.calls_to("on_session_end") == [([],)]


# -- prefetch ----------------------------------------------------------------------------------------


def test_a_prefetch_is_served_instead_of_enrich_turn(session):
    provider = Hooked("a", context="from enrich")
    provider.prefetched = "from prefetch"
    registry = session(provider)
    registry.on_turn_complete("what about staging?", "ok")
    registry.prefetch("what about staging?")
    assert registry.enrich_turn("and production?", []) == [("a", "from prefetch")]
    assert provider.calls_to("prefetch") == [("what about staging?",)]
    assert provider.calls_to("enrich_turn") == []


def test_prefetch_runs_on_the_enrich_worker_after_the_turn_was_delivered(session):
    provider = SlowHooked("a", 0.2, ("on_turn_complete",), context="x")
    registry = session(provider)
    registry.on_turn_complete("q", "a")
    registry.prefetch("q")
    provider.wait_for("prefetch")
    hooks = [hook for hook, _ in provider.calls]
    assert hooks.index("on_turn_complete") < hooks.index("prefetch")
    assert provider.threads["prefetch"].name == "mnemo-a-enrich"


def test_a_prefetch_is_served_once(session):
    provider = Hooked("a", context="fresh")
    provider.prefetched = "prefetched"
    registry = session(provider)
    registry.prefetch("q")
    assert registry.enrich_turn("next", []) == [("a", "prefetched")]
    assert registry.enrich_turn("next again", []) == [("a", "fresh")]


def test_a_finished_slow_prefetch_costs_the_next_turn_nothing(session):
    provider = SlowHooked("a", 0.4, ("prefetch", "enrich_turn"), context="slow answer")
    registry = session(provider, enrich_timeout=5)
    registry.prefetch("q")
    provider.wait_for("prefetch")
    context, elapsed = timed(registry.enrich_turn, "next", [])
    assert context == [("a", "slow answer")]
    assert elapsed < 0.4


def test_a_prefetch_still_running_is_waited_for_within_the_deadline(session):
    provider = SlowHooked("a", 0.3, ("prefetch",), context="late but in time")
    registry = session(provider, enrich_timeout=5)
    registry.prefetch("q")
    assert registry.enrich_turn("next", []) == [("a", "late but in time")]


@pytest.mark.parametrize(
    "boundary",
    [lambda registry: registry.on_session_switch("new", None, True, False), lambda registry: registry.on_session_end([])],
    ids=["switch", "end"],
)
def test_a_session_boundary_drops_the_prefetch(session, boundary):
    provider = Hooked("a", context="fresh")
    provider.prefetched = "stale"
    registry = session(provider)
    registry.prefetch("old session question")
    boundary(registry)
    assert registry.enrich_turn("new session question", []) == [("a", "fresh")]


def test_a_dropped_prefetch_still_running_delays_the_next_turn_but_never_loses_it(session):
    provider = StuckHooked("a", blocking=("prefetch",), context="fresh")
    registry = session(provider, enrich_timeout=5)
    registry.prefetch("old session question")
    wait_until_inside(provider, "prefetch")
    registry.on_session_switch("new", None, True, False)
    threading.Timer(0.2, provider.release.set).start()
    assert registry.enrich_turn("new session question", []) == [("a", "fresh")]


def test_a_dropped_prefetch_that_stays_stuck_costs_one_deadline_then_nothing(session):
    provider = StuckHooked("a", blocking=("prefetch",), context="x")
    registry = session(provider, enrich_timeout=0.3)
    registry.prefetch("q")
    wait_until_inside(provider, "prefetch")
    registry.on_session_switch("new", None, False, False)
    context, elapsed = timed(registry.enrich_turn, "q2", [])
    assert context == [] and elapsed < 0.3 + MARGIN
    context, elapsed = timed(registry.enrich_turn, "q3", [])
    assert context == [] and elapsed < MARGIN


def test_a_newer_prefetch_replaces_an_unserved_one(session):
    provider = Hooked("a")
    registry = session(provider)
    provider.prefetched = "first"
    registry.prefetch("q1")
    provider.wait_for("prefetch")
    provider.prefetched = "second"
    registry.prefetch("q2")
    assert registry.enrich_turn("q3", []) == [("a", "second")]


def test_a_stuck_prefetch_never_blocks(session):
    provider = StuckHooked("a", blocking=("prefetch",), context="x")
    registry = session(provider, enrich_timeout=0.3)
    _, elapsed = timed(registry.prefetch, "q1")
    assert elapsed < MARGIN
    context, elapsed = timed(registry.enrich_turn, "q2", [])
    assert context == [] and elapsed < 0.3 + MARGIN
    # Still stuck: no new prefetch, no enrich_turn, no waiting.
    _, elapsed = timed(registry.prefetch, "q2")
    context, waited = timed(registry.enrich_turn, "q3", [])
    assert context == [] and elapsed < MARGIN and waited < MARGIN
    assert provider.entered == {"prefetch": 1}
    assert provider.calls_to("enrich_turn") == []


def test_a_prefetch_that_raises_leaves_the_turn_without_its_context(session, caplog):
    healthy = Hooked("healthy", context="ok")
    registry = session(RaisingHooked("broken"), healthy)
    registry.prefetch("q")
    assert registry.enrich_turn("q2", []) == [("healthy", "ok")]
    assert any(r.message.startswith("broken: prefetch failed") for r in caplog.records)


def test_a_provider_without_prefetch_is_asked_every_turn(session):
    provider = Recorder("a", context="live")
    registry = session(provider)
    registry.prefetch("q")
    assert registry.enrich_turn("q2", []) == [("a", "live")]
    assert provider.calls_to("enrich_turn") == [("q2", ())]


# -- on_compress returning text -----------------------------------------------------------------------


class Extracting(Recorder):
    def on_compress(self, messages, compression_count):
        super().on_compress(messages, compression_count)
        return self.context


def test_on_compress_text_is_collected_in_registration_order(session):
    registry = session(Extracting("a", context=" kept fact \n"), Recorder("silent"), Extracting("b", context="other"))
    assert registry.on_compress([{"role": "user", "content": "x"}], 1) == [("a", "kept fact"), ("b", "other")]


def test_on_compress_text_of_a_late_or_failing_provider_is_left_out(session):
    stuck = StuckHooked("late", blocking=("on_compress",))
    registry = session(stuck, Raising("broken"), Extracting("ok", context="kept"), compress_timeout=0.3)
    assert registry.on_compress([], 1) == [("ok", "kept")]


def test_on_compress_non_text_answers_are_ignored(session):
    registry = session(Extracting("a", context=42))
    assert registry.on_compress([], 1) == []


def test_every_lifecycle_call_after_shutdown_is_a_no_op(session):
    provider = Hooked("a")
    registry = session(provider)
    registry.shutdown_all()
    before = list(provider.calls)
    drive_lifecycle(registry)
    assert registry.enrich_turn("q", []) == []
    assert provider.calls == before


def test_lifecycle_events_run_on_the_event_worker(session):
    provider = Hooked("a", context="x")
    registry = session(provider)
    drive_lifecycle(registry)
    provider.wait_for("on_session_end")
    assert {hook: thread.name for hook, thread in provider.threads.items() if hook in OPTIONAL_HOOKS} == {
        "on_turn_start": "mnemo-a-events",
        "on_delegation": "mnemo-a-events",
        "on_session_switch": "mnemo-a-events",
        "on_session_end": "mnemo-a-events",
    }


def test_every_turn_of_a_back_and_forth_is_served_from_its_prefetch(session):
    provider = Hooked("a", context="live")
    registry = session(provider)
    for turn in range(20):
        provider.prefetched = f"for turn {turn + 1}"
        registry.prefetch(f"question {turn}")
        assert registry.enrich_turn(f"question {turn + 1}", []) == [("a", f"for turn {turn + 1}")]
    assert provider.calls_to("enrich_turn") == []
