"""Registering providers, initializing them for a session, and what the registry then serves."""

from __future__ import annotations

import logging

import pytest

from mnemo.errors import InvalidArgument
from mnemo.providers import ProviderError, ProviderRegistry

from ._fakes import Raising, Recorder, tool, tools


@pytest.fixture
def registry():
    registry = ProviderRegistry()
    yield registry
    registry.shutdown_all()


def names(registry):
    return [provider.name for provider in registry.providers]


def test_registering_a_non_conforming_object_names_what_is_missing(registry):
    class Half:
        name = "half"

        def enrich_turn(self, user_message, messages):
            return None

    with pytest.raises(TypeError, match=r"Half is not a MemoryProvider: missing is_available, initialize"):
        registry.register(Half())


def test_a_provider_needs_a_non_empty_name(registry):
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        registry.register(Recorder(""))


def test_a_duplicate_name_is_rejected(registry):
    registry.register(Recorder("mem0"))
    with pytest.raises(ProviderError, match="'mem0' is already registered"):
        registry.register(Recorder("mem0"))


def test_registering_after_initialization_is_rejected(registry):
    registry.initialize_all("s1", {})
    with pytest.raises(ProviderError, match="already initialized"):
        registry.register(Recorder("late"))


def test_initializing_twice_is_rejected(registry):
    registry.initialize_all("s1", {})
    with pytest.raises(ProviderError, match="already initialized"):
        registry.initialize_all("s1", {})


def test_a_session_key_is_required(registry):
    with pytest.raises(InvalidArgument, match="session_key"):
        registry.initialize_all("", {})


@pytest.mark.parametrize("setting", ["enrich_timeout", "compress_timeout", "shutdown_timeout"])
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "5", True])
def test_deadlines_must_be_positive_numbers(setting, value):
    with pytest.raises(InvalidArgument, match=setting):
        ProviderRegistry(**{setting: value})


def test_providers_are_initialized_in_order_with_their_own_config():
    order = []

    class Ordered(Recorder):
        def initialize(self, session_key, config):
            order.append(self.name)
            super().initialize(session_key, config)

    first, second = Ordered("first"), Ordered("second")
    registry = ProviderRegistry()
    registry.register(first)
    registry.register(second)
    registry.initialize_all("session-7", {"first": {"url": "http://127.0.0.1:1"}, "other": {"x": 1}})
    assert order == ["first", "second"]
    assert first.calls_to("initialize") == [("session-7", {"url": "http://127.0.0.1:1"})]
    assert second.calls_to("initialize") == [("session-7", {})]
    assert registry.providers == (first, second)
    registry.shutdown_all()


def test_provider_config_must_be_tables_keyed_by_name(registry):
    registry.register(Recorder("zep"))
    with pytest.raises(InvalidArgument, match="config\\['zep'\\]"):
        registry.initialize_all("s", {"zep": "http://127.0.0.1:1"})
    with pytest.raises(InvalidArgument, match="config"):
        registry.initialize_all("s", ["zep"])
    registry.initialize_all("s", {"zep": {"url": "http://127.0.0.1:1"}})
    assert [provider.name for provider in registry.providers] == ["zep"]


def test_the_name_given_at_registration_is_kept_for_the_session(registry):
    provider = Recorder("original")
    registry.register(provider)
    provider.name = "renamed"
    registry.initialize_all("s", {"original": {"k": 1}})
    assert provider.calls_to("initialize") == [("s", {"k": 1})]
    assert registry.capabilities("original").tool_names == frozenset()


def test_nothing_is_active_before_initialization(registry):
    registry.register(Recorder("a", context="x"))
    assert registry.providers == ()
    assert registry.enrich_turn("hi", []) == []


def test_an_unavailable_provider_is_dropped_and_logged(registry, caplog):
    registry.register(Recorder("absent", available=False))
    registry.register(Recorder("present"))
    with caplog.at_level(logging.INFO, logger="mnemo.providers"):
        registry.initialize_all("s", {})
    assert names(registry) == ["present"]
    assert "absent: dropped: not available" in caplog.text


def test_a_provider_that_fails_to_initialize_is_dropped_and_the_rest_kept(registry, caplog):
    class Failing(Recorder):
        def initialize(self, session_key, config):
            raise ConnectionError("backend unreachable")

    registry.register(Recorder("before"))
    registry.register(Failing("failing"))
    registry.register(Recorder("after"))
    registry.initialize_all("s", {})
    assert names(registry) == ["before", "after"]
    assert "failing: dropped: initialization failed: ConnectionError: backend unreachable" in caplog.text


