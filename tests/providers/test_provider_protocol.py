"""The MemoryProvider contract and the validation of what a provider declares."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mnemo.providers import BaseProvider, MemoryProvider, ProviderCapabilities, ProviderError
from mnemo.providers.protocol import missing_members

from ._fakes import tool, tools


class Adapter:
    """A client wrapped without inheriting anything from mnemo."""

    name = "adapter"

    def is_available(self):
        return True

    def initialize(self, session_key, config):
        pass

    def capabilities(self):
        return {}

    def enrich_turn(self, user_message, messages):
        return None

    def handle_tool_call(self, name, arguments):
        return "{}"

    def on_memory_write(self, action, target, content, old_text=None):
        pass

    def on_turn_complete(self, user_message, assistant_response):
        pass

    def on_compress(self, messages, compression_count):
        pass

    def shutdown(self):
        pass


def test_an_adapter_conforms_without_inheriting():
    assert isinstance(Adapter(), MemoryProvider)
    assert missing_members(Adapter()) == []


def test_an_object_lacking_hooks_does_not_conform_and_the_missing_ones_are_named():
    class Partial:
        name = "partial"

        def enrich_turn(self, user_message, messages):
            return None

    assert not isinstance(Partial(), MemoryProvider)
    assert missing_members(Partial()) == [
        "is_available", "initialize", "capabilities", "handle_tool_call",
        "on_memory_write", "on_turn_complete", "on_compress", "shutdown",
    ]


def test_base_provider_defaults_are_harmless():
    class Minimal(BaseProvider):
        name = "minimal"

    provider = Minimal()
    assert isinstance(provider, MemoryProvider)
    assert provider.is_available() is True
    assert provider.capabilities() == {}
    assert provider.enrich_turn("hi", []) is None
    assert provider.on_memory_write("add", "memory", "x") is None
    assert provider.shutdown() is None
    refused = json.loads(provider.handle_tool_call("search", {}))
    assert refused["success"] is False and "minimal" in refused["error"]


def test_empty_declaration_means_no_tools_and_no_suppression():
    for declared in ({}, None):
        capabilities = ProviderCapabilities.from_declared(declared)
        assert capabilities.tool_names == frozenset()
        assert capabilities.tool_schemas == ()
        assert dict(capabilities.suppresses_local_writes) == {"memory": False, "user": False}


def test_boolean_suppression_applies_to_both_targets():
    capabilities = ProviderCapabilities.from_declared({"suppresses_local_writes": True})
    assert dict(capabilities.suppresses_local_writes) == {"memory": True, "user": True}


def test_per_target_suppression_defaults_missing_targets_to_false():
    capabilities = ProviderCapabilities.from_declared({"suppresses_local_writes": {"user": True}})
    assert dict(capabilities.suppresses_local_writes) == {"memory": False, "user": True}
    assert capabilities.suppresses("user") and not capabilities.suppresses("memory")


def test_bare_function_schemas_are_accepted_and_served_wrapped():
    bare = tool("bare")["function"]
    capabilities = ProviderCapabilities.from_declared(
        {"tool_names": ["wrapped", "bare"], "tool_schemas": [tool("wrapped"), bare]}
    )
    assert capabilities.tool_names == frozenset({"wrapped", "bare"})
    assert capabilities.tool_schemas == (tool("wrapped"), tool("bare"))


def test_capabilities_are_immutable_and_detached_from_the_providers_objects():
    declared = tools("search")
    capabilities = ProviderCapabilities.from_declared(declared)
    declared["tool_schemas"][0]["function"]["name"] = "renamed"
    declared["tool_names"].add("other")
    assert capabilities.tool_schemas[0]["function"]["name"] == "search"
    assert capabilities.tool_names == frozenset({"search"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        capabilities.tool_names = frozenset()  # type: ignore[misc]
    with pytest.raises(TypeError):
        capabilities.suppresses_local_writes["memory"] = True  # type: ignore[index]


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        (["search"], "must return a dict"),
        ({"tools": []}, "unknown capability keys: tools"),
        ({"tool_names": "search", "tool_schemas": [tool("search")]}, "tool_names must be a set"),
        ({"tool_names": {"search"}, "tool_schemas": tool("search")}, "tool_schemas must be a list"),
        ({"tool_names": {"search"}, "tool_schemas": ["search"]}, "tool_schemas[0] must be a dict"),
        ({"tool_names": {"has space"}, "tool_schemas": [tool("has space")]}, "must match"),
        ({"tool_names": {"search"}, "tool_schemas": [{"type": "function", "function": "search"}]}, "'function' must be a dict"),
        ({"tool_names": {"search"}, "tool_schemas": [tool("search"), tool("search")]}, "more than once"),
        ({"tool_names": {"search"}, "tool_schemas": []}, "tool_names must match the schemas"),
        ({"tool_names": set(), "tool_schemas": [tool("search")]}, "tool_names must match the schemas"),
        (
            {"tool_names": {"s"}, "tool_schemas": [{"type": "function", "function": {"name": "s", "parameters": "x"}}]},
            "'parameters' must be a JSON schema object",
        ),
        ({"suppresses_local_writes": "yes"}, "must be a bool or"),
        ({"suppresses_local_writes": {"memory": 1}}, "suppresses_local_writes['memory'] must be a bool"),
        ({"suppresses_local_writes": {"notes": True}}, "unknown targets"),
    ],
)
def test_malformed_declarations_are_refused_with_the_problem_named(declared, problem):
    with pytest.raises(ProviderError) as refused:
        ProviderCapabilities.from_declared(declared)
    assert problem in str(refused.value)
