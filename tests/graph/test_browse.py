"""The inspector's views of a scope's memories (mnemo.graph.browse): pages, filters, states."""

from __future__ import annotations

import itertools

import pytest

from mnemo.errors import InvalidArgument
from mnemo.graph.browse import MemoryFilter, disputed_among, maintenance_state, page, subjects
from mnemo.scope import Scope
from mnemo.storage import open_graph


@pytest.fixture
def graph(tmp_path):
    ticks = itertools.count(1_700_000_000)
    with open_graph(tmp_path / "mnemo.db", scope=Scope("ada"), clock=lambda: float(next(ticks))) as opened:
        yield opened


def _contents(found) -> list[str]:
    return [m.content for m in found.memories]


def test_a_page_is_newest_first_and_says_whether_another_follows(graph):
    for n in range(5):
        graph.remember(f"note number {n}", "fact")
    first, last = page(graph, limit=3), page(graph, offset=3, limit=3)
    assert _contents(first) == ["note number 4", "note number 3", "note number 2"] and first.has_more
    assert _contents(last) == ["note number 1", "note number 0"] and not last.has_more


def test_another_scopes_memories_are_never_on_a_page(graph):
    graph.remember("ada's own note", "fact")
    graph.with_scope(Scope("bo")).remember("bo's private note", "fact")
    assert _contents(page(graph)) == ["ada's own note"]


def test_each_status_selects_its_memories(graph):
    old = graph.remember("the office is on floor three", "fact")
    new = graph.replace(old.id, "the office is on floor five")
    gone = graph.remember("a forgotten detail", "fact")
    graph.forget(gone.id)
    pinned = graph.remember("a pinned rule", "decision")
    graph.pin(pinned.id)
    vim = graph.remember("ada writes in vim", "preference")
    helix = graph.remember("ada switched to helix", "preference")
    graph.relate(helix.id, vim.id, "contradicts")

    def ids(status: str) -> set[str]:
        return {m.id for m in page(graph, MemoryFilter.parse(status=status)).memories}

    assert ids("superseded") == {old.id}
    assert ids("forgotten") == {gone.id}
    assert ids("pinned") == {pinned.id}
    assert ids("disputed") == {vim.id}
    assert ids("active") == {new.id, pinned.id, vim.id, helix.id}


def test_type_subject_and_date_filters_combine(graph):
    graph.remember("ada likes tea", "preference", subject="ada")
    graph.remember("bo likes coffee", "preference", subject="bo")
    graph.remember("ada met bo", "event", subject="ada")
    where = MemoryFilter.parse(types=["preference"], subject="ada", since=1_600_000_000)
    assert _contents(page(graph, where)) == ["ada likes tea"]
    assert subjects(graph) == ["ada", "bo"]


def test_a_filter_admits_what_its_query_selects(graph):
    memory = graph.remember("ada likes tea", "preference", subject="ada")
    assert MemoryFilter.parse(types=["preference"], status="active").admits(memory, disputed=False)
    assert not MemoryFilter.parse(status="disputed").admits(memory, disputed=False)
    assert MemoryFilter.parse(status="disputed").admits(memory, disputed=True)


def test_an_unknown_status_is_refused_naming_the_choices():
    with pytest.raises(InvalidArgument, match="status.*active, superseded, disputed, forgotten, pinned"):
        MemoryFilter.parse(status="archived")


def test_a_page_size_out_of_range_is_refused(graph):
    with pytest.raises(InvalidArgument, match="limit"):
        page(graph, limit=0)


def test_disputed_among_ignores_another_scopes_ids(graph):
    other = graph.with_scope(Scope("bo"))
    old = other.remember("bo uses vim", "preference")
    other.relate(other.remember("bo uses emacs", "preference").id, old.id, "contradicts")
    assert disputed_among(graph, [old.id]) == frozenset()
    assert disputed_among(other, [old.id]) == {old.id}


def test_maintenance_state_before_any_pass(graph):
    graph.remember("a note", "fact")
    state = maintenance_state(graph)
    assert (state.last_pass_at, state.in_progress, state.recent) == (None, False, ())


def test_maintenance_state_after_a_pass_tells_when(graph):
    graph.remember("a note", "fact")
    graph.maintain()
    assert maintenance_state(graph).last_pass_at is not None
