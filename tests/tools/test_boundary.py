"""The tool boundary: every tool answers any arguments with JSON, names the field at fault, quotes at
most a short excerpt of it, and changes nothing when it refuses (issue 16, points 4-7)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import AgentMemory
from mnemo.curated.ops import Add, Replace
from mnemo.errors import InvalidArgument
from mnemo.tools._json import MAX_ARGUMENT_DEPTH, parse_arguments

from .conftest import TOOL_NAMES, snapshot

# A valid call per tool, so a test can spoil exactly one field of it.
VALID = {
    "memory": {"target": "memory", "action": "add", "content": "A new fact."},
    "session_search": {"action": "discover", "query": "hello"},
    "recall": {"query": "tea"},
    "remember": {"content": "A new memory."},
    "relate": {"source": "m1", "target": "m2", "relation": "related_to"},
    "forget": {"id": "m1"},
}


def call(agent: AgentMemory, name: str, arguments: object) -> dict:
    result = agent.handle_tool_call(name, arguments)
    assert isinstance(result, str)
    return json.loads(result)


# --- point 4: nesting and lone surrogates ---------------------------------------------------------


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_deeply_nested_json_is_refused_not_a_recursion_error(agent: AgentMemory, name: str) -> None:
    before = snapshot(agent)
    result = call(agent, name, '{"a":' * 10_000 + "1" + "}" * 10_000)
    assert result["success"] is False
    assert result["field"] == "arguments" or "arguments" in result["error"]
    assert "nests deeper" in result["error"]
    assert snapshot(agent) == before


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_deeply_nested_unclosed_json_is_refused(agent: AgentMemory, name: str) -> None:
    assert call(agent, name, "[" * 100_000)["success"] is False


def test_a_deeply_nested_dict_is_refused_naming_where(agent: AgentMemory) -> None:
    nested: dict = {}
    inner = nested
    for _ in range(5_000):
        inner["a"] = {}
        inner = inner["a"]
    result = call(agent, "memory", {"target": "memory", "action": "add", "content": nested})
    assert result["success"] is False
    assert result["field"].startswith("content.a.a")


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_a_number_too_long_to_read_is_refused(agent: AgentMemory, name: str) -> None:
    result = call(agent, name, '{"limit": ' + "9" * 5000 + "}")
    assert result["success"] is False
    assert result["field"] == "arguments"


def test_nesting_up_to_the_limit_still_parses() -> None:
    text = '{"a":' + "[" * (MAX_ARGUMENT_DEPTH - 1) + "]" * (MAX_ARGUMENT_DEPTH - 1) + "}"
    assert parse_arguments(text) == {"a": json.loads(text)["a"]}


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"content": "[" * 1000 + '\\"{' * 100})
    assert parse_arguments(text)["content"].startswith("[[[")


@pytest.mark.parametrize(
    "arguments",
    [
        {"target": "memory", "action": "add", "content": "tea \ud800 time"},
        '{"target": "memory", "action": "add", "content": "tea \\udc00 time"}',
        {"target": "memory", "operations": [{"action": "add", "content": "ok"}, {"action": "add", "content": "\udfff"}]},
    ],
)
def test_a_lone_surrogate_in_curated_content_is_refused_naming_the_field(agent: AgentMemory, arguments) -> None:
    before = snapshot(agent)
    result = call(agent, "memory", arguments)
    assert result["success"] is False
    assert result["field"].endswith("content")
    assert "surrogate" in result["error"]
    assert snapshot(agent) == before


# --- point 5: NUL never reaches MEMORY.md ---------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"target": "memory", "action": "add", "content": "tea\x00time"},
        {"target": "user", "action": "replace", "old_text": "Fri\x00", "content": "x"},
        {"target": "memory", "operations": [{"action": "add", "content": "a\x00b"}]},
    ],
)
def test_the_memory_tool_refuses_nul_characters(agent: AgentMemory, arguments: dict) -> None:
    before = snapshot(agent)
    result = call(agent, "memory", arguments)
    assert result["success"] is False
    assert "NUL" in result["error"]
    assert snapshot(agent) == before


@pytest.mark.parametrize("op", [Add("tea\x00time"), Replace("Fridays", "tea\x00time"), Add("tea \ud800")])
def test_the_curated_store_refuses_unstorable_text_whatever_the_door(agent: AgentMemory, op) -> None:
    before = agent.store.path("memory").read_bytes()
    with pytest.raises(InvalidArgument) as refused:
        agent.store.apply("memory", op)
    assert refused.value.field == "content"
    assert agent.store.path("memory").read_bytes() == before


def test_the_curated_store_refuses_nul_in_old_text(agent: AgentMemory) -> None:
    with pytest.raises(InvalidArgument) as refused:
        agent.store.apply("memory", Replace("Fri\x00days", "x"))
    assert refused.value.field == "old_text"


# --- point 6: errors quote at most a short excerpt ------------------------------------------------

HUGE = "x" * 1_000_000

SPOILED = [
    ("forget", {"id": HUGE}),
    ("memory", {"target": HUGE, "action": "add", "content": "x"}),
    ("memory", {"target": "memory", "action": HUGE, "content": "x"}),
    ("memory", {"target": "memory", "action": "remove", "old_text": HUGE}),
    ("recall", {"query": "tea", "since": HUGE}),
    ("recall", {"query": "tea", "until": HUGE}),
    ("recall", {"query": "tea", "types": [HUGE]}),
    ("session_search", {"action": "read", "session_id": HUGE}),
    ("session_search", {"action": "discover", "query": "x", "since": HUGE}),
    ("session_search", {"action": HUGE}),
    ("session_search", {"action": "discover", "query": "x", "role": HUGE}),
    ("remember", {"content": "x", "type": HUGE}),
    ("remember", {"content": "x", "relations": [{"target": HUGE, "relation": "related_to"}]}),
    ("remember", {"content": "x", "relations": [{"target": "m1", "relation": HUGE}]}),
    ("relate", {"source": HUGE, "target": HUGE, "relation": "related_to"}),
    ("relate", {"source": "a", "target": "b", "relation": HUGE}),
    ("memory", {"target": "memory", "action": "add", "content": "x", HUGE: 1}),
    (HUGE, {}),
]


@pytest.mark.parametrize(("name", "arguments"), SPOILED, ids=[f"{n[:10]}-{i}" for i, (n, _) in enumerate(SPOILED)])
def test_an_error_quotes_at_most_a_short_excerpt_of_the_bad_value(agent: AgentMemory, name: str, arguments: dict) -> None:
    result = agent.handle_tool_call(name, arguments)
    assert json.loads(result)["success"] is False
    assert len(result) < 2_000


# --- arguments that are not an object are refused by every tool, null included ------------------


@pytest.mark.parametrize("arguments", [None, "null", " null ", [], '["query"]', "7", 7, '"browse"'])
@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_tool_refuses_arguments_that_are_not_an_object(agent: AgentMemory, name: str, arguments: object) -> None:
    before = snapshot(agent)
    result = call(agent, name, arguments)
    assert result["success"] is False
    assert result["field"] == "arguments"
    assert result["error"].startswith("invalid argument arguments: must be a JSON object, got ")
    assert snapshot(agent) == before


def test_null_arguments_do_not_run_a_session_browse(agent: AgentMemory) -> None:
    assert "sessions" in call(agent, "session_search", {})  # an empty object is still "browse"
    assert call(agent, "session_search", None) == {
        "success": False, "error": "invalid argument arguments: must be a JSON object, got null", "field": "arguments",
    }  # fmt: skip


# --- point 7: unknown fields are refused by every tool --------------------------------------------


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_tool_refuses_an_unknown_field_naming_it(agent: AgentMemory, name: str) -> None:
    before = snapshot(agent)
    result = call(agent, name, {**VALID[name], "colour": "blue"})
    assert result["success"] is False
    assert "colour" in result["error"]
    assert "unknown field" in result["error"]
    assert snapshot(agent) == before


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("memory", {"target": "memory", "operations": [{"action": "add", "content": "x", "why": "y"}]}, "operations[0].why"),
        ("remember", {"content": "x", "relations": [{"target": "m1", "relation": "related_to", "kind": 1}]}, "relations[0].kind"),
    ],
)
def test_unknown_fields_inside_items_are_refused_with_their_path(agent: AgentMemory, name: str, arguments: dict, field: str) -> None:
    result = call(agent, name, arguments)
    assert result["success"] is False
    assert field in result["error"]


def test_the_unknown_field_rule_follows_the_schema() -> None:
    schema = {"type": "function", "function": {"name": "t", "parameters": {"type": "object", "properties": {"pin": {}}}}}
    assert parse_arguments({"pin": True}, schema) == {"pin": True}
    with pytest.raises(InvalidArgument, match="unknown field"):
        parse_arguments({"pinned": True}, schema)


# --- properties: any arguments at all -------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(sorted({key for arguments in VALID.values() for key in arguments} | {"operations", "old_text", "types", "limit", "relations", "importance", "subject"}))
ARGUMENTS = (
    JSON_VALUES
    | st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=5)
    | st.text()
    | JSON_VALUES.map(json.dumps)
    | st.builds(lambda name, args: {**VALID[name], **args}, st.sampled_from(TOOL_NAMES), st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=2))
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=st.sampled_from(TOOL_NAMES), arguments=ARGUMENTS)
def test_every_tool_answers_any_arguments_with_json_and_a_refusal_changes_nothing(
    agent: AgentMemory, name: str, arguments: object
) -> None:
    before = snapshot(agent)
    result = agent.handle_tool_call(name, arguments)
    assert isinstance(result, str)
    answer = json.loads(result)
    assert isinstance(answer["success"], bool)
    if not answer["success"]:
        assert snapshot(agent) == before
