"""``mnemo providers list|status|setup``: secrets where they belong, refusals that change nothing."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import tomllib

import pytest

from mnemo.cli import main


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMO_PROVIDER_ACME_API_KEY", raising=False)
    path = tmp_path / "home"
    path.mkdir()
    (path / "config.toml").write_text('# hand-written\nuser_id = "alice"\n')
    return path


@pytest.fixture
def run(home, capsys):
    def run(*argv: str) -> tuple[int, dict | None, str]:
        code = main(["--home", str(home), *argv, "--json"])
        captured = capsys.readouterr()
        return code, json.loads(captured.out) if captured.out.strip() else None, captured.err

    return run


def _config(home) -> dict:
    return tomllib.loads((home / "config.toml").read_text())


def test_setup_writes_values_to_config_and_the_secret_to_the_env_file(plugins, home, run):
    code, report, _ = run("providers", "setup", "acme", "--set", "url=https://acme.example", "--set", "api_key=k-1")
    assert code == 0
    assert report["settings"] == ["url"] and report["secrets"] == ["api_key"]
    assert _config(home) == {"user_id": "alice", "providers": {"acme": {"url": "https://acme.example", "enabled": True}}}
    assert "k-1" not in (home / "config.toml").read_text()
    assert (home / ".env").read_text() == "MNEMO_PROVIDER_ACME_API_KEY=k-1\n"
    assert stat.S_IMODE(os.stat(home / ".env").st_mode) == 0o600
    assert (home / "config.toml").read_text().startswith('# hand-written\nuser_id = "alice"\n')


def test_setup_refuses_an_unknown_setting_and_writes_nothing(plugins, home, run):
    before = (home / "config.toml").read_bytes()
    code, _, err = run("providers", "setup", "acme", "--set", "colour=red")
    assert code == 1 and "has no setting 'colour' (its settings: url, api_key)" in err
    assert (home / "config.toml").read_bytes() == before and not (home / ".env").exists()


def test_setup_refuses_to_leave_a_required_setting_unset(plugins, home, run):
    code, _, err = run("providers", "setup", "acme", "--set", "url=https://acme.example")
    assert code == 1 and "needs api_key" in err
    assert "providers" not in _config(home)


def test_setup_of_a_broken_plugin_names_it(plugins, run):
    code, _, err = run("providers", "setup", "exploding")
    assert code == 1 and "'exploding'" in err and "no licence" in err


def test_setup_of_a_builtin_writes_its_table_without_enabling_anything(home, run):
    code, report, _ = run("providers", "setup", "graph", "--set", "context_chars=900")
    assert code == 0 and report["enabled"] is True
    assert _config(home)["providers"] == {"graph": {"context_chars": 900}}


def test_a_badly_typed_value_is_refused(home, run):
    code, _, err = run("providers", "setup", "graph", "--set", "context_chars=many")
    assert code == 1 and "context_chars must be an integer" in err


def test_interactive_setup_asks_for_each_field_and_hides_the_secret(plugins, home, monkeypatch, capsys):
    answers = iter(["https://acme.example"])
    asked_secretly = []
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    monkeypatch.setattr("getpass.getpass", lambda prompt: asked_secretly.append(prompt) or "typed-secret")
    assert main(["--home", str(home), "providers", "setup", "acme"]) == 0
    assert asked_secretly == ["api_key (secret): "]
    assert _config(home)["providers"]["acme"]["url"] == "https://acme.example"
    assert "MNEMO_PROVIDER_ACME_API_KEY=typed-secret" in (home / ".env").read_text()
    assert "wrote secret(s) api_key" in capsys.readouterr().out


def test_list_shows_installed_providers_without_importing_them(plugins, run):
    code, listing, _ = run("providers", "list")
    rows = {row["name"]: row for row in listing["providers"]}
    assert code == 0
    assert rows["archive"]["origin"] == "built-in" and rows["archive"]["enabled"] is True
    assert rows["acme"]["origin"] == "acme-memory 1.4" and rows["acme"]["enabled"] is False
    assert rows["acme"]["reason"] == "not enabled: run 'mnemo providers setup acme'"
    assert plugins not in sys.modules


def test_status_says_why_each_provider_would_not_serve(plugins, run):
    run("providers", "setup", "acme", "--set", "url=https://acme.example", "--set", "api_key=k")
    code, status, _ = run("providers", "status")
    rows = {row["name"]: row for row in status["providers"]}
    assert code == 0
    assert rows["acme"]["reason"] is None and rows["acme"]["configured"] and rows["acme"]["available"]
    assert rows["misnamed"]["reason"].endswith("the entry point must be named the same")
    assert rows["broken-import"]["reason"].startswith("cannot import")


def test_status_lists_an_enabled_provider_that_is_not_installed(home, run):
    (home / "config.toml").write_text("[providers.ghost]\nenabled = true\n")
    code, status, _ = run("providers", "status")
    [ghost] = [row for row in status["providers"] if row["name"] == "ghost"]
    assert (ghost["installed"], ghost["reason"]) == (False, "not installed")


def test_list_prints_a_table_for_people(home, capsys):
    assert main(["--home", str(home), "providers", "list"]) == 0
    out = capsys.readouterr().out
    assert "archive" in out and "built-in" in out and "ready" in out
