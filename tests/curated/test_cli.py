"""``mnemo memory``: show, add, replace, remove and snapshot from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.cli import main


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run(home: Path, *argv: str) -> int:
    return main(["--home", str(home), "memory", *argv])


def test_add_replace_remove_and_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(home, "add", "uses pytest") == 0
    assert run(home, "add", "--target", "user", "name is Ada") == 0
    assert run(home, "replace", "pytest", "uses pytest -x") == 0
    assert run(home, "add", "temporary") == 0
    assert run(home, "remove", "temporary") == 0
    capsys.readouterr()

    assert run(home, "show", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["memory"]["entries"] == ["uses pytest -x"]
    assert shown["user"]["entries"] == ["name is Ada"]
    assert shown["user"]["usage"] == "0% — 11/1,375 chars"


def test_show_one_target_as_text(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "--target", "user", "likes tea")
    capsys.readouterr()
    assert run(home, "show", "--target", "user") == 0
    out = capsys.readouterr().out
    assert "likes tea" in out and "MEMORY.md" not in out


def test_snapshot_prints_the_system_prompt_blocks(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "uses pytest")
    run(home, "add", "--target", "user", "name is Ada")
    capsys.readouterr()
    assert run(home, "snapshot") == 0
    out = capsys.readouterr().out
    assert "MEMORY (your personal notes) [0% — 11/2,200 chars]" in out
    assert "USER PROFILE (who the user is)" in out and out.rstrip().endswith("name is Ada")


def test_snapshot_of_one_target_as_the_readme_shows(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "uses pytest")
    run(home, "add", "--target", "user", "name is Ada")
    capsys.readouterr()
    assert run(home, "snapshot", "--target", "user") == 0
    out = capsys.readouterr().out
    assert "USER PROFILE" in out and "name is Ada" in out and "uses pytest" not in out
    assert run(home, "snapshot", "--target", "memory", "--json") == 0
    blocks = json.loads(capsys.readouterr().out)
    assert set(blocks) == {"success", "memory"} and "uses pytest" in blocks["memory"]


def test_edit_with_json_output(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "add", "--json", "--home", str(home), "x"]) == 0
    assert json.loads(capsys.readouterr().out)["entry_count"] == 1


def test_refusal_exits_non_zero_with_a_one_line_reason(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "uses pytest")
    capsys.readouterr()
    assert run(home, "remove", "nose") == 1
    err = capsys.readouterr().err
    assert err.startswith("mnemo: no memory entry contains 'nose'") and err.count("\n") == 1


def test_refusal_with_json_prints_the_recovery_data(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "uses pytest")
    capsys.readouterr()
    assert run(home, "--json", "remove", "nose") == 1
    assert json.loads(capsys.readouterr().out)["current_entries"] == ["uses pytest"]


def test_unknown_target_is_a_one_line_error(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(home, "add", "--target", "notes", "x") == 1
    assert capsys.readouterr().err == "mnemo: target: must be 'memory' or 'user', got 'notes'\n"


def test_home_comes_from_mnemo_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "env-home"))
    assert main(["memory", "add", "from env"]) == 0
    assert (tmp_path / "env-home" / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "from env"


def test_limits_come_from_settings(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_MEMORY_CHAR_LIMIT", "5")
    assert run(home, "add", "too long for five") == 1


def test_history_lists_writes_and_restore_brings_an_entry_back(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "uses zsh")
    run(home, "remove", "zsh")
    capsys.readouterr()
    assert run(home, "history", "--json") == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert [r["operation"] for r in records] == ["add", "remove"]
    assert records[1]["removed"] == ["uses zsh"] and records[1]["origin"]["via"] == "cli"
    assert records[1]["origin"]["provenance"] == {"origin": "operator", "via": "cli"}
    assert run(home, "restore", records[1]["id"]) == 0
    capsys.readouterr()
    run(home, "show", "--json")
    assert json.loads(capsys.readouterr().out)["memory"]["entries"] == ["uses zsh"]


def test_remove_by_id_from_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(home, "add", "alpha entry")
    run(home, "add", "beta entry")
    capsys.readouterr()
    run(home, "show", "--json")
    ids = json.loads(capsys.readouterr().out)["memory"]["ids"]
    assert run(home, "remove", "--id", ids[1]) == 0
    capsys.readouterr()
    run(home, "show", "--json")
    assert json.loads(capsys.readouterr().out)["memory"]["entries"] == ["alpha entry"]


def test_restore_refused_with_its_reason(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(home, "restore", "h12345678") == 1
    assert "no curated history record" in capsys.readouterr().err
