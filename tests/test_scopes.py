"""Users kept apart: through every tool, the typed API and per-turn context, one scope never reads,
changes or even confirms another scope's data. Scopes match on the exact (user, agent, channel) triple."""

from __future__ import annotations

import json

import pytest

from mnemo import (
    AgentMemory,
    InvalidArgument,
    MemoryNotFound,
    RecalledMemory,
    RecalledMessage,
    Scope,
    StorageUnavailable,
)
from mnemo.config import load_settings
from mnemo.curated import NoMatchingEntry, Remove, Replace
from mnemo.errors import ConfigError
from mnemo.scope import path_segment
from mnemo.storage import open_archive

FAST = {"graph_embedder": "none", "archive_embedder": "none"}


@pytest.fixture(params=("sqlite", "postgres"))
def tiers(request: pytest.FixtureRequest) -> dict:
    """The archive and graph settings, once per engine: the home's SQLite database, or a fresh PostgreSQL one."""
    if request.param == "postgres":
        return {**FAST, "database_url": request.getfixturevalue("postgres_url")}
    return FAST


def _call(memory: AgentMemory, tool: str, **arguments) -> dict:
    return json.loads(memory.handle_tool_call(tool, arguments))


@pytest.fixture
def alice_home(tmp_path, tiers):
    """A home where alice had a session about the okapi project and remembered a fact about it."""
    with AgentMemory.open("alice-1", tmp_path, user_id="alice", **tiers) as alice:
        alice.turn_complete("where is the okapi launch plan?", "The okapi launch plan is in the red binder.")
        saved = _call(alice, "remember", content="The okapi launch is on the ninth of March")
        assert saved["success"]
        (tmp_path / "alice-ids.json").write_text(json.dumps({"memory": saved["id"]}))
    return tmp_path


def _archive(home, tiers: dict, scope: Scope):
    """The archive the home's sessions went to, on the engine ``tiers`` names."""
    return open_archive(tiers.get("database_url") or load_settings(home).database_path, scope=scope)


def _alice_ids(home, tiers: dict) -> dict:
    ids = json.loads((home / "alice-ids.json").read_text())
    with _archive(home, tiers, Scope("alice")) as archive:
        ids["message"] = archive.messages("alice-1")[0].id
    return ids


@pytest.fixture
def bob(alice_home, tiers):
    with AgentMemory.open("bob-1", alice_home, user_id="bob", **tiers) as memory:
        yield memory


# -- session_search, every action -------------------------------------------------------------------


def test_discover_finds_nothing_of_another_user(bob):
    assert _call(bob, "session_search", action="discover", query="okapi launch plan")["count"] == 0


def test_read_of_another_users_session_is_no_such_session(bob):
    result = _call(bob, "session_search", action="read", session_id="alice-1")
    assert not result["success"] and "no session" in result["error"]


def test_scroll_around_another_users_message_is_no_such_message(alice_home, bob, tiers):
    result = _call(bob, "session_search", action="scroll", message_id=_alice_ids(alice_home, tiers)["message"])
    assert not result["success"] and "no message" in result["error"]


def test_browse_lists_only_the_callers_sessions(bob):
    listed = _call(bob, "session_search", action="browse")
    assert listed["count"] == 0


def test_the_owner_still_finds_everything(alice_home, tiers):
    with AgentMemory.open("alice-2", alice_home, user_id="alice", **tiers) as alice:
        assert _call(alice, "session_search", query="okapi launch plan")["count"] == 1
        assert [s["id"] for s in _call(alice, "session_search", action="browse")["sessions"]] == ["alice-1"]
        found = alice.recall("okapi")
        assert [m.content for m in found if isinstance(m, RecalledMemory)] == ["The okapi launch is on the ninth of March"]
        assert {m.session_id for m in found if isinstance(m, RecalledMessage)} == {"alice-1"}


def test_a_session_id_taken_by_another_user_is_not_continued(alice_home, tiers):
    # The archive refuses the id, so the session does not start and nothing is written into alice's.
    with pytest.raises(StorageUnavailable, match="another scope"):
        AgentMemory.open("alice-1", alice_home, user_id="bob", **tiers)
    with _archive(alice_home, tiers, Scope("alice")) as archive:
        assert archive.get_session("alice-1").message_count == 2
    with _archive(alice_home, tiers, Scope("bob")) as archive, pytest.raises(InvalidArgument, match="another scope"):
        archive.start_session("alice-1", exist_ok=True)


# -- the graph tools ----------------------------------------------------------------------------------


def test_recall_finds_nothing_of_another_user(bob):
    assert _call(bob, "recall", query="okapi launch")["count"] == 0
    assert bob.recall("okapi launch") == []


def test_per_turn_context_holds_nothing_of_another_user(bob):
    api = bob.prepare_messages("when is the okapi launch?", [])
    assert "okapi launch is on" not in json.dumps(api)


def test_forget_of_another_users_memory_is_unknown(alice_home, bob, tiers):
    memory_id = _alice_ids(alice_home, tiers)["memory"]
    assert not _call(bob, "forget", id=memory_id)["success"]
    with pytest.raises(MemoryNotFound):
        bob.forget(memory_id)


def test_relate_to_another_users_memory_is_unknown(alice_home, bob, tiers):
    memory_id = _alice_ids(alice_home, tiers)["memory"]
    own = bob.remember("Bob's launch is in April")
    assert not _call(bob, "relate", source=own.id, target=memory_id, relation="related_to")["success"]
    with pytest.raises(MemoryNotFound):
        bob.relate(own.id, memory_id, "related_to")


