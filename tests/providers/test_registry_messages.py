"""What providers' compression and session-end hooks are handed: plain messages that keep who spoke,
a tool result named after the tool that produced it."""

from __future__ import annotations

from mnemo.providers.registry import _normalise_all


def test_a_tool_result_is_named_after_the_call_it_answers():
    call = {"id": "c1", "type": "function", "function": {"name": "fetch_page", "arguments": "{}"}}
    plain = _normalise_all(
        [
            {"role": "user", "name": "Ana", "content": "read it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "page text"},
        ]
    )
    assert plain == [
        {"role": "user", "name": "Ana", "content": "read it"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "name": "fetch_page", "content": "page text"},
    ]
