"""Maintenance rules with a hand-moved clock: decay, boost, exemptions, pruning and undo, links, merges,
the contradiction guard, scheduling and resuming."""

from __future__ import annotations

import pytest

from mnemo.errors import InvalidArgument
from mnemo.graph import MemoryGraph, Relation, Scope
from mnemo.graph.maintenance import DECAY_PER_DAY, conflict, maintenance_log
from mnemo.provenance import Origin, Provenance
from mnemo.storage import open_graph

from ._support import ConceptEmbedder

DAY = 86_400.0


@pytest.fixture
def vgraph(db_path, clock):
    with open_graph(db_path, clock=clock, embedder=ConceptEmbedder()) as opened:
        yield opened


def _relations(graph: MemoryGraph) -> set[tuple[str, str, str]]:
    return {(a.source_id, a.target_id, a.relation.value) for a in graph.associations()}


# ------------------------------------------------------------------------------------------------ decay


def test_decay_takes_five_percent_a_day_of_staleness_and_keeps_the_original(graph, clock):
    memory = graph.remember("The office moved to the third floor", "fact")
    clock.advance(10 * DAY)
    report = graph.maintain()
    after = graph.get(memory.id)
    assert report.decayed == 1
    assert after.importance == pytest.approx(0.6 * (1 - DECAY_PER_DAY) ** 10)
    assert after.base_importance == 0.6 and after.original_importance == 0.6
    assert after.content == memory.content


def test_one_pass_takes_at_most_half(graph, clock):
    memory = graph.remember("A fact nobody looked at for a long time", "fact")
    clock.advance(60 * DAY)
    graph.maintain()
    assert graph.get(memory.id).importance == pytest.approx(0.3)


def test_passes_compound_exactly_and_a_second_pass_with_nothing_new_reports_zeros(graph, clock):
    memory = graph.remember("Decays over two passes", "fact")
    clock.advance(4 * DAY)
    graph.maintain()
    clock.advance(6 * DAY)
    graph.maintain()
    assert graph.get(memory.id).importance == pytest.approx(0.6 * (1 - DECAY_PER_DAY) ** 10)
    again = graph.maintain()
    assert (again.decayed, again.pruned, again.linked, again.merged, again.contradictions) == (0, 0, 0, 0, 0)


def test_less_than_a_day_of_staleness_waits_for_the_next_pass(graph, clock):
    memory = graph.remember("Fresh", "fact")
    clock.advance(DAY / 2)
    assert graph.maintain().decayed == 0
    assert graph.get(memory.id).importance == 0.6


def test_an_access_restores_the_original_importance_and_restarts_staleness(graph, clock):
    memory = graph.remember("The dentist is on Main Street", "fact")
    clock.advance(10 * DAY)
    graph.maintain()
    graph.recall("dentist")  # touches it
    clock.advance(DAY / 2)
    report = graph.maintain()
    assert report.boosted == 1 and report.decayed == 0
    assert graph.get(memory.id).importance == 0.6


def test_identity_and_pinned_memories_never_decay(graph, clock):
    identity = graph.remember("The user is called Ana", "identity")
    pinned = graph.remember("Never deploy on Fridays", "decision", pin=True)
    clock.advance(100 * DAY)
    graph.maintain()
    assert graph.get(identity.id).importance == 1.0
    assert graph.get(pinned.id).importance == 0.8 and graph.get(pinned.id).pinned


# ------------------------------------------------------------------------------------------------ pruning


def _stale(graph, clock, importance=0.15, days=40):
    memory = graph.remember("An old and unimportant observation", "observation", importance=importance)
    clock.advance(days * DAY)
    return memory


def test_a_faded_unused_memory_is_pruned_softly_with_its_reason_logged(graph, clock):
    memory = _stale(graph, clock)
    report = graph.maintain()
    after = graph.get(memory.id)
    assert report.pruned == 1 and after.forgotten
    assert graph.recall("old unimportant observation") == []
    (entry,) = maintenance_log(graph, memory.id)
    assert entry["action"] == "pruned" and "unused for 40 days" in entry["detail"]