def test_remember_with_an_edge_to_another_users_memory_is_refused(alice_home, bob, tiers):
    memory_id = _alice_ids(alice_home, tiers)["memory"]
    result = _call(bob, "remember", content="The launch moved", relations=[{"target": memory_id, "relation": "updates"}])
    assert not result["success"]
    assert bob.recall("launch moved") == []  # nothing saved


def test_another_users_memory_is_untouched_by_all_of_it(alice_home, bob, tiers):
    memory_id = _alice_ids(alice_home, tiers)["memory"]
    _call(bob, "forget", id=memory_id)
    _call(bob, "remember", content="x", relations=[{"target": memory_id, "relation": "updates"}])
    with AgentMemory.open("alice-2", alice_home, user_id="alice", **tiers) as alice:
        [found] = [m for m in alice.recall("okapi launch") if isinstance(m, RecalledMemory)]
        assert found.id == memory_id and found.superseded_by is None


# -- the exact triple ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scope", [{"user_id": "alice", "agent_id": "support"}, {"user_id": "alice", "channel_id": "slack"}, {}]
)
def test_another_agent_or_channel_of_the_same_user_is_another_scope(alice_home, scope, tiers):
    with AgentMemory.open("other", alice_home, **scope, **tiers) as other:
        assert _call(other, "session_search", query="okapi")["count"] == 0
        assert other.recall("okapi") == []


def test_scope_settings_come_from_the_environment_and_the_config_file(tmp_path):
    (tmp_path / "config.toml").write_text('user_id = "carol"\nagent_id = "ops"\n')
    settings = load_settings(tmp_path, environ={"MNEMO_CHANNEL_ID": "cli"})
    assert settings.scope == Scope("carol", "ops", "cli")


def test_a_scope_id_with_control_characters_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="user_id"):
        load_settings(tmp_path, user_id="bob\x00")


# -- curated memory -------------------------------------------------------------------------------------


def test_curated_memory_is_shared_by_default(tmp_path):
    with AgentMemory.open("a", tmp_path, user_id="alice", **FAST) as alice:
        _call(alice, "memory", target="memory", action="add", content="The office wifi is okapi-5g")
    with AgentMemory.open("b", tmp_path, user_id="bob", **FAST) as bob:
        assert "okapi-5g" in bob.system_prompt()


def test_curated_memory_per_user_keeps_each_users_files_apart(tmp_path):
    per_user = {"curated_per_user": True, **FAST}
    with AgentMemory.open("a", tmp_path, user_id="alice", **per_user) as alice:
        assert _call(alice, "memory", target="user", action="add", content="Alice is allergic to peanuts")["success"]
    with AgentMemory.open("b", tmp_path, user_id="bob", **per_user) as bob:
        assert "peanuts" not in bob.system_prompt()
        assert bob.store.entries("user") == ()
        refused = _call(bob, "memory", target="user", action="remove", old_text="peanuts")
        assert not refused["success"]
        with pytest.raises(NoMatchingEntry):
            bob.curated_edit("user", Replace("peanuts", "Alice eats peanuts"))
        with pytest.raises(NoMatchingEntry):
            bob.curated_edit("user", Remove("peanuts"))
    with AgentMemory.open("a2", tmp_path, user_id="alice", **per_user) as alice:
        assert "Alice is allergic to peanuts" in alice.system_prompt()
    assert (tmp_path / "users" / "alice" / "memories" / "USER.md").is_file()
    assert not (tmp_path / "memories" / "USER.md").exists()


def test_per_user_curated_memory_feeds_only_that_users_graph(tmp_path):
    per_user = {"curated_per_user": True, **FAST}
    with AgentMemory.open("a", tmp_path, user_id="alice", **per_user) as alice:
        _call(alice, "memory", target="user", action="add", content="Alice prefers morning meetings")
    with AgentMemory.open("a2", tmp_path, user_id="alice", **per_user) as alice:
        assert [m.content for m in alice.recall("morning meetings")] == ["Alice prefers morning meetings"]
    with AgentMemory.open("b", tmp_path, user_id="bob", **per_user) as bob:
        assert bob.recall("morning meetings") == []


@pytest.mark.parametrize(
    ("first", "second"),
    [("Bob", "bob"), ("a.b", "a%2eb"), ("..", "%2e%2e"), ("a/b", "a%2fb"), ("é", "e\u0301"), ("ß", "ss")],
)
def test_two_user_ids_never_share_a_directory(first, second):
    assert path_segment(first) != path_segment(second)
    assert path_segment(first).lower() != path_segment(second).lower()


@pytest.mark.parametrize("user_id", ["..", ".", "../../etc", "a/b", "a\\b", "C:", "~root", "Ünïcode 名前"])
def test_a_user_directory_is_one_safe_name(tmp_path, user_id):
    segment = path_segment(user_id)
    assert segment not in (".", "..") and "/" not in segment and "\\" not in segment and "." not in segment
    settings = load_settings(tmp_path, user_id=user_id, curated_per_user=True)
    assert settings.memories_dir.parent.parent == tmp_path / "users"


def test_a_user_id_too_long_for_a_directory_is_refused_with_the_setting_named(tmp_path):
    with pytest.raises(ConfigError, match="user_id"):
        load_settings(tmp_path, user_id="名" * 100, curated_per_user=True)


def test_both_tiers_take_their_scope_from_the_settings(tmp_path):
    (tmp_path / "config.toml").write_text('user_id = "dora"\n[providers.graph]\nuser_id = "eve"\n')
    with AgentMemory.open("s", tmp_path, **FAST) as memory:
        assert memory._graph().scope == memory._archive().archive.scope == Scope("dora")
