"""The first hybrid recall: full text, vectors, one hop of graph expansion, importance and recency."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.graph.recall import match_expression, score
from mnemo.storage import open_graph

from ._support import ConceptEmbedder


def test_recall_prefers_the_newest_version_even_when_only_the_old_one_matches(graph):
    old = graph.remember("The user lives in Paris")
    new = graph.replace(old.id, "Moved to Berlin in 2025")
    results = graph.recall("where does the user live")
    assert [r.memory.id for r in results] == [new.id]
    assert results[0].via == (old.id, "updates")
    assert "graph" in results[0].channels


def test_recall_can_include_the_superseded_versions(graph):
    old = graph.remember("The user lives in Paris")
    new = graph.replace(old.id, "The user lives in Berlin")
    ids = [r.memory.id for r in graph.recall("user lives", include_superseded=True)]
    assert set(ids) == {old.id, new.id}


def test_graph_expansion_brings_in_a_cause_that_shares_no_words(graph):
    cause = graph.remember("Flask workers kept timing out under load")
    decision = graph.remember("We migrated the API to FastAPI", "decision", relations=[(cause.id, "caused_by")])
    results = {r.memory.id: r for r in graph.recall("why FastAPI migration")}
    assert results[decision.id].channels.get("fts", 0) > 0
    assert results[cause.id].via == (decision.id, "caused_by")


def test_stronger_relations_pass_on_more_relevance():
    # Same seed, same weight: the multiplier alone orders the neighbours.
    from mnemo.graph.recall import HOP_DECAY
    from mnemo.graph.types import Relation

    passed = {r: 1.0 * r.multiplier * HOP_DECAY for r in Relation}
    assert passed[Relation.UPDATES] > passed[Relation.CAUSED_BY] > passed[Relation.RELATED_TO]
    assert passed[Relation.RELATED_TO] > passed[Relation.PART_OF] > passed[Relation.CONTRADICTS]


def test_forgotten_memories_are_not_reached_through_edges_either(graph):
    hidden = graph.remember("Old flaky CI provider")
    graph.remember("CI moved to GitHub Actions", relations=[(hidden.id, "related_to")])
    graph.forget(hidden.id)
    assert hidden.id not in {r.memory.id for r in graph.recall("CI GitHub Actions")}


def test_recall_filters_by_type(graph):
    graph.remember("Prefers tea over coffee", "preference")
    fact = graph.remember("The office coffee machine is broken", "fact")
    assert [r.memory.id for r in graph.recall("coffee", types=["fact"])] == [fact.id]


def test_recall_filters_by_time_range(graph, clock):
    clock.now = datetime(2024, 1, 10, tzinfo=UTC).timestamp()
    graph.remember("Sprint review went well", "event")
    clock.now = datetime(2024, 3, 10, tzinfo=UTC).timestamp()
    march = graph.remember("Sprint review was cancelled", "event")
    clock.now = datetime(2024, 5, 10, tzinfo=UTC).timestamp()
    graph.remember("Sprint review moved online", "event")
    found = graph.recall("sprint review", since="2024-03-01", until="2024-03-31")
    assert [r.memory.id for r in found] == [march.id]


def test_importance_breaks_ties_between_equally_relevant_memories(graph):
    low = graph.remember("Standup is at ten", "observation")
    high = graph.remember("Standup is at ten", "decision")
    assert [r.memory.id for r in graph.recall("standup")] == [high.id, low.id]


def test_recency_breaks_ties_between_equally_important_memories(graph, clock):
    older = graph.remember("Lunch order: pizza")
    clock.advance(90 * 86_400)
    newer = graph.remember("Lunch order: pizza")
    assert [r.memory.id for r in graph.recall("pizza lunch")] == [newer.id, older.id]


def test_the_score_never_lifts_an_irrelevant_memory():
    assert score(0.0, importance=1.0, age_days=0) == 0.0
    assert score(1.0, importance=1.0, age_days=0) > score(1.0, importance=0.0, age_days=0)


def test_results_name_the_channels_that_found_them(graph):
    memory = graph.remember("Kubernetes upgrade planned for June")
    [result] = graph.recall("kubernetes upgrade")
    assert result.memory.id == memory.id
    assert set(result.channels) == {"fts"} and 0 < result.channels["fts"] <= 1
    assert result.as_dict()["channels"]["fts"] > 0


@pytest.mark.parametrize("query", ['"unbalanced', "AND OR NOT", "col:value", "*", "", "-", "(((", "NEAR("])
def test_hostile_or_empty_queries_return_results_or_nothing_never_an_error(graph, query):
    graph.remember("A note with col value and unbalanced quotes")
    assert isinstance(graph.recall(query), list)


def test_the_vector_channel_finds_a_memory_that_shares_no_words(db_path, clock):
    with open_graph(db_path, clock=clock, embedder=ConceptEmbedder()) as graph:
        pet = graph.remember("We adopted a puppy last spring")
        graph.remember("The sedan needs new tyres")
        results = graph.recall("canine")
    assert [r.memory.id for r in results] == [pet.id]
    assert set(results[0].channels) == {"vector"}



def test_words_too_common_to_rank_by_are_left_out_of_the_full_text_query(graph, db_path, monkeypatch):
    monkeypatch.setattr("mnemo.graph.recall.COMMON_MATCHES", 3)
    for place in ("Paris", "Rome", "Oslo", "Lima"):
        graph.remember(f"The user visited {place}")
    kayak = graph.remember("The user owns a red kayak")
    expression = match_expression("user kayak", graph._engine)
    assert "user" not in expression and "kayak" in expression
    assert graph.recall("user kayak")[0].memory.id == kayak.id


def test_a_query_of_only_common_words_keeps_them_all(graph, db_path, monkeypatch):
    monkeypatch.setattr("mnemo.graph.recall.COMMON_MATCHES", 2)
    for place in ("Paris", "Rome", "Oslo"):
        graph.remember(f"The user visited {place}")
    assert match_expression("user visited", graph._engine) == match_expression("user visited")


def test_a_query_of_only_common_words_ranks_their_newest_matches(graph, monkeypatch):
    # bm25 would walk every match of each word; the full-text channel ranks only their recent stretch.
    monkeypatch.setattr("mnemo.graph.recall.COMMON_MATCHES", 100)
    monkeypatch.setattr("mnemo.backends.sqlite.graph.COMMON_MATCHES", 100)
    monkeypatch.setattr("mnemo.backends.sqlite.graph.PHRASE_WINDOW", 20)
    monkeypatch.setattr("mnemo.backends.postgres.graph.PHRASE_WINDOW", 20)
    old = graph.remember("alpha alpha alpha")  # the best bm25 match of the whole table
    graph.remember_many({"content": f"alpha note {n}"} for n in range(400))
    found = [r.memory for r in graph.recall("alpha", limit=5)]
    assert old.id not in {memory.id for memory in found}
    assert len(found) == 5 and all(int(memory.content.split()[-1]) >= 300 for memory in found)


def test_a_reply_to_a_question_outranks_the_same_reply_to_a_statement(graph):
    graph.remember("Melanie: Are you excited about the adoption?", "event", source="asked")
    answer = graph.remember("Caroline: Yes, the adoption is a dream.", "event", source="asked")
    graph.remember("Melanie: I read about the adoption.", "event", source="told")
    echo = graph.remember("Caroline: Yes, the adoption is a dream.", "event", source="told")
    rank = [r.memory.id for r in graph.recall("adoption")]
    assert rank.index(answer.id) < rank.index(echo.id)


def test_a_source_that_discusses_the_topic_throughout_outranks_a_passing_mention(graph):
    talked = []
    for _ in range(3):  # three apart, so no mention borrows from a neighbouring one
        talked.append(graph.remember("pottery", "event", source="hobby chat").id)
        graph.remember("Paid the rent", "event", source="hobby chat")
        graph.remember("Fixed the sink", "event", source="hobby chat")
    graph.remember("Bought milk", "event", source="errands")
    passing = graph.remember("pottery", "event", source="errands")  # newest: it would win a tie
    rank = [r.memory.id for r in graph.recall("pottery")]
    assert rank.index(passing.id) > max(rank.index(i) for i in talked)


def test_source_scores_ignore_words_too_common_to_count(graph, db_path, monkeypatch):
    from mnemo.graph.recall import _text_query

    monkeypatch.setattr("mnemo.graph.recall.COMMON_MATCHES", 2)
    for index in range(3):
        graph.remember(f"user note {index}", source=f"s{index}")
    graph.remember("kayak trip", source="s9")
    text = _text_query("user kayak", graph._engine)
    assert text.source_terms == ('"kayak"',)


def test_a_memory_written_in_the_month_the_query_names_comes_first(graph, clock):
    clock.now = datetime(2023, 5, 8, tzinfo=UTC).timestamp()
    in_may = graph.remember("Went to a pottery class", "event")
    clock.now = datetime(2023, 9, 2, tzinfo=UTC).timestamp()  # newer: recency alone would put it first
    graph.remember("Went to a pottery class", "event")
    assert graph.recall("pottery class in May 2023")[0].memory.id == in_may.id
