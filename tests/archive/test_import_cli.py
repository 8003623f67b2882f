"""Importing JSONL conversations and the ``mnemo sessions`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.archive import ImportReport, import_jsonl
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.cli import main
from mnemo.config import load_settings
from mnemo.errors import InvalidArgument


def _write(path: Path, items: list) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def test_a_file_of_messages_becomes_one_session(archive, tmp_path):
    path = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "where are the grafana dashboards?", "timestamp": "2026-05-01T09:00:00Z"},
        {"role": "assistant", "content": "Under /ops/grafana."},
    ])
    [sid] = import_jsonl(archive, path).created
    info = archive.get_session(sid)
    assert info.message_count == 2 and info.title == "chat" and info.source == "import"
    # an untimed reply is dated with the conversation, not with the import
    assert [m.created_at for m in archive.messages(sid)] == [info.started_at, info.started_at]


def test_a_file_of_session_objects_gives_one_session_each(archive, tmp_path):
    path = _write(tmp_path / "many.jsonl", [
        {"id": "a", "title": "first", "messages": [{"role": "user", "content": "alpha"}]},
        {"id": "b", "parent_session_id": "a", "messages": [{"role": "user", "content": "beta"}]},
        [{"role": "user", "content": "gamma"}],
    ])
    created = import_jsonl(archive, path).created
    assert created[:2] == ("a", "b") and len(created) == 3
    assert archive.get_session("b").parent_session_id == "a"


def test_reimporting_skips_sessions_already_archived(archive, tmp_path):
    path = _write(tmp_path / "s.jsonl", [{"id": "a", "messages": [{"role": "user", "content": "alpha"}]}])
    assert import_jsonl(archive, path) == ImportReport(created=("a",), messages=1)
    assert import_jsonl(archive, path) == ImportReport(skipped=("a",))
    assert archive.count_messages() == 1


@pytest.mark.parametrize(
    "items",
    [
        [{"role": "user", "content": "one file, one session"}, {"role": "assistant", "content": "yes"}],
        [[{"role": "user", "content": "bare list"}], {"title": "t", "messages": [{"role": "user", "content": "object"}]}],
    ],
    ids=["message-lines", "session-lines"],
)
def test_reimporting_a_file_without_session_ids_adds_nothing(archive, tmp_path, items):
    path = _write(tmp_path / "noids.jsonl", items)
    first = import_jsonl(archive, path)
    before = archive.count_messages()
    second = import_jsonl(archive, path)
    assert second.created == () and second.skipped == first.created and second.messages == 0
    assert archive.count_messages() == before
    assert len(archive.list_sessions()) == len(first.created)


def test_the_derived_id_depends_on_content_not_on_file_name_or_source(archive, tmp_path):
    items = [{"role": "user", "content": "same words"}]
    [sid] = import_jsonl(archive, _write(tmp_path / "a.jsonl", items)).created
    assert import_jsonl(archive, _write(tmp_path / "b.jsonl", items), source="other").skipped == (sid,)
    changed = import_jsonl(archive, _write(tmp_path / "a.jsonl", [*items, {"role": "assistant", "content": "more"}]))
    assert len(changed.created) == 1 and changed.created[0] != sid


def test_identical_sessions_in_one_file_are_each_kept_and_still_import_once(archive, tmp_path):
    same = [{"role": "user", "content": "hi"}]
    path = _write(tmp_path / "twins.jsonl", [same, same])
    created = import_jsonl(archive, path).created
    assert len(set(created)) == 2
    assert import_jsonl(archive, path).skipped == created


def test_an_interrupted_import_finishes_the_rest_when_run_again(archive, tmp_path, monkeypatch):
    path = _write(tmp_path / "three.jsonl", [[{"role": "user", "content": f"session {n}"}] for n in range(3)])
    real_append = archive.append_many
    calls = []

    def fail_on_second(session_id, messages):
        calls.append(session_id)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_append(session_id, messages)

    monkeypatch.setattr(archive, "append_many", fail_on_second)
    with pytest.raises(OSError):
        import_jsonl(archive, path)
    # the failed session rolled back whole: no session row without its messages
    assert [s.message_count for s in archive.list_sessions()] == [1]
    monkeypatch.undo()
    report = import_jsonl(archive, path)
    assert len(report.created) == 2 and len(report.skipped) == 1
    assert archive.count_messages() == 3


@pytest.mark.parametrize("role", ["bot", "User", "narrator", " "])
def test_an_unknown_role_refuses_the_file_naming_line_and_role(archive, tmp_path, role):
    path = tmp_path / "roles.jsonl"
    path.write_text(
        json.dumps({"role": "user", "content": "fine"}) + "\n" + json.dumps({"role": role, "content": "odd"}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidArgument) as refused:
        import_jsonl(archive, path)
    assert refused.value.field == "roles.jsonl:2[0].role"
    if role.strip():
        assert repr(role) in refused.value.problem
    assert archive.list_sessions() == [] and archive.count_messages() == 0


def test_role_aliases_are_stored_as_their_role_and_read_back_as_given(archive, tmp_path):
    path = _write(tmp_path / "aliases.jsonl", [
        {"role": "developer", "content": "be brief"},
        {"role": "function", "name": "lookup", "content": "42"},
    ])
    [sid] = import_jsonl(archive, path).created
    stored = archive.messages(sid)
    assert [m.role for m in stored] == ["system", "tool"]
    assert [m.to_message()["role"] for m in stored] == ["developer", "function"]
    assert stored[1].tool_name == "lookup"


def test_a_parent_that_is_nowhere_refuses_the_file_before_writing(archive, tmp_path):
    path = _write(tmp_path / "orphans.jsonl", [
        {"id": "a", "messages": [{"role": "user", "content": "first"}]},
        {"id": "b", "parent_session_id": "missing", "messages": [{"role": "user", "content": "second"}]},
    ])
    with pytest.raises(InvalidArgument) as refused:
        import_jsonl(archive, path)
    assert refused.value.field == "orphans.jsonl:2.parent_session_id"
    assert archive.list_sessions() == []


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        (['{"role": "user", "content": "ok"}', "{not json"], "bad.jsonl:2"),
        (['{"messages": [{"role": "user", "content": 5}]}'], "bad.jsonl:1.messages[0].content"),
        (['{"role": "user", "content": "ok"}', '{"messages": []}'], "path"),
        (['"just a string"'], "bad.jsonl:1"),
        (['{"messages": [], "title": {"a": 1}}'], "bad.jsonl:1.title"),
        (['{"messages": [], "started_at": "yesterday-ish"}'], "bad.jsonl:1.started_at"),
        (['{"id": "", "messages": []}'], "bad.jsonl:1.id"),
        (['{"role": "user", "content": "fine"}', '{"role": "user", "content": "\\ud800 broken"}'], "bad.jsonl:2[0].content"),
    ],
)
def test_a_bad_file_is_refused_whole_and_changes_nothing(archive, tmp_path, lines, field):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidArgument) as refused:
        import_jsonl(archive, path)
    assert refused.value.field == field
    assert archive.list_sessions() == [] and archive.count_messages() == 0


def _cli(home: Path, *args: str) -> int:
    return main(["--home", str(home), "sessions", *args])


def test_cli_import_list_search_show_delete(tmp_path, capsys):
    path = _write(tmp_path / "ops.jsonl", [
        {"id": "ops-1", "title": "pager", "messages": [
            {"role": "user", "content": "the pager alert for disk usage fired"},
            {"role": "assistant", "content": "I cleaned /var/log on db-2."},
        ]},
    ])
    home = tmp_path / "home"
    assert _cli(home, "import", str(path)) == 0
    assert "imported 1 session" in capsys.readouterr().out

    assert _cli(home, "list", "--json") == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)["sessions"]] == ["ops-1"]

    assert _cli(home, "search", "pager", "alert", "--json") == 0
    [group] = json.loads(capsys.readouterr().out)["sessions"]
    assert group["session"]["id"] == "ops-1" and "**pager**" in group["hits"][0]["snippet"]

    assert _cli(home, "search", "disk", "--role", "user") == 0
    assert "ops-1" in capsys.readouterr().out

    assert _cli(home, "show", "ops-1") == 0
    assert "I cleaned /var/log on db-2." in capsys.readouterr().out

    assert _cli(home, "delete", "ops-1") == 0
    capsys.readouterr()
    assert _cli(home, "search", "pager", "--json") == 0
    assert json.loads(capsys.readouterr().out)["sessions"] == []


def test_cli_reports_unknown_sessions_and_missing_files(tmp_path, capsys):
    home = tmp_path / "home"
    assert _cli(home, "show", "nope") == 1
    assert "no session with id 'nope'" in capsys.readouterr().err
    assert _cli(home, "delete", "nope") == 1
    assert _cli(home, "import", str(tmp_path / "missing.jsonl")) == 1
    assert "no such file" in capsys.readouterr().err


def test_cli_list_renders_a_table(tmp_path, capsys):
    home = tmp_path / "home"
    with SessionArchive(home / "state.db") as archive:
        archive.start_session("abc", title="Quarterly planning")
    assert _cli(home, "list") == 0
    out = capsys.readouterr().out
    assert "abc" in out and "Quarterly planning" in out


def test_cli_reimport_reports_skipped_sessions_and_adds_nothing(tmp_path, capsys):
    path = _write(tmp_path / "plain.jsonl", [{"role": "user", "content": "no ids here"}, {"role": "assistant", "content": "ok"}])
    home = tmp_path / "home"
    assert _cli(home, "import", str(path), "--json") == 0
    first = json.loads(capsys.readouterr().out)
    assert len(first["imported_sessions"]) == 1 and first["messages"] == 2
    assert _cli(home, "import", str(path), "--json") == 0
    second = json.loads(capsys.readouterr().out)
    assert second["imported_sessions"] == [] and second["skipped_sessions"] == first["imported_sessions"]
    assert second["files"][str(path)] == {"created": [], "skipped": first["imported_sessions"], "messages": 0}
    assert _cli(home, "import", str(path)) == 0
    assert "imported 0 session(s) from 1 file(s); 1 already archived, skipped" in capsys.readouterr().out
    assert _cli(home, "list", "--json") == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1


def test_cli_refuses_an_unknown_role_naming_line_and_role(tmp_path, capsys):
    path = _write(tmp_path / "roles.jsonl", [{"role": "user", "content": "hi"}, {"role": "bot", "content": "hello"}])
    home = tmp_path / "home"
    assert _cli(home, "import", str(path), "--json") == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("mnemo: roles.jsonl:2[0].role: unknown role 'bot'") and captured.err.count("\n") == 1
    refused = json.loads(captured.out)
    assert refused["success"] is False and refused["field"] == "roles.jsonl:2[0].role"
    assert _cli(home, "list", "--json") == 0
    assert json.loads(capsys.readouterr().out)["count"] == 0


def test_two_processes_importing_one_file_add_it_once(tmp_path):
    import os
    import subprocess
    import sys

    path = _write(tmp_path / "shared.jsonl", [[{"role": "user", "content": f"session {n} " + "text " * 50}] for n in range(40)])
    home = tmp_path / "home"
    argv = [sys.executable, "-m", "mnemo", "--home", str(home), "sessions", "import", str(path), "--json"]
    workers = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ) for _ in range(2)]
    results = [worker.communicate(timeout=120) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], results
    reports = [json.loads(out) for out, _ in results]
    assert sorted(len(r["imported_sessions"]) + len(r["skipped_sessions"]) for r in reports) == [40, 40]
    assert sum(len(r["imported_sessions"]) for r in reports) == 40
    with SessionArchive(load_settings(home).database_path) as archive:
        assert archive.count_messages() == 40 and len(archive.list_sessions(limit=100)) == 40
