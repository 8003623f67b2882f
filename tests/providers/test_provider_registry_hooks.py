"""The per-turn hooks: parallel enrichment under a deadline, background events, compression, tools.

Deadlines here are the feature under test; the margins are generous so a loaded machine passes.
"""

from __future__ import annotations

import json
import threading
import time

from ._fakes import Raising, Recorder, Sleeper, Stuck, timed, tools

MARGIN = 0.5


# -- enrich_turn -----------------------------------------------------------------------------------


def test_context_is_labelled_by_provider_in_registration_order(session):
    registry = session(Recorder("zep", context="likes tea"), Recorder("honcho", context="  works nights \n"))
    assert registry.enrich_turn("hi", []) == [("zep", "likes tea"), ("honcho", "works nights")]


def test_none_blank_and_non_text_answers_are_dropped(session):
    registry = session(
        Recorder("none"), Recorder("blank", context=" \n\t"), Recorder("number", context=42), Recorder("real", context="x")
    )
    assert registry.enrich_turn("hi", []) == [("real", "x")]


def test_providers_see_the_user_message_and_the_history(session):
    provider = Recorder("a")
    registry = session(provider)
    history = [{"role": "user", "content": "earlier"}, {"role": "user", "content": "hi"}]
    registry.enrich_turn("hi", history)
    [(message, seen)] = provider.calls_to("enrich_turn")
    assert message == "hi"
    assert list(seen) == history


def test_without_providers_enrichment_is_empty(session):
    assert session().enrich_turn("hi", []) == []


def test_providers_are_asked_in_parallel(session):
    registry = session(*(Sleeper(f"p{i}", 0.4, ("enrich_turn",), context=str(i)) for i in range(4)))
    context, elapsed = timed(registry.enrich_turn, "hi", [])
    assert context == [("p0", "0"), ("p1", "1"), ("p2", "2"), ("p3", "3")]
    assert elapsed < 0.4 + MARGIN


def test_a_slow_provider_does_not_delay_the_turn_past_the_deadline(session, caplog):
    registry = session(Sleeper("slow", 2.0, ("enrich_turn",), context="late"), Recorder("fast", context="on time"),
                       enrich_timeout=0.3)
    context, elapsed = timed(registry.enrich_turn, "hi", [])
    assert context == [("fast", "on time")]
    assert elapsed < 0.3 + MARGIN
    assert "slow: enrich_turn missed the 0.30 s deadline" in caplog.text


def test_a_stuck_provider_is_not_called_again_until_its_call_returns(session):
    stuck = Stuck("stuck", context="finally")
    registry = session(stuck, Recorder("fast", context="ok"), enrich_timeout=0.3)
    assert registry.enrich_turn("one", []) == [("fast", "ok")]
    context, elapsed = timed(registry.enrich_turn, "two", [])
    assert context == [("fast", "ok")]
    assert elapsed < MARGIN  # nobody to wait for: the stuck provider was not asked
    assert stuck.entered == {"enrich_turn": 1}

    stuck.release.set()
    deadline = time.monotonic() + 5
    while "stuck" not in dict(registry.enrich_turn("three", [])) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [args[0] for args in stuck.calls_to("enrich_turn")][:2] == ["one", "three"]


def test_a_late_answer_is_not_given_to_a_later_turn(session):
    slow = Sleeper("slow", 0.4, ("enrich_turn",), context="for turn one")
    registry = session(slow, enrich_timeout=0.1)
    assert registry.enrich_turn("one", []) == []
    slow.wait_for("enrich_turn")
    slow.context = "for turn two"
    slow.slow = ()
    assert registry.enrich_turn("two", []) == [("slow", "for turn two")]


# -- fire-and-forget events ----------------------------------------------------------------------


def test_memory_writes_reach_every_provider_in_order_on_daemon_threads(session):
    a, b = Recorder("a"), Recorder("b")
    registry = session(a, b)
    registry.on_memory_write("add", "memory", "likes tea")
    registry.on_memory_write("replace", "user", "likes coffee", old_text="tea")
    for provider in (a, b):
        assert provider.wait_for("on_memory_write", 2) == [
            ("add", "memory", "likes tea", None),
            ("replace", "user", "likes coffee", "tea"),
        ]
        assert provider.threads["on_memory_write"].daemon
        assert provider.threads["on_memory_write"] is not threading.current_thread()


def test_turn_completion_reaches_providers_in_the_background(session):
    provider = Recorder("archive")
    registry = session(provider)
    registry.on_turn_complete("what's the weather?", "sunny")
    assert provider.wait_for("on_turn_complete") == [("what's the weather?", "sunny")]
    assert provider.threads["on_turn_complete"].daemon


def test_fire_and_forget_hooks_return_while_the_provider_is_still_busy(session):
    blocked = Stuck("blocked", blocking=("on_turn_complete", "on_memory_write"))
    registry = session(blocked)
    registry.on_turn_complete("hi", "hello")
    registry.on_memory_write("add", "memory", "x")
    assert blocked.calls_to("on_turn_complete") == [] and blocked.calls_to("on_memory_write") == []
    blocked.release.set()
    assert blocked.wait_for("on_memory_write") == [("add", "memory", "x", None)]


# -- on_compress -----------------------------------------------------------------------------------


