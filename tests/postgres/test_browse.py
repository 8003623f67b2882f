"""The inspector's listing (mnemo.graph.browse) on PostgreSQL: the same pages and states as on SQLite."""

from __future__ import annotations

from mnemo.graph.browse import MemoryFilter, disputed_among, maintenance_state, page, subjects
from mnemo.scope import Scope
from mnemo.storage import open_graph


def test_pages_filters_and_states_on_postgres(postgres_url):
    with open_graph(postgres_url, scope=Scope("ada")) as graph:
        old = graph.remember("the office is on floor three", "fact", subject="ada")
        graph.replace(old.id, "the office is on floor five")
        vim = graph.remember("ada writes in vim", "preference")
        graph.relate(graph.remember("ada switched to helix", "preference").id, vim.id, "contradicts")
        graph.with_scope(Scope("bo")).remember("bo's private note", "fact")
        listed = page(graph, limit=2)
        assert len(listed.memories) == 2 and listed.has_more
        assert [m.id for m in page(graph, MemoryFilter.parse(status="superseded")).memories] == [old.id]
        assert disputed_among(graph, [vim.id]) == {vim.id}
        assert "bo's private note" not in [m.content for m in page(graph, limit=50).memories]
        assert subjects(graph) == ["ada"]
        assert maintenance_state(graph).last_pass_at is None