def test_pruning_is_undone_by_unforget_and_not_redone_at_once(graph, clock):
    memory = _stale(graph, clock)
    graph.maintain()
    back = graph.unforget(memory.id)
    assert not back.forgotten and back.importance == 0.15
    assert graph.maintain().pruned == 0
    assert [r.memory.id for r in graph.recall("old unimportant observation")] == [memory.id]


def test_a_recently_used_memory_is_not_pruned_however_faded(graph, clock):
    memory = _stale(graph, clock, importance=0.05, days=10)
    assert graph.maintain().pruned == 0
    assert not graph.get(memory.id).forgotten


def test_pruning_thresholds_are_configurable(graph, clock):
    memory = _stale(graph, clock, importance=0.15, days=5)
    assert graph.maintain(prune_below=0.5, prune_after_days=3).pruned == 1
    assert graph.get(memory.id).forgotten


def test_pinned_memories_are_never_pruned(graph, clock):
    memory = graph.remember("Tiny but pinned", "observation", importance=0.01, pin=True)
    clock.advance(400 * DAY)
    assert graph.maintain().pruned == 0
    assert not graph.get(memory.id).forgotten


def test_purge_stays_the_only_real_delete(graph, clock):
    memory = _stale(graph, clock)
    graph.maintain()
    assert graph.get(memory.id).forgotten  # still there
    assert graph.purge([memory.id]) == 1


# ------------------------------------------------------------------------------------------------ links


def test_new_memories_link_to_near_neighbours_above_the_threshold(vgraph):
    old = vgraph.remember("My dog lives in Paris")
    near = vgraph.remember("A dog, a puppy and a hound in Paris")  # cosine 0.89 to the first
    far = vgraph.remember("A red car")  # cosine 0
    report = vgraph.maintain()
    assert report.linked == 1
    assert _relations(vgraph) == {(near.id, old.id, "related_to")}
    assert not vgraph.associations(far.id)


def test_the_link_threshold_is_a_parameter(vgraph):
    vgraph.remember("My dog lives in Paris")
    vgraph.remember("A dog")  # cosine 0.71
    assert vgraph.maintain(dry_run=True).linked == 0
    assert vgraph.maintain(link_threshold=0.7).linked == 1


def test_links_never_cross_scopes(db_path, clock):
    with open_graph(db_path, clock=clock, embedder=ConceptEmbedder()) as graph:
        alice, bob = graph.with_scope(Scope(user_id="alice")), graph.with_scope(Scope(user_id="bob"))
        alice.remember("My dog lives in Paris")
        bob.remember("A dog, a puppy and a hound in Paris")
        assert alice.maintain().linked == 0 and bob.maintain().linked == 0
        assert graph.associations(all_scopes=True) == []


def test_only_memories_new_since_the_last_pass_are_linked(vgraph):
    vgraph.remember("My dog lives in Paris")
    vgraph.remember("A dog, a puppy and a hound in Paris")
    assert vgraph.maintain().linked == 1
    assert vgraph.maintain().linked == 0
    vgraph.remember("Dog and puppy and canine near Paris", subject="Ben")
    assert vgraph.maintain().linked >= 1


def test_without_an_embedder_nothing_is_linked_until_one_is_set(db_path, clock):
    with open_graph(db_path, clock=clock) as plain:
        plain.remember("My dog lives in Paris")
        plain.remember("A dog, a puppy and a hound in Paris")
        assert plain.maintain().linked == 0
    with open_graph(db_path, clock=clock, embedder=ConceptEmbedder()) as graph:
        assert graph.maintain().linked == 1


# ------------------------------------------------------------------------------------------------ merges


def test_a_near_duplicate_is_merged_into_the_newer_which_keeps_history_and_combines_use(vgraph, clock):
    old = vgraph.remember("My dog lives in Paris", importance=0.9)
    vgraph.touch([old.id])
    vgraph.touch([old.id])
    clock.advance(60)
    new = vgraph.remember("my dog lives in paris", importance=0.5)
    report = vgraph.maintain()
    assert report.merged == 1 and report.linked == 0
    merged = vgraph.get(new.id)
    assert vgraph.get(old.id).superseded_by == new.id
    assert merged.access_count == 2 and merged.importance == 0.9
    assert [m.id for m in vgraph.history(new.id)] == [new.id, old.id]
    assert [r.memory.id for r in vgraph.recall("dog paris")] == [new.id]
    (entry,) = maintenance_log(vgraph, old.id)
    assert entry["action"] == "merged" and entry["other"] == new.id