def test_a_provider_whose_availability_check_raises_is_dropped(registry, caplog):
    class Confused(Recorder):
        def is_available(self):
            raise ImportError("no module named backend")

    registry.register(Confused("confused"))
    registry.initialize_all("s", {})
    assert registry.providers == ()
    assert "confused: dropped" in caplog.text


def test_malformed_capabilities_refuse_the_provider_but_it_is_still_shut_down(caplog):
    bad = Recorder("bad", capabilities={"tool_names": {"search"}})
    registry = ProviderRegistry()
    registry.register(bad)
    registry.initialize_all("s", {})
    assert registry.providers == ()
    assert "bad: refused: tool_names must match the schemas' function names" in caplog.text
    registry.shutdown_all()
    assert bad.calls_to("shutdown") == [()]


def test_a_provider_claiming_the_memory_tool_is_refused_whole(registry, caplog):
    registry.register(Recorder("greedy", capabilities=tools("recall", "memory")))
    registry.initialize_all("s", {})
    assert registry.providers == ()
    assert registry.tool_owner("recall") is None
    assert "greedy: refused: tool 'memory' is reserved by mnemo" in caplog.text


def test_reserved_tool_names_of_the_owner_are_protected(caplog):
    registry = ProviderRegistry(reserved_tool_names={"session_search"})
    registry.register(Recorder("archive-clone", capabilities=tools("session_search")))
    registry.initialize_all("s", {})
    assert registry.providers == ()
    assert "archive-clone: refused: tool 'session_search' is reserved" in caplog.text
    registry.shutdown_all()


def test_on_a_tool_name_collision_the_later_provider_is_refused_whole(registry, caplog):
    registry.register(Recorder("first", capabilities=tools("search")))
    registry.register(Recorder("second", capabilities=tools("search", "recall")))
    registry.initialize_all("s", {})
    assert names(registry) == ["first"]
    assert registry.tool_owner("search") == "first"
    assert registry.tool_owner("recall") is None
    assert "second: refused: tool 'search' is already served by provider 'first'" in caplog.text


def test_tool_schemas_come_in_registration_order_with_their_owners(registry):
    registry.register(Recorder("a", capabilities=tools("a_search", "a_list")))
    registry.register(Recorder("b"))
    registry.register(Recorder("c", capabilities=tools("c_search")))
    registry.initialize_all("s", {})
    assert registry.tool_schemas() == [tool("a_search"), tool("a_list"), tool("c_search")]
    assert {registry.tool_owner(name) for name in ("a_search", "a_list")} == {"a"}
    assert registry.tool_owner("c_search") == "c"
    assert registry.tool_owner("memory") is None


def test_capabilities_are_read_once_and_later_changes_have_no_effect(registry):
    provider = Recorder("fickle", capabilities=tools("search"))
    registry.register(provider)
    registry.initialize_all("s", {})
    provider.declared = {**tools("search", "delete_everything"), "suppresses_local_writes": True}
    provider.declared["tool_schemas"][0]["function"]["description"] = "changed"
    assert len(provider.calls_to("capabilities")) == 1
    assert registry.capabilities("fickle").tool_names == frozenset({"search"})
    assert registry.tool_schemas() == [tool("search")]
    assert registry.tool_owner("delete_everything") is None
    assert registry.suppresses_local_writes("memory") is False


def test_returned_schemas_are_copies(registry):
    registry.register(Recorder("a", capabilities=tools("search")))
    registry.initialize_all("s", {})
    registry.tool_schemas()[0]["function"]["name"] = "tampered"
    assert registry.tool_schemas() == [tool("search")]


def test_local_write_suppression_is_per_target_across_providers(registry):
    registry.register(Recorder("a", capabilities={"suppresses_local_writes": {"user": True}}))
    registry.register(Recorder("b"))
    registry.initialize_all("s", {})
    assert registry.suppresses_local_writes("user") is True
    assert registry.suppresses_local_writes("memory") is False


def test_a_raising_capabilities_call_refuses_only_that_provider(registry, caplog):
    class Opaque(Recorder):
        def capabilities(self):
            raise KeyError("tools")

    registry.register(Opaque("opaque"))
    registry.register(Raising("raising"))
    registry.initialize_all("s", {})
    assert names(registry) == ["raising"]
    assert "opaque: refused: capabilities() failed: KeyError" in caplog.text
