"""Settings: defaults, then config.toml, then MNEMO_* environment, then keyword arguments."""

from pathlib import Path

import pytest

from mnemo.config import load_settings, resolve_home
from mnemo.errors import ConfigError


def test_home_defaults_to_dot_mnemo_in_the_user_directory(monkeypatch):
    monkeypatch.delenv("MNEMO_HOME", raising=False)
    assert resolve_home() == Path.home() / ".mnemo"


def test_home_comes_from_the_environment_when_not_given(monkeypatch, tmp_path):
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path))
    assert load_settings().home == tmp_path


def test_defaults_apply_without_a_config_file(tmp_path):
    settings = load_settings(tmp_path, environ={})
    assert settings.memory_char_limit == 2200
    assert settings.user_char_limit == 1375
    assert settings.memories_dir == tmp_path / "memories"
    assert settings.database_path == tmp_path / "mnemo.db"


def test_derived_model_files_stay_in_the_home_unless_a_cache_dir_is_set(tmp_path):
    assert load_settings(tmp_path, environ={}).cache_directory == tmp_path / "cache"
    elsewhere = tmp_path / "shared-cache"
    assert load_settings(tmp_path, environ={"MNEMO_CACHE_DIR": str(elsewhere)}).cache_directory == elsewhere


def test_config_file_tables_prefix_their_keys(tmp_path):
    (tmp_path / "config.toml").write_text('memory_char_limit = 3000\n[llm]\nmodel = "local-model"\n')
    settings = load_settings(tmp_path, environ={})
    assert settings.memory_char_limit == 3000
    assert settings.llm_model == "local-model"


def test_provider_tables_are_kept_whole_for_each_provider(tmp_path):
    (tmp_path / "config.toml").write_text('[providers.mem0]\napi_url = "http://127.0.0.1:9"\nretries = 2\n')
    settings = load_settings(tmp_path, environ={})
    assert settings.providers == {"mem0": {"api_url": "http://127.0.0.1:9", "retries": 2}}


def test_environment_overrides_the_file_and_keywords_override_both(tmp_path):
    (tmp_path / "config.toml").write_text("enrich_timeout = 2.0\nuser_char_limit = 900\n")
    environ = {"MNEMO_ENRICH_TIMEOUT": "3.5", "MNEMO_USER_CHAR_LIMIT": "1000"}
    settings = load_settings(tmp_path, environ=environ, user_char_limit=1100)
    assert settings.enrich_timeout == 3.5
    assert settings.user_char_limit == 1100


def test_unknown_setting_in_the_file_is_an_error_naming_it(tmp_path):
    (tmp_path / "config.toml").write_text("memory_chars = 10\n")
    with pytest.raises(ConfigError, match="memory_chars"):
        load_settings(tmp_path, environ={})


def test_ill_typed_value_is_an_error_naming_the_setting(tmp_path):
    with pytest.raises(ConfigError, match="enrich_timeout"):
        load_settings(tmp_path, environ={"MNEMO_ENRICH_TIMEOUT": "soon"})


def test_invalid_toml_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "config.toml").write_text("memory_char_limit = = 3\n")
    with pytest.raises(ConfigError, match="config.toml"):
        load_settings(tmp_path, environ={})


def test_invalid_utf8_config_is_an_error_not_a_crash(tmp_path):
    (tmp_path / "config.toml").write_bytes(b"llm_model = \"\xff\"\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_settings(tmp_path, environ={})