def test_near_duplicates_trusted_differently_are_linked_never_merged(vgraph):
    vgraph.remember("My dog lives in Paris", provenance=Provenance(Origin.USER, "tool"))
    vgraph.remember("My dog lives in Paris", provenance=Provenance(Origin.TAINTED, "tool", "fetch_page"))
    report = vgraph.maintain()
    assert report.merged == 0 and report.linked == 1


def test_near_duplicates_of_one_trust_level_merge_whatever_their_exact_origin(vgraph):
    vgraph.remember("My dog lives in Paris", provenance=Provenance(Origin.USER, "tool"))
    vgraph.remember("My dog lives in Paris", provenance=Provenance(Origin.OPERATOR, "cli"))
    assert vgraph.maintain().merged == 1


def test_near_duplicates_about_different_subjects_are_not_merged(vgraph):
    vgraph.remember("My dog lives in Paris", subject="Ana")
    vgraph.remember("My dog lives in Paris", subject="Ben")
    report = vgraph.maintain()
    assert report.merged == 0 and report.linked == 1


@pytest.mark.parametrize(
    ("older", "newer", "reason"),
    [
        ("My dog in Paris is 3 years old", "My dog in Paris is 4 years old", "number"),
        ("I walk the dog in Paris on Monday", "I walk the dog in Paris on Friday", "date"),
        ("My dog likes Paris", "My dog does not like Paris", "negation"),
        ("My dog in Paris is called Rex", "My dog in Paris is called Max", "name"),
    ],
)
def test_a_near_duplicate_differing_in_a_detail_gets_a_contradicts_edge_instead(vgraph, older, newer, reason):
    first = vgraph.remember(older)
    second = vgraph.remember(newer)
    assert conflict(older, newer) == reason
    report = vgraph.maintain()
    assert report.contradictions == 1 and report.merged == 0
    assert _relations(vgraph) == {(second.id, first.id, Relation.CONTRADICTS.value)}
    assert not vgraph.get(first.id).superseded


def test_the_guard_lets_plain_rewordings_through():
    assert conflict("My dog lives in Paris.", "my dog lives in Paris!") is None


# ------------------------------------------------------------------------------------------------ recall


def test_recall_puts_the_newer_of_a_contradiction_first_and_marks_the_older_disputed(vgraph, clock):
    older = vgraph.remember("My dog in Paris is 3 years old", importance=1.0)
    clock.advance(DAY)
    newer = vgraph.remember("My dog in Paris is 4 years old", importance=0.1)
    vgraph.maintain()
    results = vgraph.recall("how old is my dog in Paris")
    assert [r.memory.id for r in results] == [newer.id, older.id]
    assert results[0].status is None
    assert (results[1].status, results[1].newer_id) == ("disputed", newer.id)
    assert results[1].as_dict()["status"] == "disputed"


def test_recall_with_history_marks_superseded_versions(graph):
    old = graph.remember("The meeting is at noon")
    new = graph.replace(old.id, "The meeting is at one")
    results = graph.recall("meeting", include_superseded=True)
    assert [(r.memory.id, r.status) for r in results] == [(new.id, None), (old.id, "superseded")]


# ------------------------------------------------------------------------------------------------ pinning


def test_pin_and_unpin(graph, clock):
    memory = graph.remember("Pin me", "fact")
    assert graph.pin(memory.id).pinned
    clock.advance(10 * DAY)
    graph.maintain()
    assert graph.get(memory.id).importance == 0.6
    assert not graph.unpin(memory.id).pinned
    clock.advance(10 * DAY)
    assert graph.maintain().decayed == 1


def test_pin_must_be_a_boolean(graph):
    with pytest.raises(InvalidArgument, match="pin"):
        graph.remember("x", pin="yes")
    assert graph.memories() == []


