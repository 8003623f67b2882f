"""Who a memory is about: the ``subject`` field, its validation, the schema v2 migration, the per-scope
tallies the triggers keep, and recall's preference for memories about someone the query names."""

from __future__ import annotations

import json

import pytest

from mnemo import _db
from mnemo.errors import InvalidArgument
from mnemo.graph import MemoryGraph, Scope, export_json, import_json
from mnemo.graph.recall import named_subjects
from mnemo.graph.schema import MIGRATIONS
from mnemo.graph.store import MAX_SUBJECT_CHARS
from mnemo.storage import open_graph

from ._support import count_rows


def _tallies(graph: MemoryGraph, scope: Scope | None = None) -> dict[tuple[str, str], int]:
    """``{(field, value): memories}`` of one scope (the graph's own by default)."""
    scope = scope or graph.scope
    rows = graph._conn.execute(
        "SELECT field, value, memories FROM graph_tallies WHERE user_id = ? AND agent_id = ? AND channel_id = ?",
        (scope.user_id, scope.agent_id, scope.channel_id),
    ).fetchall()
    return {(field, value): memories for field, value, memories in rows}


# ----------------------------------------------------------------- writing a subject


def test_remember_stores_the_subject_with_its_whitespace_collapsed(graph):
    memory = graph.remember("Went to a support group", subject="  Caroline \t  Smith\n")
    assert memory.subject == "Caroline Smith"
    assert graph.get(memory.id).subject == "Caroline Smith"


def test_a_memory_remembered_without_a_subject_has_an_empty_one(graph):
    assert graph.get(graph.remember("Nobody in particular").id).subject == ""


def test_remember_many_items_take_a_subject(graph):
    stored = graph.remember_many([{"content": "Paints sunsets", "subject": "Melanie"}, {"content": "No one's fact"}])
    assert [graph.get(m.id).subject for m in stored] == ["Melanie", ""]


def test_replace_keeps_the_old_subject_by_default(graph):
    old = graph.remember("Caroline lives in Boston", subject="Caroline")
    assert graph.replace(old.id, "Caroline lives in Denver").subject == "Caroline"


def test_replace_takes_a_new_subject(graph):
    old = graph.remember("Likes hiking", subject="Caroline")
    assert graph.replace(old.id, "Likes hiking", subject="Melanie").subject == "Melanie"


def test_a_subject_of_exactly_the_limit_is_accepted(graph):
    name = "a" * MAX_SUBJECT_CHARS
    assert graph.remember("A long-named person's fact", subject=name).subject == name


# ----------------------------------------------------------------- refusing a subject

BAD_SUBJECTS = [
    pytest.param(7, "must be a string", id="not-a-string"),
    pytest.param(None, "must be a string", id="none"),
    pytest.param("a" * (MAX_SUBJECT_CHARS + 1), "the limit is 200", id="over-long"),
    pytest.param("Caro\x07line", "control or invisible format", id="control-character"),
    pytest.param("Caro\u200bline", "control or invisible format", id="zero-width-space"),
    pytest.param("Caroline\u202e", "control or invisible format", id="bidi-override"),
    pytest.param("Caro\x1fline", "control or invisible format", id="unit-separator-that-split-calls-space"),
]


@pytest.mark.parametrize(("subject", "problem"), BAD_SUBJECTS)
def test_check_subject_refuses_bad_values_naming_the_field(subject, problem):
    with pytest.raises(InvalidArgument) as caught:
        MemoryGraph.check_subject(subject, "items[2].subject")
    assert caught.value.field == "items[2].subject"
    assert problem in caught.value.problem


@pytest.mark.parametrize(("subject", "problem"), BAD_SUBJECTS)
def test_remember_with_a_bad_subject_writes_nothing(graph, subject, problem):
    with pytest.raises(InvalidArgument, match=problem) as caught:
        graph.remember("A perfectly good memory", subject=subject)
    assert caught.value.field == "subject"
    assert count_rows(graph, "graph_memories") == 0


def test_remember_many_with_one_bad_subject_writes_none_of_the_items(graph):
    items = [{"content": "First", "subject": "Caroline"}, {"content": "Second", "subject": ["Melanie"]}]
    with pytest.raises(InvalidArgument) as caught:
        graph.remember_many(items)
    assert caught.value.field == "items[1].subject"
    assert count_rows(graph, "graph_memories") == 0