def test_compression_waits_for_a_slow_but_timely_provider_on_a_non_daemon_thread(session):
    slow = Sleeper("graph", 0.3, ("on_compress",))
    registry = session(slow, compress_timeout=5)
    registry.on_compress([{"role": "user", "content": "remember this"}], 1)
    assert slow.calls_to("on_compress") == [([{"role": "user", "content": "remember this"}], 1)]
    assert not slow.threads["on_compress"].daemon


def test_compression_is_bounded_by_its_deadline(session, caplog):
    slow = Sleeper("graph", 1.0, ("on_compress",))
    fast = Recorder("archive")
    registry = session(slow, fast, compress_timeout=0.3)
    _, elapsed = timed(registry.on_compress, [{"role": "user", "content": "x"}], 1)
    assert elapsed < 0.3 + MARGIN
    assert len(fast.calls_to("on_compress")) == 1
    assert "graph: on_compress still running after 0.3 s" in caplog.text


def test_compression_messages_are_normalised_to_role_and_text(session):
    provider = Recorder("graph")
    registry = session(provider)
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}},
                                     {"type": "text", "text": "at this"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": '{"success": true}', "tool_call_id": "1"},
    ]
    registry.on_compress(messages, 3)
    [(seen, count)] = provider.calls_to("on_compress")
    assert count == 3
    assert seen == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "look\nat this"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "content": '{"success": true}'},
    ]
    assert messages[2]["tool_calls"] == [{"id": "1"}]  # the caller's messages are untouched


# -- tools -----------------------------------------------------------------------------------------


def test_tool_calls_reach_the_declaring_provider_with_dict_arguments(session):
    provider = Recorder("zep", capabilities=tools("zep_search"))
    registry = session(provider)
    result = json.loads(registry.handle_tool_call("zep_search", {"query": "tea"}))
    assert result == {"success": True, "provider": "zep", "tool": "zep_search", "arguments": {"query": "tea"}}


def test_tool_arguments_may_arrive_as_a_json_string(session):
    provider = Recorder("zep", capabilities=tools("zep_search"))
    registry = session(provider)
    registry.handle_tool_call("zep_search", '{"query": "tea"}')
    assert provider.calls_to("handle_tool_call") == [("zep_search", {"query": "tea"})]


def test_malformed_tool_arguments_are_refused_before_the_provider_sees_them(session):
    provider = Recorder("zep", capabilities=tools("zep_search"))
    registry = session(provider)
    result = json.loads(registry.handle_tool_call("zep_search", "{not json"))
    assert result["success"] is False and "not valid JSON" in result["error"]
    assert provider.calls_to("handle_tool_call") == []


def test_an_unknown_tool_is_a_json_failure(session):
    registry = session(Recorder("zep", capabilities=tools("zep_search")))
    result = json.loads(registry.handle_tool_call("memory", {}))
    assert result == {"success": False, "error": "unknown tool 'memory'"}


def test_a_tool_returning_no_text_is_a_json_failure_naming_the_provider(session):
    class Sloppy(Recorder):
        def handle_tool_call(self, name, arguments):
            return {"success": True}

    registry = session(Sloppy("sloppy", capabilities=tools("s_tool")))
    result = json.loads(registry.handle_tool_call("s_tool", {}))
    assert result["success"] is False and "'sloppy'" in result["error"]


# -- isolation -------------------------------------------------------------------------------------


def test_a_raising_provider_does_not_disturb_the_others_in_any_hook(session, caplog):
    healthy = Recorder("healthy", context="fine", capabilities=tools("h_tool"))
    registry = session(Raising("broken", capabilities=tools("b_tool")), healthy)

    assert registry.enrich_turn("hi", []) == [("healthy", "fine")]
    registry.on_memory_write("add", "memory", "x")
    registry.on_turn_complete("hi", "hello")
    registry.on_compress([{"role": "user", "content": "x"}], 1)
    failed = json.loads(registry.handle_tool_call("b_tool", {}))
    assert failed["success"] is False
    assert "'broken'" in failed["error"] and "RuntimeError: broken is broken" in failed["error"]
    assert json.loads(registry.handle_tool_call("h_tool", {}))["success"] is True

    assert healthy.wait_for("on_memory_write") and healthy.wait_for("on_turn_complete")
    assert len(healthy.calls_to("on_compress")) == 1
    registry.shutdown_all()
    assert healthy.calls_to("shutdown") == [()]
    for hook in ("enrich_turn", "on_memory_write", "on_turn_complete", "on_compress", "shutdown"):
        assert f"broken: {hook} failed: RuntimeError: broken is broken" in caplog.text
    assert "broken: tool b_tool failed" in caplog.text


def test_a_provider_keeps_working_after_raising(session):
    class Flaky(Recorder):
        failures = 1

        def enrich_turn(self, user_message, messages):
            if self.failures:
                self.failures -= 1
                raise TimeoutError("hiccup")
            return super().enrich_turn(user_message, messages)

    registry = session(Flaky("flaky", context="back"))
    assert registry.enrich_turn("one", []) == []
    assert registry.enrich_turn("two", []) == [("flaky", "back")]


def test_events_for_a_hung_provider_are_dropped_beyond_a_bounded_backlog(session, caplog):
    hung = Stuck("hung", blocking=("on_turn_complete",))
    registry = session(hung, shutdown_timeout=0.5)
    for turn in range(1000):
        registry.on_turn_complete(f"q{turn}", "a")
    assert "dropped" not in caplog.text
    registry.on_turn_complete("one too many", "a")
    assert "hung: on_turn_complete dropped: the provider is not keeping up" in caplog.text
    hung.release.set()
