"""The public API: every exported name importable and documented, and the package typed."""

from __future__ import annotations

import inspect
from importlib import resources

import pytest

import mnemo


@pytest.mark.parametrize("name", mnemo.__all__)
def test_every_exported_name_exists_and_is_documented(name):
    value = getattr(mnemo, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_the_package_declares_its_type_hints():
    assert resources.files("mnemo").joinpath("py.typed").is_file()


@pytest.mark.parametrize(
    "method",
    [
        "remember", "recall", "get_memory", "forget", "relate", "search_sessions", "curated_edit", "prepare_messages",
        "handle_tool_call", "turn_complete", "before_compress", "delegation_complete", "switch_session",
        "end_session", "close",
    ],
)
def test_every_typed_call_has_a_documented_async_twin(method):
    twin = getattr(mnemo.AgentMemory, f"a{method}")
    assert inspect.iscoroutinefunction(twin) and (twin.__doc__ or "").strip()
