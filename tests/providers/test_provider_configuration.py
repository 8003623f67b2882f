"""Where provider settings are written and how they reach initialize: config.toml edited in place, secrets
in HOME/.env at 0600, nothing else in either file disturbed, unreadable files never overwritten."""

from __future__ import annotations

import multiprocessing
import os
import stat
import tomllib

import pytest

from mnemo.errors import ConfigError
from mnemo.providers import ConfigField
from mnemo.providers.configuration import (
    provider_config,
    read_env_file,
    update_env_file,
    update_provider_table,
    update_settings,
)

EXISTING = """# mnemo settings, kept by hand
user_id = "alice"   # whose memory

[providers.acme]
url = "http://old"
timeout = 5

# the graph's own table
[providers.graph]
context_chars = 900
"""


def test_setting_a_table_keeps_the_rest_of_the_file_byte_for_byte(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(EXISTING)
    update_provider_table(tmp_path, "acme", {"url": "http://new", "enabled": True})
    text = path.read_text()
    assert text.startswith('# mnemo settings, kept by hand\nuser_id = "alice"   # whose memory\n\n[providers.acme]\n')
    assert text.endswith("# the graph's own table\n[providers.graph]\ncontext_chars = 900\n")
    assert tomllib.loads(text)["providers"]["acme"] == {"url": "http://new", "timeout": 5, "enabled": True}


def test_a_new_table_is_appended(tmp_path):
    (tmp_path / "config.toml").write_text('user_id = "alice"')
    update_provider_table(tmp_path, "acme", {"url": "http://x"})
    assert tomllib.loads((tmp_path / "config.toml").read_text()) == {
        "user_id": "alice",
        "providers": {"acme": {"url": "http://x"}},
    }


def test_the_file_is_created_when_missing(tmp_path):
    update_provider_table(tmp_path / "home", "acme", {"port": 8080})
    assert tomllib.loads((tmp_path / "home" / "config.toml").read_text()) == {"providers": {"acme": {"port": 8080}}}


def test_hostile_text_is_written_as_a_toml_string(tmp_path):
    value = 'x"\n[providers.evil]\nenabled = true\n\\ \x7f\t'
    update_provider_table(tmp_path, "acme", {"url": value})
    assert tomllib.loads((tmp_path / "config.toml").read_text()) == {"providers": {"acme": {"url": value}}}


def test_invalid_toml_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("user_id = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        update_provider_table(tmp_path, "acme", {"url": "x"})
    assert path.read_text() == "user_id = \n"


def test_invalid_utf8_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes(b"user_id = '\xff'\n")
    with pytest.raises(ConfigError, match="cannot read"):
        update_provider_table(tmp_path, "acme", {"url": "x"})
    assert path.read_bytes() == b"user_id = '\xff'\n"


def test_a_layout_setup_does_not_edit_is_refused_unchanged(tmp_path):
    path = tmp_path / "config.toml"
    original = 'providers.acme.url = "http://x"\n'
    path.write_text(original)
    with pytest.raises(ConfigError, match="add these settings by hand: url"):
        update_provider_table(tmp_path, "acme", {"url": "http://y"})
    assert path.read_text() == original


def _set_one(home: str, index: int) -> None:
    update_provider_table(home, "acme", {f"key{index}": index})
    update_env_file(home, {f"SECRET_{index}": f"value{index}"})


def test_concurrent_processes_lose_no_update(tmp_path):
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_set_one, args=(str(tmp_path), i)) for i in range(6)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    table = tomllib.loads((tmp_path / "config.toml").read_text())["providers"]["acme"]
    assert table == {f"key{i}": i for i in range(6)}
    assert read_env_file(tmp_path) == {f"SECRET_{i}": f"value{i}" for i in range(6)}


# -- the environment file -------------------------------------------------------------------------------


def test_secrets_go_to_a_0600_env_file(tmp_path):
    path = update_env_file(tmp_path, {"MNEMO_PROVIDER_ACME_API_KEY": "s3cr3t"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_env_file(tmp_path) == {"MNEMO_PROVIDER_ACME_API_KEY": "s3cr3t"}


def test_an_existing_env_file_is_tightened_to_0600_and_its_other_lines_kept(tmp_path):
    path = tmp_path / ".env"
    path.write_text("# mine\nOTHER=1\nexport ACME_KEY=old\n")
    os.chmod(path, 0o644)
    update_env_file(tmp_path, {"ACME_KEY": "new value with $pace"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text().startswith("# mine\nOTHER=1\nACME_KEY=")
    assert read_env_file(tmp_path) == {"OTHER": "1", "ACME_KEY": "new value with $pace"}


def test_a_secret_with_a_line_break_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="line breaks"):
        update_env_file(tmp_path, {"KEY": "a\nEVIL=1"})
    assert not (tmp_path / ".env").exists()


def test_an_unreadable_env_file_is_never_overwritten(tmp_path):
    path = tmp_path / ".env"
    path.write_bytes(b"KEY=\xff\n")
    with pytest.raises(ConfigError, match="cannot read"):
        update_env_file(tmp_path, {"KEY": "x"})
    assert path.read_bytes() == b"KEY=\xff\n"


# -- what initialize receives ------------------------------------------------------------------------


SCHEMA = (
    ConfigField("url", required=True),
    ConfigField("timeout", default=10),
    ConfigField("api_key", secret=True, required=True),
)


def test_the_provider_gets_its_table_with_defaults_and_secrets(tmp_path):
    update_env_file(tmp_path, {"MNEMO_PROVIDER_ACME_API_KEY": "from-file"})
    config = provider_config("acme", {"url": "http://x", "enabled": True}, SCHEMA, home=tmp_path, environ={})
    assert config == {"url": "http://x", "timeout": 10, "api_key": "from-file"}


def test_the_process_environment_wins_over_the_env_file(tmp_path):
    update_env_file(tmp_path, {"MNEMO_PROVIDER_ACME_API_KEY": "from-file"})
    environ = {"MNEMO_PROVIDER_ACME_API_KEY": "from-env"}
    assert provider_config("acme", {}, SCHEMA, home=tmp_path, environ=environ)["api_key"] == "from-env"


# -- top-level settings (what a host's setup saves, e.g. Hermes' `hermes memory setup`) -------------


def test_settings_replace_their_line_and_keep_the_tables(tmp_path):
    (tmp_path / "config.toml").write_text(EXISTING, encoding="utf-8")
    update_settings(tmp_path, {"user_id": "bob", "bulletin_chars": 800})
    text = (tmp_path / "config.toml").read_text(encoding="utf-8")
    document = tomllib.loads(text)
    assert document["user_id"] == "bob" and document["bulletin_chars"] == 800
    assert document["providers"] == tomllib.loads(EXISTING)["providers"]
    assert text.count("user_id") == 1 and "# the graph's own table" in text


def test_settings_are_created_in_a_new_file(tmp_path):
    update_settings(tmp_path / "home", {"graph_embedder": "none"})
    assert tomllib.loads((tmp_path / "home" / "config.toml").read_text())["graph_embedder"] == "none"


@pytest.mark.parametrize("values", [{"graph_embedder": "bogus"}, {"no_such_setting": 1}, {"bulletin_chars": -5}])
def test_an_invalid_setting_is_refused_and_nothing_is_written(tmp_path, values):
    (tmp_path / "config.toml").write_text(EXISTING, encoding="utf-8")
    with pytest.raises(ConfigError):
        update_settings(tmp_path, values)
    assert (tmp_path / "config.toml").read_text(encoding="utf-8") == EXISTING
