"""The README's main job: `mnemo demo` on a throwaway home."""

import json

from mnemo.cli import main
from mnemo.demo import run_demo


def test_demo_saves_curated_notes_and_holds_the_poisoned_one_for_review(tmp_path):
    report = run_demo(tmp_path)
    assert report.memory_entries == ("Staging DB: Postgres 15 on port 6543", "Deploy: `make deploy` from the infra repo")
    assert "Indents with tabs, never spaces" in report.user_entries
    held = [t for turn in report.turns for t in turn.tools if t["result"].get("status") == "awaiting_review"]
    assert len(held) == 1 and "id_rsa" in held[0]["arguments"]["content"]
    assert "id_rsa" not in json.dumps(held[0]["result"])  # the model is told in one line, never shown the payload


def test_session_two_sees_the_snapshot_the_graph_context_and_the_archive(tmp_path):
    report = run_demo(tmp_path)
    assert "port 6543" in report.session_two_system_prompt
    assert "GitHub Actions" in report.session_two_context
    assert report.session_two_context.startswith("<memory-context>")
    answers = [turn.reply for turn in report.turns if turn.session == "2"]
    assert "6543" in answers[0] and "GitHub Actions" in answers[0]
    assert "demo-session-1" in answers[1] and "Jenkins" in answers[1]


def test_demo_command_prints_json_and_exits_zero(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "demo", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["memory_entries"][0] == "Staging DB: Postgres 15 on port 6543"


def test_demo_command_prints_readable_sections(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "demo"]) == 0
    out = capsys.readouterr().out
    for heading in ("session 1", "session 2", "frozen system-prompt snapshot", "fenced context"):
        assert heading in out


def test_demo_refuses_a_home_that_is_not_empty(tmp_path, capsys):
    real = tmp_path / "real-home"
    (real / "memories").mkdir(parents=True)
    (real / "memories" / "USER.md").write_text("Name: Grace", encoding="utf-8")
    assert main(["--home", str(real), "demo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mnemo: home {real} is not empty (memories)") and "--force" in err and err.count("\n") == 1
    assert sorted(p.name for p in real.rglob("*")) == ["USER.md", "memories"]
    assert (real / "memories" / "USER.md").read_text(encoding="utf-8") == "Name: Grace"


def test_demo_refuses_a_home_holding_only_a_database(tmp_path, capsys):
    from mnemo.config import load_settings

    home = tmp_path / "home"
    home.mkdir()
    database = load_settings(home).database_path
    database.write_bytes(b"")
    assert main(["--home", str(home), "demo", "--json"]) == 1
    refused = json.loads(capsys.readouterr().out)
    assert refused["success"] is False and database.name in refused["error"]
    assert database.read_bytes() == b""


def test_demo_runs_on_a_missing_or_empty_home_and_with_force_on_a_used_one(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in ([str(tmp_path / "new" / "home"), "demo"], [str(empty), "demo"], [str(empty), "demo", "--force"]):
        assert main(["--home", *argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["success"] is True