# ------------------------------------------------------------------------------------------------ scheduling


def test_a_due_only_pass_runs_once_per_interval(graph, clock):
    graph.remember("Something", "fact")
    assert graph.maintain(due_only=True).skipped is None
    clock.advance(3600)
    assert graph.maintain(due_only=True).skipped == "not due"
    clock.advance(24 * 3600)
    assert graph.maintain(due_only=True).skipped is None
    assert graph.maintain(due_only=True, interval_hours=0).skipped == "off"


def test_a_budgeted_pass_stops_and_the_next_call_resumes_where_it_stopped(graph, clock):
    memories = [graph.remember(f"fact number {i}", "fact") for i in range(25)]
    clock.advance(10 * DAY)
    first = graph.maintain(budget=10)
    assert not first.complete and first.decayed == 10
    assert graph.maintain(due_only=True, budget=10).decayed == 10  # a pass in progress is always due
    last = graph.maintain(due_only=True, budget=10)
    assert last.complete and last.decayed == 5
    assert {round(graph.get(m.id).importance, 6) for m in memories} == {round(0.6 * 0.95**10, 6)}


def test_a_held_lease_makes_other_passes_skip_until_it_expires(db_path, graph, clock):
    graph.remember("Something", "fact")
    with graph._write() as conn:
        conn.execute(
            "INSERT INTO graph_maintenance (user_id, agent_id, channel_id, lease_owner, lease_expires) VALUES ('', '', '', 'x', ?)",
            (clock.now + 100,),
        )
    assert graph.maintain().skipped == "busy"
    clock.advance(101)
    assert graph.maintain().skipped is None


def test_a_dry_run_reports_and_changes_nothing(vgraph, clock):
    memory = vgraph.remember("My dog lives in Paris")
    vgraph.remember("A dog, a puppy and a hound in Paris")
    clock.advance(10 * DAY)
    report = vgraph.maintain(dry_run=True)
    assert report.dry_run and report.decayed == 2 and report.linked == 1
    assert vgraph.get(memory.id).importance == 0.6 and vgraph.associations() == []
    assert vgraph.maintain().linked == 1


def test_bad_options_are_refused_naming_them(graph):
    for options, field in (({"budget": 0}, "budget"), ({"prune_below": 2}, "prune_below"), ({"now": -1}, "now")):
        with pytest.raises(InvalidArgument, match=field):
            graph.maintain(**options)


def test_recall_does_not_follow_the_similarity_links_maintenance_made(vgraph):
    seed = vgraph.remember("My dog lives in Paris")
    neighbour = vgraph.remember("A dog, a puppy and a hound in Paris")
    vgraph.maintain()
    (edge,) = vgraph.associations()
    assert edge.relation is Relation.RELATED_TO
    found = {r.memory.id: r for r in vgraph.recall("lives")}
    assert seed.id in found and neighbour.id not in found
    vgraph.relate(neighbour.id, seed.id, "related_to")  # the same edge made by hand is followed
    found = {r.memory.id: r for r in vgraph.recall("lives")}
    assert found[neighbour.id].via == (seed.id, "related_to")


def test_a_bounded_pass_never_embeds_and_links_only_what_is_embedded(db_path, clock):
    embedder = ConceptEmbedder()
    with open_graph(db_path, clock=clock, embedder=embedder) as graph:
        graph.remember("My dog lives in Paris")
        graph.embed_pending()
        graph.remember("A dog, a puppy and a hound in Paris")
        calls = len(embedder.calls)
        assert graph.maintain(budget=100).linked == 0  # the second memory waits for its vector
        assert len(embedder.calls) == calls
        graph.embed_pending()
        assert graph.maintain(budget=100).linked == 1  # and is linked once it has one


def test_a_new_version_of_a_faded_memory_starts_from_the_original_importance(graph, clock):
    memory = graph.remember("The office is on the third floor", "fact", importance=0.8)
    clock.advance(10 * DAY)
    graph.maintain()
    assert graph.replace(memory.id, "The office is on the fourth floor").importance == 0.8
