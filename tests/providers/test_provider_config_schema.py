"""ConfigField: what a provider declares it needs, validated when declared and when a value is typed."""

from __future__ import annotations

import pytest

from mnemo.providers import BaseProvider, ConfigField, ProviderError
from mnemo.providers.config_schema import read_config_schema


class Declaring(BaseProvider):
    name = "acme"

    def __init__(self, schema):
        self.schema = schema

    def config_schema(self):
        if isinstance(self.schema, Exception):
            raise self.schema
        return self.schema


def test_the_kind_follows_the_default_then_the_choices():
    assert ConfigField("port", default=8080).kind is int
    assert ConfigField("mode", choices=("fast", "slow")).kind is str
    assert ConfigField("verbose", default=False).kind is bool
    assert ConfigField("ratio", kind=float).kind is float


def test_values_are_parsed_to_the_fields_kind():
    assert ConfigField("port", default=1).parse(" 9000 ") == 9000
    assert ConfigField("on", default=False).parse("yes") is True
    assert ConfigField("ratio", kind=float).parse("0.5") == 0.5
    assert ConfigField("url").parse("http://x") == "http://x"


@pytest.mark.parametrize(
    ("field", "text", "problem"),
    [
        (ConfigField("port", default=1), "eighty", "port must be an integer"),
        (ConfigField("on", default=False), "maybe", "on must be true or false"),
        (ConfigField("mode", choices=("a", "b")), "c", "mode must be one of a, b"),
        (ConfigField("key", secret=True), "two\nlines", "line breaks"),
        (ConfigField("url"), "nul\x00", "NUL"),
    ],
)
def test_a_bad_value_is_refused_naming_the_field(field, text, problem):
    with pytest.raises(ValueError, match=problem):
        field.parse(text)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"name": "bad name"}, "must match"),
        ({"name": "enabled"}, "reserved"),
        ({"name": "key", "secret": True, "default": "x"}, "secret cannot have a default"),
        ({"name": "mode", "choices": ("a",), "default": "b"}, "not one of its choices"),
        ({"name": "port", "kind": int, "default": "80"}, "is not a int"),
        ({"name": "key", "env": "1BAD"}, "not an environment variable name"),
        ({"name": "x", "kind": list}, "kind must be"),
    ],
)
def test_a_malformed_field_is_refused(kwargs, problem):
    with pytest.raises(ProviderError, match=problem):
        ConfigField(**kwargs)


def test_a_secret_lives_in_a_variable_named_for_provider_and_field():
    assert ConfigField("api_key", secret=True).env_var("acme-cloud") == "MNEMO_PROVIDER_ACME_CLOUD_API_KEY"
    assert ConfigField("api_key", secret=True, env="ACME_KEY").env_var("acme") == "ACME_KEY"


def test_a_schema_may_be_plain_dicts():
    [field] = read_config_schema(Declaring([{"name": "url", "required": True}]))
    assert field == ConfigField("url", required=True)


def test_a_provider_without_a_schema_declares_nothing():
    assert read_config_schema(BaseProvider()) == ()


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ("url", "must return a list"),
        ([{"name": "url", "colour": "red"}], "unknown keys colour"),
        ([42], "must be a ConfigField"),
        ([ConfigField("url"), ConfigField("url")], "url more than once"),
        (RuntimeError("boom"), "config_schema\\(\\) failed: RuntimeError: boom"),
    ],
)
def test_a_malformed_schema_is_refused_naming_the_problem(schema, problem):
    with pytest.raises(ProviderError, match=problem):
        read_config_schema(Declaring(schema))
