"""Bearer tokens and listen addresses of ``mnemo serve --http``."""

from __future__ import annotations

import pytest

from mnemo.config import load_settings
from mnemo.errors import ConfigError
from mnemo.serve import TokenMap, parse_address
from mnemo.serve.auth import bearer_token
from mnemo.serve.transports import is_loopback

ADA = "ada-token-0123456789abcdef"
BO = "bo-token-0123456789abcdef"


def _settings(tmp_path, config: str = "", **overrides):
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    return load_settings(tmp_path, environ={}, **overrides)


def test_each_configured_token_names_its_user(tmp_path):
    settings = _settings(
        tmp_path,
        "curated_per_user = true\n"
        f'[[serve.tokens]]\ntoken = "{ADA}"\nuser_id = "ada"\n[[serve.tokens]]\ntoken = "{BO}"\nuser_id = "bo"\n',
    )
    tokens = TokenMap.from_settings(settings)
    assert (tokens.user_for(ADA), tokens.user_for(BO), tokens.user_for(ADA[:-1]), tokens.user_for("")) == (
        "ada",
        "bo",
        None,
        None,
    )


def test_the_single_token_is_the_configured_users(tmp_path):
    tokens = TokenMap.from_settings(_settings(tmp_path, user_id="carol"), ADA)
    assert tokens.user_for(ADA) == "carol"


def test_the_serve_token_setting_is_a_secret(tmp_path):
    settings = _settings(tmp_path, serve_token=ADA)
    assert ADA not in repr(settings)
    assert TokenMap.from_settings(settings).user_for(ADA) == ""


def test_a_short_token_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="serve_token"):
        _settings(tmp_path, serve_token="short")
    with pytest.raises(ConfigError, match="at least 16"):
        TokenMap.from_settings(_settings(tmp_path), "short")


def test_the_same_token_twice_is_refused(tmp_path):
    settings = _settings(tmp_path, f'[[serve.tokens]]\ntoken = "{ADA}"\nuser_id = ""\n')
    with pytest.raises(ConfigError, match="twice"):
        TokenMap.from_settings(settings, ADA)


def test_several_users_need_per_user_curated_files(tmp_path):
    settings = _settings(
        tmp_path,
        f'[[serve.tokens]]\ntoken = "{ADA}"\nuser_id = "ada"\n[[serve.tokens]]\ntoken = "{BO}"\nuser_id = "bo"\n',
    )
    with pytest.raises(ConfigError, match="curated_per_user"):
        TokenMap.from_settings(settings)


def test_a_token_table_with_an_unknown_field_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="serve_tokens"):
        _settings(tmp_path, f'[[serve.tokens]]\ntoken = "{ADA}"\nuser = "ada"\n')


@pytest.mark.parametrize(
    ("header", "expected"),
    [(b"Bearer abc", "abc"), (b"bearer  abc ", "abc"), (b"Basic abc", None), (b"Bearer ", None)],
)
def test_only_a_bearer_credential_counts(header, expected):
    assert bearer_token({"headers": [(b"authorization", header)]}) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8765", ("127.0.0.1", 8765)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:9000", ("::1", 9000)),
        ("localhost:0", ("localhost", 0)),
    ],
)
def test_listen_addresses(value, expected):
    assert parse_address(value) == expected


@pytest.mark.parametrize("value", ["", "host:", "host:port", "70000"])
def test_bad_listen_addresses_are_refused(value):
    with pytest.raises(ConfigError):
        parse_address(value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("192.168.1.4", False)],
)
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback
