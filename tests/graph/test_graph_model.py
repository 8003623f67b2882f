"""The graph's vocabulary and the fields every memory carries."""

from __future__ import annotations

import pytest

from mnemo.graph import DEFAULT_IMPORTANCE, EDGE_MULTIPLIER, MemoryType, Relation, Scope
from mnemo.storage import open_graph


@pytest.mark.parametrize(
    ("kind", "importance"),
    [
        ("identity", 1.0),
        ("goal", 0.9),
        ("decision", 0.8),
        ("todo", 0.8),
        ("preference", 0.7),
        ("fact", 0.6),
        ("event", 0.4),
        ("observation", 0.3),
    ],
)
def test_each_type_gets_its_default_importance_when_none_is_given(graph, kind, importance):
    memory = graph.remember(f"a {kind} worth keeping", kind)
    assert memory.type is MemoryType(kind)
    assert memory.importance == importance
    assert DEFAULT_IMPORTANCE[MemoryType(kind)] == importance


def test_there_are_exactly_eight_memory_types():
    assert {t.value for t in MemoryType} == {
        "identity", "goal", "decision", "todo", "preference", "fact", "event", "observation"
    }  # fmt: skip


def test_edge_multipliers_favour_updates_and_causality():
    assert EDGE_MULTIPLIER == {
        Relation.UPDATES: 1.5,
        Relation.CAUSED_BY: 1.3,
        Relation.RESULT_OF: 1.3,
        Relation.RELATED_TO: 1.0,
        Relation.PART_OF: 0.8,
        Relation.CONTRADICTS: 0.5,
    }


def test_a_given_importance_overrides_the_default(graph):
    assert graph.remember("minor detail", "identity", importance=0.25).importance == 0.25


def test_a_new_memory_carries_every_field(db_path, clock):

    with open_graph(db_path, scope=Scope("u1", "a1", "c1"), clock=clock) as graph:
        memory = graph.remember("The user is called Ada", "identity", source="cli")
    assert len(memory.id) >= 12
    assert memory.content == "The user is called Ada"
    assert memory.created_at == memory.updated_at == clock.now
    assert memory.last_accessed_at is None
    assert memory.access_count == 0
    assert memory.source == "cli"
    assert memory.scope == Scope("u1", "a1", "c1")
    assert memory.forgotten is False
    assert memory.superseded_by is None


def test_recall_records_the_access_time_and_count(graph, clock):
    memory = graph.remember("The deploy script lives in ops/deploy.sh")
    clock.advance(60)
    graph.recall("deploy script")
    graph.recall("deploy script")
    seen = graph.get(memory.id)
    assert seen.access_count == 2
    assert seen.last_accessed_at == clock.now


def test_content_is_stripped_of_surrounding_whitespace(graph):
    assert graph.remember("  padded  \n").content == "padded"
