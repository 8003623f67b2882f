"""Storage rules: history is kept, edges are unique, full text follows every write, scopes never leak,
the schema migrates once, and concurrent writers lose nothing."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from mnemo.backends.postgres import graph_schema as postgres_graph_schema
from mnemo.errors import InvalidArgument
from mnemo.graph import MemoryNotFound, Relation, Scope
from mnemo.graph.schema import MIGRATIONS
from mnemo.storage import open_graph

from ._support import count_rows


def test_replace_creates_a_new_memory_with_an_updates_edge_to_the_old(graph):
    old = graph.remember("The user lives in Paris", "fact")
    new = graph.replace(old.id, "The user lives in Berlin")
    assert new.id != old.id
    assert new.type is old.type and new.importance == old.importance
    edges = graph.associations(new.id)
    assert [(e.source_id, e.target_id, e.relation) for e in edges] == [(new.id, old.id, Relation.UPDATES)]
    old_now = graph.get(old.id)
    assert old_now.superseded_by == new.id
    assert old_now.content == "The user lives in Paris"  # history is kept verbatim
    assert not old_now.forgotten


def test_history_shows_the_whole_supersession_chain_newest_first(graph, clock):
    first = graph.remember("Team size is 3")
    clock.advance(10)
    second = graph.replace(first.id, "Team size is 5")
    clock.advance(10)
    third = graph.replace(second.id, "Team size is 8")
    expected = [third.id, second.id, first.id]
    for member in expected:
        assert [m.id for m in graph.history(member)] == expected


def test_replacing_an_old_version_is_refused_pointing_at_the_newer_one(graph):
    old = graph.remember("v1")
    new = graph.replace(old.id, "v2")
    with pytest.raises(InvalidArgument, match=new.id):
        graph.replace(old.id, "v3")


def test_a_type_change_on_replace_takes_the_new_types_default_importance(graph):
    todo = graph.remember("Write the release notes", "todo")
    done = graph.replace(todo.id, "Release notes were written on Friday", memory_type="event")
    assert done.type.value == "event" and done.importance == 0.4


def test_an_updates_cycle_is_refused(graph):
    old = graph.remember("v1")
    new = graph.replace(old.id, "v2")
    with pytest.raises(InvalidArgument, match="cycle"):
        graph.relate(old.id, new.id, "updates")


def test_forget_keeps_the_row_but_hides_it_from_recall(graph):
    memory = graph.remember("The staging password rotates monthly")
    graph.forget(memory.id)
    assert graph.get(memory.id).forgotten
    assert graph.recall("staging password") == []
    assert [r.memory.id for r in graph.recall("staging password", include_forgotten=True)] == [memory.id]
    assert count_rows(graph, "graph_memories") == 1
    assert graph.memories() == [] and [m.id for m in graph.memories(include_forgotten=True)] == [memory.id]


def test_forget_is_idempotent(graph, clock):
    memory = graph.remember("something")
    clock.advance(5)
    first = graph.forget(memory.id)
    clock.advance(5)
    assert graph.forget(memory.id) == first


def test_purge_really_deletes_the_row_its_edges_vectors_and_index_entries(db_path, clock):
    from ._support import ConceptEmbedder

    with open_graph(db_path, clock=clock, embedder=ConceptEmbedder()) as graph:
        keep = graph.remember("The dog is called Rex")
        gone = graph.remember("Secret puppy nickname zanzibar", relations=[(keep.id, "related_to")])
        graph.embed_pending()
        assert count_rows(graph, "graph_vectors") == 2
        assert graph.purge([gone.id]) == 1
        with pytest.raises(MemoryNotFound):
            graph.get(gone.id)
        assert count_rows(graph, "graph_associations") == 0
        assert count_rows(graph, "graph_vectors") == 1
        if not isinstance(db_path, str):  # SQLite's full-text index is a table of its own
            conn = sqlite3.connect(db_path)
            assert conn.execute("SELECT COUNT(*) FROM graph_memories_fts WHERE graph_memories_fts MATCH 'zanzibar'").fetchone()[0] == 0
            conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, graph_memories_fts, row)")
            assert conn.execute("SELECT COUNT(*) FROM temp.vocab WHERE term = 'zanzibar'").fetchone()[0] == 0
            conn.close()
        assert [r.memory.id for r in graph.recall("dog Rex")] == [keep.id]


def test_purge_with_an_unknown_id_deletes_nothing(graph):
    memory = graph.remember("stays")
    with pytest.raises(MemoryNotFound):
        graph.purge([memory.id, "missing"])
    assert graph.get(memory.id).content == "stays"


def test_an_association_is_unique_per_source_target_and_relation(graph):
    a = graph.remember("Moved the API to FastAPI")
    b = graph.remember("Flask was too slow under load")
    graph.relate(a.id, b.id, "caused_by", 0.4)
    edge = graph.relate(a.id, b.id, "caused_by", 0.9)
    graph.relate(a.id, b.id, "related_to", 0.5)
    assert edge.weight == 0.9
    edges = {(e.relation, e.weight) for e in graph.associations(a.id)}
    assert edges == {(Relation.CAUSED_BY, 0.9), (Relation.RELATED_TO, 0.5)}


def test_remember_can_link_to_existing_memories(graph):
    goal = graph.remember("Ship v2 by March", "goal")
    todo = graph.remember("Write the migration guide", "todo", relations=[(goal.id, "part_of", 0.7)])
    [edge] = graph.associations(todo.id)
    assert (edge.source_id, edge.target_id, edge.relation, edge.weight) == (todo.id, goal.id, Relation.PART_OF, 0.7)


def test_a_memory_is_full_text_searchable_from_another_process_connection_at_once(db_path, graph):
    memory = graph.remember("Quarterly report uses the Zephyr template")
    with open_graph(db_path) as other:
        assert [r.memory.id for r in other.recall("zephyr template")] == [memory.id]


def test_the_fts_index_matches_the_table_after_writes_and_purges(sqlite_path):
    with open_graph(sqlite_path) as graph:
        ids = [graph.remember(f"note number {i} about topic{i % 3}").id for i in range(12)]
        graph.purge(ids[:4])
        graph.forget(ids[5])
    conn = sqlite3.connect(sqlite_path)
    conn.execute("INSERT INTO graph_memories_fts (graph_memories_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT COUNT(*) FROM graph_memories_fts WHERE graph_memories_fts MATCH 'note'").fetchone()[0] == 8
    conn.close()


def test_scopes_never_see_each_others_memories(db_path):
    with open_graph(db_path, scope=Scope(user_id="alice")) as alice, open_graph(db_path, scope=Scope(user_id="bob")) as bob:
        secret = alice.remember("Alice's bank is Northwind")
        bob.remember("Bob banks with Contoso")
        assert [r.memory.content for r in bob.recall("bank")] == ["Bob banks with Contoso"]
        assert [m.content for m in bob.memories()] == ["Bob banks with Contoso"]
        assert bob.stats()["memories"] == 1
        with pytest.raises(MemoryNotFound):
            bob.get(secret.id)
        with pytest.raises(MemoryNotFound):
            bob.forget(secret.id)
        with pytest.raises(MemoryNotFound):
            bob.remember("link attempt", relations=[(secret.id, "related_to")])
        assert not alice.get(secret.id).forgotten


def test_a_busier_scopes_better_matches_never_crowd_out_this_scopes_own(db_path):
    # More of bob's memories match, and match better, than recall takes full-text candidates (100 for ten
    # results): alice's one weaker match must still be found below them all.
    with open_graph(db_path, scope=Scope(user_id="alice")) as alice, open_graph(db_path, scope=Scope(user_id="bob")) as bob:
        bob.remember_many([{"content": f"Harbor harbor harbor note {n}"} for n in range(150)])
        mine = alice.remember("A long note that mentions the harbor once among many other words about boats and tides")
        assert [r.memory.id for r in alice.recall("harbor")] == [mine.id]


def test_agent_and_channel_ids_are_part_of_the_scope(db_path):
    with open_graph(db_path, scope=Scope("u", "agent-1", "slack")) as one, open_graph(db_path, scope=Scope("u", "agent-1", "email")) as two:
        one.remember("Deploy freeze on Fridays")
        assert two.recall("deploy freeze") == []


def test_opening_the_graph_again_does_not_migrate_again(db_path):
    open_graph(db_path).close()
    with open_graph(db_path) as graph:
        graph.remember("still here")
    with open_graph(db_path) as graph:
        assert [m.content for m in graph.memories()] == ["still here"]
        version = graph._conn.execute("SELECT version FROM schema_versions WHERE component = 'graph'").fetchone()[0]
    assert version == len(postgres_graph_schema.MIGRATIONS if isinstance(db_path, str) else MIGRATIONS)


def test_the_graph_shares_the_database_with_prefixed_tables(sqlite_path):
    open_graph(sqlite_path).close()
    conn = sqlite3.connect(sqlite_path)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger', 'index') AND sql IS NOT NULL")]
    conn.close()
    assert names and all(n.startswith("graph_") or n in ("schema_versions", "sqlite_sequence") for n in names)


def _remember_many(db_path: str, worker: int, count: int) -> None:
    with open_graph(db_path) as graph:
        for i in range(count):
            graph.remember(f"worker {worker} memory {i}")


def test_concurrent_processes_lose_no_memories(db_path):
    open_graph(db_path).close()
    # fork: the workers need no fresh interpreter, and spawning four costs seconds of imports.
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_remember_many, args=(str(db_path), w, 200)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    with open_graph(db_path) as graph:
        contents = {m.content for m in graph.memories()}
    assert contents == {f"worker {w} memory {i}" for w in range(4) for i in range(200)}
