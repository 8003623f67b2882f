"""Importing JSONL conversations and the ``mnemo sessions`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.archive import SessionArchive
from mnemo.cli import main
from mnemo.errors import InvalidArgument


def _write(path: Path, items: list) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def test_a_file_of_messages_becomes_one_session(archive, tmp_path):
    path = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "where are the grafana dashboards?", "timestamp": "2026-05-01T09:00:00Z"},
        {"role": "assistant", "content": "Under /ops/grafana."},
    ])
    [sid] = archive.import_jsonl(path)
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
    created = archive.import_jsonl(path)
    assert created[:2] == ["a", "b"] and len(created) == 3
    assert archive.get_session("b").parent_session_id == "a"


def test_reimporting_skips_sessions_already_archived(archive, tmp_path):
    path = _write(tmp_path / "s.jsonl", [{"id": "a", "messages": [{"role": "user", "content": "alpha"}]}])
    assert archive.import_jsonl(path) == ["a"]
    assert archive.import_jsonl(path) == []
    assert archive.count_messages() == 1


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        (['{"role": "user", "content": "ok"}', "{not json"], "bad.jsonl:2"),
        (['{"messages": [{"role": "user", "content": 5}]}'], "bad.jsonl:1.messages[0].content"),
        (['{"role": "user", "content": "ok"}', '{"messages": []}'], "path"),
        (['"just a string"'], "bad.jsonl:1"),
        (['{"role": "user", "content": "fine"}', '{"role": "user", "content": "\\ud800 broken"}'], "bad.jsonl:2[0].content"),
    ],
)
def test_a_bad_file_is_refused_whole_and_changes_nothing(archive, tmp_path, lines, field):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidArgument) as refused:
        archive.import_jsonl(path)
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
    assert [s["id"] for s in json.loads(capsys.readouterr().out)] == ["ops-1"]

    assert _cli(home, "search", "pager", "alert", "--json") == 0
    [group] = json.loads(capsys.readouterr().out)
    assert group["session"]["id"] == "ops-1" and "**pager**" in group["hits"][0]["snippet"]

    assert _cli(home, "search", "disk", "--role", "user") == 0
    assert "ops-1" in capsys.readouterr().out

    assert _cli(home, "show", "ops-1") == 0
    assert "I cleaned /var/log on db-2." in capsys.readouterr().out

    assert _cli(home, "delete", "ops-1") == 0
    capsys.readouterr()
    assert _cli(home, "search", "pager", "--json") == 0
    assert json.loads(capsys.readouterr().out) == []


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
