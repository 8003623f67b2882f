"""SessionArchive: storage, search behaviour, filters, lineage, deletion."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo._db import connect
from mnemo.archive import SessionNotFound
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.errors import InvalidArgument

from .conftest import conversation


def _ids(hits) -> list[int]:
    return [hit.message.id for hit in hits]


def test_multipart_content_round_trips_losslessly(archive):
    parts = [
        {"type": "text", "text": "Here is the floor plan"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "of the new office"},
    ]
    sid = archive.start_session()
    archive.append(sid, {"role": "user", "content": parts, "name": "dana"})
    [stored] = archive.messages(sid)
    assert stored.to_message() == {"role": "user", "content": parts, "name": "dana"}


def test_multipart_text_parts_are_searchable_but_image_data_is_not(archive):
    sid = archive.start_session()
    archive.append(sid, {"role": "user", "content": [
        {"type": "text", "text": "floor plan"}, {"type": "image_url", "image_url": {"url": "https://x/blueprint.png"}},
    ]})
    assert len(archive.search_messages("floor plan")) == 1
    assert archive.search_messages("blueprint") == []


def test_tool_calls_and_tool_names_are_searchable(archive):
    sid = archive.start_session()
    archive.append_many(sid, [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "kubectl_rollout", "arguments": '{"deployment": "billing-api"}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "restarted"},
    ])
    [call] = archive.search_messages("billing-api")
    assert call.message.tool_calls[0]["function"]["name"] == "kubectl_rollout"
    by_name = archive.search_messages("kubectl_rollout", role="tool")
    assert [h.message.text for h in by_name] == ["restarted"]
    assert by_name[0].message.tool_name == "kubectl_rollout"
    assert archive.get_session(sid).tool_call_count == 1


def test_appending_to_an_unknown_session_is_refused(archive):
    with pytest.raises(SessionNotFound):
        archive.append("nope", {"role": "user", "content": "hi"})


def test_an_invalid_message_in_a_batch_writes_nothing(archive):
    sid = archive.start_session()
    with pytest.raises(InvalidArgument) as refused:
        archive.append_many(sid, [{"role": "user", "content": "fine"}, {"role": "user", "content": 42}])
    assert refused.value.field == "messages[1].content"
    assert archive.messages(sid) == []
    assert archive.get_session(sid).message_count == 0


def test_reusing_a_session_id_is_refused_unless_continuing(archive):
    archive.start_session("s1")
    with pytest.raises(InvalidArgument):
        archive.start_session("s1")
    assert archive.start_session("s1", exist_ok=True) == "s1"


def test_reopening_keeps_data_and_schema(tmp_path):
    with SessionArchive(tmp_path / "state.db") as first:
        sid, _ = conversation(first, ["the staging server is down"])
    with SessionArchive(tmp_path / "state.db") as second:
        assert [h.message.session_id for h in second.search_messages("staging")] == [sid]
        version = second._db.execute("SELECT version FROM schema_versions WHERE component = 'archive'").fetchone()[0]
    assert version >= 1


def test_natural_language_question_falls_back_to_meaningful_terms(archive):
    conversation(archive, [
        "Caroline: I finally called the adoption agency yesterday!",
        "Melanie: That is wonderful news.",
        "Caroline: The weather was nice at the beach.",
    ])
    hits = archive.search_messages("what did Caroline say about the adoption agency?", limit=3)
    assert hits[0].message.text.startswith("Caroline: I finally called the adoption agency")


def test_strict_matches_rank_before_fallback_matches(archive):
    conversation(archive, [
        "deploy " * 5 + "only the first word, many times",
        "we deploy to staging every friday",
    ])
    hits = archive.search_messages("deploy staging", limit=5)
    assert hits[0].message.text == "we deploy to staging every friday"
    assert len(hits) == 2


def test_hits_carry_snippet_session_and_neighbours(archive):
    sid, ids = conversation(archive, ["first", "we should rotate the TLS certificate", "third"])
    [hit] = archive.search_messages("certificate", context=1)
    assert "**certificate**" in hit.snippet
    assert hit.session.id == sid
    assert [m.id for m in hit.before] == [ids[0]] and [m.id for m in hit.after] == [ids[2]]


def test_a_hits_neighbours_are_the_spoken_turns_around_it_not_the_tool_traffic_between(archive):
    sid = archive.start_session()
    question, *_, reply = archive.append_many(sid, [
        {"role": "user", "content": "which port does staging listen on?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_config", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "assistant", "content": "It listens on 6543."},
    ])  # fmt: skip
    [hit] = archive.search_messages("staging port", context=1)
    assert hit.message.id == question and [m.id for m in hit.after] == [reply]


def test_adjacent_hits_each_get_their_own_neighbours(archive):
    _, ids = conversation(archive, ["intro", "kernel panic one", "kernel panic two", "outro"])
    hits = {hit.message.id: hit for hit in archive.search_messages("kernel panic", context=2)}
    assert [m.id for m in hits[ids[1]].before] == [ids[0]] and [m.id for m in hits[ids[1]].after] == ids[2:]
    assert [m.id for m in hits[ids[2]].before] == ids[:2] and [m.id for m in hits[ids[2]].after] == [ids[3]]


def test_neighbours_of_hundreds_of_hits_stay_in_their_sessions(archive):
    # More hits than one neighbour query takes, across many sessions.
    sessions = [conversation(archive, [f"filler {n}", f"zebra sighting {n}", f"after {n}"]) for n in range(260)]
    hits = archive.search_messages("zebra", limit=1000, context=1)
    assert len(hits) == 260
    for hit in hits:
        _, ids = next(s for s in sessions if s[0] == hit.session.id)
        assert hit.message.id == ids[1]
        assert [m.id for m in hit.before] == [ids[0]] and [m.id for m in hit.after] == [ids[2]]


def test_a_search_groups_hits_from_sessions_with_and_without_parents(archive):
    conversation(archive, ["ledger close"], session_id="a")
    conversation(archive, ["ledger audit"], session_id="a2", parent_session_id="a")
    conversation(archive, ["ledger recount"], session_id="a3", parent_session_id="a2")
    conversation(archive, ["ledger backup"], session_id="b")
    groups = {g.root.id: sorted(h.message.session_id for h in g.hits) for g in archive.search("ledger", limit=5)}
    assert groups == {"a": ["a", "a2", "a3"], "b": ["b"]}


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "AND", "OR OR", "NOT", "a AND", "*", "col:value", "^start", "(group", "NEAR(a b)",
     "docker-compose", "P2.2", "my_app.config.ts", '"" ""', "x" * 5000, "\x00", "\ud800", "-- DROP TABLE messages;"],
)
def test_hostile_queries_return_results_or_nothing(archive, query):
    conversation(archive, ["docker-compose failed on P2.2 in my_app.config.ts"])
    assert isinstance(archive.search(query), list)
    assert isinstance(archive.search_messages(query), list)


def test_role_filter(archive):
    conversation(archive, ["the invoice is late", "I will send the invoice today"])
    assert [h.message.role for h in archive.search_messages("invoice", role="assistant")] == ["assistant"]


def test_subagent_and_tool_sessions_are_hidden_unless_asked_for(archive):
    conversation(archive, ["grafana dashboard broken"], source="subagent")
    visible, _ = conversation(archive, ["grafana dashboard fixed"], source="cli")
    assert [h.message.session_id for h in archive.search_messages("grafana")] == [visible]
    assert len(archive.search_messages("grafana", include_hidden=True)) == 2
    assert len(archive.search_messages("grafana", source="subagent")) == 1


def test_date_range_filter(archive):
    sid = archive.start_session()
    archive.append_many(sid, [
        {"role": "user", "content": "backup ran", "timestamp": "2026-01-05T10:00:00Z"},
        {"role": "user", "content": "backup failed", "timestamp": "2026-03-05T10:00:00Z"},
    ])
    hits = archive.search_messages("backup", since="2026-02-01", until=datetime(2026, 4, 1, tzinfo=UTC))
    assert [h.message.text for h in hits] == ["backup failed"]


def test_sort_newest_and_oldest(archive):
    sid = archive.start_session()
    archive.append_many(sid, [
        {"role": "user", "content": f"migration step {n}", "timestamp": 1_700_000_000 + n} for n in range(3)
    ])
    assert [h.message.text for h in archive.search_messages("migration", sort="newest")][0] == "migration step 2"
    assert [h.message.text for h in archive.search_messages("migration", sort="oldest")][0] == "migration step 0"
    with pytest.raises(InvalidArgument):
        archive.search_messages("migration", sort="sideways")


def test_results_are_grouped_by_lineage_root(archive):
    root, _ = conversation(archive, ["postgres vacuum settings"], session_id="root")
    conversation(archive, ["postgres vacuum again after compression"], session_id="child", parent_session_id=root)
    conversation(archive, ["postgres replication lag"], session_id="other")
    groups = archive.search("postgres", limit=5)
    assert sorted(g.root.id for g in groups) == ["other", "root"]
    lineage = next(g for g in groups if g.root.id == "root")
    assert sorted(h.message.session_id for h in lineage.hits) == ["child", "root"]


def test_limit_counts_sessions_not_messages(archive):
    for n in range(4):
        conversation(archive, ["kafka consumer lag"] * 3, session_id=f"s{n}")
    groups = archive.search("kafka", limit=2, hits_per_session=3)
    assert len(groups) == 2
    assert all(len(g.hits) == 3 for g in groups)


def test_excluding_the_current_session_excludes_its_lineage(archive):
    conversation(archive, ["redis eviction policy"], session_id="past")
    conversation(archive, ["redis eviction again"], session_id="now-root")
    conversation(archive, ["redis eviction once more"], session_id="now", parent_session_id="now-root")
    groups = archive.search("redis eviction", exclude_session="now")
    assert [g.root.id for g in groups] == ["past"]


def test_deleting_a_session_removes_it_from_search(archive):
    gone, _ = conversation(archive, ["my secret passport number"], session_id="gone")
    kept, _ = conversation(archive, ["passport renewal appointment"], session_id="kept")
    assert archive.delete_session(gone) == 1
    assert [h.message.session_id for h in archive.search_messages("passport")] == [kept]
    assert archive.get_session(gone) is None
    assert archive.count_messages() == 1
    assert archive.check_index(repair=False)


def test_deleting_a_parent_keeps_children_in_the_lineage(archive):
    conversation(archive, ["a"], session_id="grand")
    conversation(archive, ["b"], session_id="parent", parent_session_id="grand")
    conversation(archive, ["c"], session_id="child", parent_session_id="parent")
    archive.delete_session("parent")
    assert archive.get_session("child").parent_session_id == "grand"
    assert archive.lineage_root("child") == "grand"


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("我们明天去东京塔看夜景", "东京塔"),
        ("我们明天去东京塔看夜景", "东京"),
        ("我们明天去东京塔看夜景", "塔"),
        ("明日は新しいプロジェクトの会議があります", "プロジェクト"),
        ("서울에서 회의가 있습니다", "서울"),
        ("서울에서 회의가 있습니다", "회의가"),
    ],
)
def test_cjk_text_is_findable(archive, text, query):
    conversation(archive, [text, "unrelated english text"])
    hits = archive.search_messages(query)
    assert [h.message.text for h in hits] == [text]
    assert query in hits[0].snippet.replace("**", "")


def test_cjk_natural_language_falls_back_to_character_grams(archive):
    conversation(archive, ["我们明天去东京塔看夜景"])
    assert len(archive.search_messages("东京塔的夜景怎么样")) == 1


def test_a_damaged_index_is_rebuilt_and_search_still_works(tmp_path):
    path = tmp_path / "state.db"
    with SessionArchive(path) as archive:
        for n in range(30):
            conversation(archive, [f"message {n} about the deployment pipeline", f"reply {n} mentions rollback"])
    raw = connect(path)
    raw.execute("UPDATE messages_fts_data SET block = randomblob(length(block)) WHERE id > 10")
    raw.close()
    with SessionArchive(path) as archive:
        assert len(archive.search_messages("rollback", limit=50)) == 30
        assert archive.check_index(repair=False)


def test_check_index_detects_and_repairs_damage(tmp_path):
    path = tmp_path / "state.db"
    with SessionArchive(path) as archive:
        conversation(archive, [f"line {n} of the incident report" for n in range(40)])
        archive._db.execute("DELETE FROM messages_fts_data WHERE id > 10")
        assert archive.check_index() is False
        assert archive.check_index(repair=False) is True
        assert len(archive.search_messages("incident", limit=100)) == 40


def test_list_sessions_newest_first_hiding_subagents(archive):
    archive.start_session("old", started_at="2026-01-01")
    archive.start_session("new", started_at="2026-02-01")
    archive.start_session("sub", started_at="2026-03-01", source="subagent")
    assert [s.id for s in archive.list_sessions()] == ["new", "old"]
    assert [s.id for s in archive.list_sessions(include_hidden=True, order="oldest")] == ["old", "new", "sub"]


def test_end_session_records_end_and_title(archive):
    sid = archive.start_session()
    archive.end_session(sid, title="Billing outage")
    info = archive.get_session(sid)
    assert info.title == "Billing outage" and info.ended_at is not None
    with pytest.raises(SessionNotFound):
        archive.end_session("missing")


def test_lone_surrogates_anywhere_in_a_message_are_refused(archive):
    sid = archive.start_session()
    with pytest.raises(InvalidArgument) as refused:
        archive.append(sid, {"role": "user", "content": [{"type": "text", "text": "bad \ud800"}]})
    assert refused.value.field == "messages[0].content"
    assert archive.messages(sid) == []


def test_without_trigram_support_cjk_search_falls_back_to_substrings(tmp_path, monkeypatch):
    from mnemo.archive import schema

    monkeypatch.setattr(schema, "trigram_available", lambda conn: False)  # as on SQLite < 3.34
    with SessionArchive(tmp_path / "old.db") as archive:
        assert schema.cjk_tokenizer(archive._db) == "unicode61"
        conversation(archive, ["我们明天去东京塔看夜景", "nothing here"])
        assert [h.message.text for h in archive.search_messages("东京塔")] == ["我们明天去东京塔看夜景"]


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path):
    from mnemo._db import DatabaseError

    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatabaseError):
        SessionArchive(path)
    assert path.read_bytes() == b"this is not sqlite" * 100
