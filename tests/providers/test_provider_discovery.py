"""Plug-ins from the ``mnemo.providers`` entry-point group, with throwaway distributions really installed
into a temporary directory on the import path: enabled by name, each broken one reported by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mnemo import AgentMemory
from mnemo.providers.discovery import PluginProblem, installed_plugins, load_plugin

FAST = {"graph_embedder": "none", "archive_embedder": "none", "archive_enabled": False, "graph_enabled": False}

def _home(tmp_path, config: str):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config)
    return home


ACME_CONFIG = '[providers.acme]\nenabled = true\nurl = "https://acme.example"\n'


def test_installed_plugins_are_listed_with_their_distribution(plugins):
    [acme] = installed_plugins()["acme"]
    assert (acme.distribution, acme.version, acme.value) == ("acme-memory", "1.4", f"{plugins}:AcmeProvider")


def test_an_installed_plugin_does_nothing_until_enabled(plugins, tmp_path):
    with AgentMemory.open("s1", _home(tmp_path, ""), **FAST) as memory:
        assert memory.registry.providers == ()
        assert memory.plugin_problems == ()
    assert plugins not in sys.modules


def test_an_enabled_plugin_serves_with_its_table_and_secret(plugins, tmp_path, monkeypatch):
    home = _home(tmp_path, ACME_CONFIG)
    (home / ".env").write_text("MNEMO_PROVIDER_ACME_API_KEY=k-123\n")
    monkeypatch.delenv("MNEMO_PROVIDER_ACME_API_KEY", raising=False)
    with AgentMemory.open("s1", home, **FAST) as memory:
        [acme] = memory.registry.providers
        assert acme.config == {
            "url": "https://acme.example", "api_key": "k-123", "user_id": "", "agent_id": "", "channel_id": "",
            "home": str(home),
        }  # fmt: skip
        assert "acme knows: https://acme.example" in memory.prepare_messages("hi", [])[-1]["content"]


def test_an_enabled_plugin_serves_the_session_scope_whatever_its_table_says(plugins, tmp_path):
    home = _home(tmp_path, ACME_CONFIG + 'user_id = "everyone"\n')
    with AgentMemory.open("s1", home, user_id="alice", agent_id="coder", **FAST) as memory:
        [acme] = memory.registry.providers
        assert (acme.config["user_id"], acme.config["agent_id"], acme.config["channel_id"]) == ("alice", "coder", "")


def test_an_enabled_plugin_is_told_its_home_whatever_its_table_says(plugins, tmp_path):
    home = _home(tmp_path, ACME_CONFIG + 'home = "/elsewhere"\n')
    with AgentMemory.open("s1", home, **FAST) as memory:
        [acme] = memory.registry.providers
        assert acme.config["home"] == str(home)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("exploding", "constructing .*Exploding failed: RuntimeError: no licence"),
        ("misnamed", "calls itself 'somebody-else'"),
        ("not-a-provider", "neither a provider nor a provider class"),
        ("broken-import", "cannot import .*ModuleNotFoundError"),
        ("absent", "not installed"),
    ],
)
def test_a_broken_plugin_is_reported_by_name(plugins, name, reason):
    with pytest.raises(PluginProblem, match=reason) as raised:
        load_plugin(name)
    assert raised.value.name == name


def test_broken_plugins_never_stop_the_others_or_the_agent(plugins, tmp_path, caplog):
    broken = ["exploding", "misnamed", "not-a-provider", "broken-import", "absent"]
    config = "".join(f'[providers.{name}]\nenabled = true\n' for name in broken) + ACME_CONFIG
    with AgentMemory.open("s1", _home(tmp_path, config), **FAST) as memory:
        assert [p.name for p in memory.registry.providers] == ["acme"]
        assert sorted(problem.name for problem in memory.plugin_problems) == sorted(broken)
        assert {degradation.component for degradation in memory.degraded} == set(broken)
        memory.prepare_messages("hi", [])
    assert all(any(f"'{name}'" in record.message for record in caplog.records) for name in broken)


def test_a_plugin_shadowed_by_a_provider_the_host_passed_is_not_loaded(plugins, tmp_path):
    from mnemo.providers import BaseProvider

    class HostAcme(BaseProvider):
        name = "acme"

    with AgentMemory.open("s1", _home(tmp_path, ACME_CONFIG), providers=[HostAcme()], **FAST) as memory:
        assert [type(p).__name__ for p in memory.registry.providers] == ["HostAcme"]


def test_setup_and_status_see_a_plugin_installed_in_another_process(plugins, tmp_path):
    site = str(tmp_path / "site")
    home = tmp_path / "home"
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([site, os.environ.get("PYTHONPATH", "")])}
    environ.pop("MNEMO_PROVIDER_ACME_API_KEY", None)

    def mnemo(*argv: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "mnemo", "--home", str(home), *argv, "--json"],
            capture_output=True, text=True, env=environ, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    before = {row["name"]: row for row in mnemo("providers", "status")["providers"]}
    assert before["acme"]["reason"] == "missing required settings: url, api_key"
    mnemo("providers", "setup", "acme", "--set", "url=https://acme.example", "--set", "api_key=k-9")
    after = {row["name"]: row for row in mnemo("providers", "status")["providers"]}
    assert after["acme"] | {"missing": [], "reason": None, "enabled": True, "configured": True} == after["acme"]
    assert after["exploding"]["reason"].startswith("constructing")