def test_replace_with_a_bad_subject_writes_nothing(graph):
    old = graph.remember("Likes hiking", subject="Caroline")
    with pytest.raises(InvalidArgument) as caught:
        graph.replace(old.id, "Likes climbing", subject="Mel\x00anie")
    assert caught.value.field == "subject"
    assert [m.id for m in graph.memories()] == [old.id]


# ----------------------------------------------------------------- migrating a version 1 database


@pytest.fixture
def v1_database(sqlite_path):
    """A ``state.db`` at graph schema version 1, holding memories of two sources in one scope and one
    memory in another scope."""
    conn = _db.connect(sqlite_path)
    _db.migrate(conn, "graph", MIGRATIONS[:1])
    rows = [
        ("m1", "Caroline went to a support group", "session-1", "ada"),
        ("m2", "Melanie painted a sunset", "session-1", "ada"),
        ("m3", "Caroline is researching adoption", "session-2", "ada"),
        ("m4", "Bob's memory in Bob's scope", "session-1", "bob"),
        ("m5", "A memory with no source", "", "ada"),
    ]
    with _db.write_transaction(conn):
        conn.executemany(
            "INSERT INTO graph_memories (id, content, type, importance, created_at, updated_at, source, user_id)"
            " VALUES (?, ?, 'fact', 0.5, 1.0, 1.0, ?, ?)",
            rows,
        )
    conn.close()
    return sqlite_path


def test_opening_a_v1_database_gives_every_memory_an_empty_subject(v1_database):
    with open_graph(v1_database, scope=Scope("ada")) as graph:
        assert [m.subject for m in graph.memories(all_scopes=True)] == [""] * 5
        version = graph._conn.execute("SELECT version FROM schema_versions WHERE component = 'graph'").fetchone()[0]
        assert version == len(MIGRATIONS)


def test_opening_a_v1_database_backfills_the_tallies_with_per_source_counts(v1_database):
    with open_graph(v1_database, scope=Scope("ada")) as graph:
        assert _tallies(graph) == {("source", "session-1"): 2, ("source", "session-2"): 1}
        assert _tallies(graph, Scope("bob")) == {("source", "session-1"): 1}


def test_tallies_of_a_migrated_database_keep_following_writes(v1_database):
    with open_graph(v1_database, scope=Scope("ada")) as graph:
        graph.remember("Caroline found a new counsellor", source="session-2", subject="Caroline")
        assert _tallies(graph) == {("source", "session-1"): 2, ("source", "session-2"): 2, ("subject", "Caroline"): 1}


# ----------------------------------------------------------------- tallies


def test_tallies_count_the_memories_of_each_source_and_subject(graph):
    graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    graph.remember("Melanie painted a sunset", source="s1", subject="Melanie")
    graph.remember_many([{"content": "Caroline is researching adoption", "source": "s2", "subject": "Caroline"}])
    graph.remember("A note from nowhere about no one")
    assert _tallies(graph) == {
        ("source", "s1"): 2,
        ("source", "s2"): 1,
        ("subject", "Caroline"): 2,
        ("subject", "Melanie"): 1,
    }


def test_a_purge_lowers_the_counts_of_the_memorys_source_and_subject(graph):
    kept = graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    gone = graph.remember("Caroline is researching adoption", source="s1", subject="Caroline")
    graph.purge([gone.id])
    assert _tallies(graph) == {("source", "s1"): 1, ("subject", "Caroline"): 1}
    assert graph.get(kept.id).subject == "Caroline"


def test_a_purge_of_the_last_memory_of_a_source_removes_its_tally(graph):
    graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    last = graph.remember("Melanie painted a sunset", source="s2", subject="Melanie")
    graph.purge([last.id])
    assert _tallies(graph) == {("source", "s1"): 1, ("subject", "Caroline"): 1}


def test_a_forgotten_memory_still_counts(graph):
    memory = graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    graph.forget(memory.id)
    assert _tallies(graph) == {("source", "s1"): 1, ("subject", "Caroline"): 1}


def test_a_restore_that_changes_a_memorys_source_and_subject_moves_its_counts(graph):
    graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    graph.remember("Melanie painted a sunset", source="s1", subject="Melanie")
    data = json.loads(export_json(graph))
    data["memories"][1].update(source="s2", subject="Mel")
    counts = import_json(graph, data)
    assert counts.memories_updated == 1
    assert _tallies(graph) == {
        ("source", "s1"): 1,
        ("source", "s2"): 1,
        ("subject", "Caroline"): 1,
        ("subject", "Mel"): 1,
    }


