"""``--user`` / ``--agent`` / ``--channel`` on every ``mnemo`` command: each sees only its scope."""

from __future__ import annotations

import json

import pytest

from mnemo import AgentMemory
from mnemo.cli import main

FAST = {"graph_embedder": "none", "archive_embedder": "none"}


@pytest.fixture
def home(tmp_path):
    """alice's session about the okapi project, her memory of it and her curated profile (per user)."""
    (tmp_path / "config.toml").write_text('curated_per_user = true\ngraph_embedder = "none"\n')
    with AgentMemory.open("alice-1", tmp_path, user_id="alice", **FAST) as alice:
        alice.turn_complete("where is the okapi launch plan?", "The okapi launch plan is in the red binder.")
        alice.remember("The okapi launch is on the ninth of March")
        alice.handle_tool_call("memory", {"target": "user", "action": "add", "content": "Alice likes okapis"})
    return tmp_path


@pytest.fixture
def run(home, capsys):
    def run(*argv: str) -> tuple[int, dict | list | None, str]:
        code = main(["--home", str(home), *argv, "--json"])
        captured = capsys.readouterr()
        return code, json.loads(captured.out) if captured.out.strip() else None, captured.err

    return run


def _alice_memory_id(run) -> str:
    code, found, _ = run("graph", "recall", "launch", "--user", "alice")
    assert code == 0 and found["count"] == 1
    return found["results"][0]["id"]


def test_sessions_list_and_search_show_only_the_users_sessions(run):
    assert [s["id"] for s in run("sessions", "list", "--user", "alice")[1]["sessions"]] == ["alice-1"]
    assert run("sessions", "list", "--user", "bob")[1]["sessions"] == []
    assert run("sessions", "search", "okapi", "--user", "alice")[1]["count"] == 1
    assert run("sessions", "search", "okapi", "--user", "bob")[1]["count"] == 0
    assert run("sessions", "list")[1]["sessions"] == []  # no --user: the empty scope, not everyone


def test_sessions_show_and_delete_of_another_users_session_are_no_such_session(run):
    code, _, err = run("sessions", "show", "alice-1", "--user", "bob")
    assert code == 1 and "no session" in err
    code, _, err = run("sessions", "delete", "alice-1", "--user", "bob")
    assert code == 1 and "no session" in err
    assert [s["id"] for s in run("sessions", "list", "--user", "alice")[1]["sessions"]] == ["alice-1"]


def test_graph_recall_show_stats_and_export_show_only_the_users_memories(run):
    assert run("graph", "recall", "launch", "--user", "alice")[1]["count"] == 1
    assert run("graph", "recall", "launch", "--user", "bob")[1]["count"] == 0
    assert run("graph", "show", "--user", "bob")[1]["count"] == 0
    assert run("graph", "stats", "--user", "bob")[1]["memories"] == 0
    code, exported, _ = run("graph", "export", "--format", "json", "--user", "bob")
    assert code == 0 and "okapi" not in json.dumps(exported)


def test_graph_show_forget_and_relate_of_another_users_memory_are_unknown(run):
    memory_id = _alice_memory_id(run)
    for argv in (("graph", "show", memory_id), ("graph", "forget", memory_id), ("graph", "forget", "--purge", memory_id)):
        code, _, err = run(*argv, "--user", "bob")
        assert code == 1 and "no memory" in err
    code, saved, _ = run("graph", "add", "Bob's launch", "--user", "bob")
    code, _, err = run("graph", "relate", saved["memory"]["id"], memory_id, "related_to", "--user", "bob")
    assert code == 1 and "no memory" in err
    code, _, err = run("graph", "add", "Launch moved", "--replaces", memory_id, "--user", "bob")
    assert code == 1 and "no memory" in err
    assert run("graph", "recall", "launch", "--user", "alice")[1]["results"][0]["superseded_by"] is None


def test_memory_commands_read_and_edit_only_the_users_curated_files(run):
    assert run("memory", "show", "--target", "user", "--user", "alice")[1]["user"]["entries"] == ["Alice likes okapis"]
    assert run("memory", "show", "--target", "user", "--user", "bob")[1]["user"]["entries"] == []
    assert "okapis" not in json.dumps(run("memory", "snapshot", "--user", "bob")[1])
    code, _, _ = run("memory", "remove", "--target", "user", "okapis", "--user", "bob")
    assert code == 1
    code, _, _ = run("memory", "replace", "--target", "user", "okapis", "Alice hates okapis", "--user", "bob")
    assert code == 1
    assert run("memory", "show", "--target", "user", "--user", "alice")[1]["user"]["entries"] == ["Alice likes okapis"]


def test_scope_options_go_before_or_after_the_command(home, capsys):
    assert main(["--home", str(home), "--user", "alice", "--json", "sessions", "list"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)["sessions"]] == ["alice-1"]
    assert main(["--home", str(home), "--user", "alice", "graph", "--json", "recall", "launch"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1


def test_agent_and_channel_narrow_the_scope(run):
    assert run("sessions", "list", "--user", "alice", "--agent", "support")[1]["sessions"] == []
    assert run("graph", "recall", "launch", "--user", "alice", "--channel", "slack")[1]["count"] == 0


def test_the_scope_may_come_from_the_environment(home, capsys, monkeypatch):
    monkeypatch.setenv("MNEMO_USER_ID", "alice")
    assert main(["--home", str(home), "sessions", "list", "--json"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)["sessions"]] == ["alice-1"]
    assert main(["--home", str(home), "sessions", "list", "--json", "--user", "bob"]) == 0  # the option wins
    assert json.loads(capsys.readouterr().out)["sessions"] == []