def test_a_restore_that_changes_nothing_leaves_the_counts_alone(graph):
    graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    before = _tallies(graph)
    import_json(graph, export_json(graph))
    assert _tallies(graph) == before


@pytest.mark.parametrize("subject", ["Caro\x07line", " Caroline", "Mary  Ann"])
def test_restore_refuses_a_subject_not_in_stored_form_and_writes_nothing(graph, subject):
    from dataclasses import replace

    memory = graph.remember("Went to a support group", subject="Caroline")
    graph.purge([memory.id])
    with pytest.raises(InvalidArgument) as caught:
        graph.restore([replace(memory, subject=subject)], [])
    assert caught.value.field == "memories[0].subject"
    assert count_rows(graph, "graph_memories") == 0


def test_tallies_are_kept_per_scope(graph):
    graph.remember("Caroline went to a support group", source="s1", subject="Caroline")
    other = graph.with_scope(Scope("bob"))
    other.remember("Bob's own note", source="s1", subject="Bob")
    other.remember("Bob's second note", source="s1", subject="Bob")
    assert _tallies(graph) == {("source", "s1"): 1, ("subject", "Caroline"): 1}
    assert _tallies(other) == {("source", "s1"): 2, ("subject", "Bob"): 2}


# ----------------------------------------------------------------- naming a subject


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("When did Caroline go to the support group?", {"Caroline"}),
        ("what did CAROLINE do", {"Caroline"}),
        ("Where is caroline's painting?", {"Caroline"}),
        ("What do Caroline and Melanie share?", {"Caroline", "Melanie"}),
        ("Was the décor Carolinesque?", set()),
        ("What did Carol do?", set()),
        ("", set()),
    ],
)
def test_named_subjects_finds_whole_word_names_ignoring_case(graph, query, named):
    graph.remember("Went to a support group", subject="Caroline")
    graph.remember("Painted a sunset", subject="Melanie")
    assert named_subjects(graph._conn, graph.scope, query) == named


def test_named_subjects_matches_a_name_of_several_words_only_as_a_whole(graph):
    graph.remember("Runs the book club", subject="Mary Ann")
    assert named_subjects(graph._conn, graph.scope, "What does Mary Ann run?") == {"Mary Ann"}
    assert named_subjects(graph._conn, graph.scope, "What does Mary run?") == set()


def test_named_subjects_matches_however_the_query_spaces_the_name(graph):
    graph.remember("Runs the book club", subject="Mary Ann")
    assert named_subjects(graph._conn, graph.scope, "What does Mary  Ann run?") == {"Mary Ann"}
    assert named_subjects(graph._conn, graph.scope, "What does Mary\nAnn run?") == {"Mary Ann"}


def test_named_subjects_matches_a_name_whatever_its_unicode_composition(graph):
    graph.remember("Plays the cello", subject="Zo\u00eb")  # composed ë
    assert named_subjects(graph._conn, graph.scope, "What does Zoe\u0308 play?") == {"Zo\u00eb"}  # e + combining


def test_a_subject_is_stored_composed(graph):
    assert graph.remember("Plays the cello", subject="Zoe\u0308").subject == "Zo\u00eb"


def test_named_subjects_only_sees_the_subjects_of_its_scope(graph):
    graph.with_scope(Scope("bob")).remember("Went to a support group", subject="Caroline")
    assert named_subjects(graph._conn, graph.scope, "What did Caroline do?") == set()
    assert named_subjects(graph._conn, Scope("bob"), "What did Caroline do?") == {"Caroline"}


def test_recall_ranks_the_memory_of_the_subject_the_query_names_first(graph, clock):
    caroline = graph.remember("Went to a support group on Sunday", subject="Caroline")
    clock.advance(3600)  # the other memory is newer, so recency alone would put it first
    melanie = graph.remember("Went to a support group on Sunday", subject="Melanie")
    assert [r.memory.id for r in graph.recall("When did Caroline go to the support group?")] == [caroline.id, melanie.id]
    assert [r.memory.id for r in graph.recall("When did Melanie go to the support group?")] == [melanie.id, caroline.id]
