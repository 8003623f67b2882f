"""What a provider declares it needs to be configured: a list of :class:`ConfigField`.

A provider that defines ``config_schema()`` returns these (or plain dicts with the same keys); ``mnemo
providers setup NAME`` asks for them, writes ordinary values to ``config.toml``'s ``[providers.NAME]``
table and secrets to the home's environment file, and at session start each provider's ``initialize``
receives the table with defaults filled in and its secrets read back from the environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from .protocol import ProviderError

__all__ = ["ConfigField", "Scalar", "read_config_schema"]

Scalar = str | int | float | bool

_FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})

# Keys of the [providers.NAME] table that belong to mnemo, not to the provider.
RESERVED_KEYS = frozenset({"enabled"})


@dataclass(frozen=True)
class ConfigField:
    """One setting a provider needs.

    ``kind`` is the value's type (``str``, ``int``, ``float`` or ``bool``); left out, it is the type of
    ``default``, else of the first choice, else ``str``. A ``secret`` is never written to ``config.toml``: it lives in the
    environment variable ``env`` (default ``MNEMO_PROVIDER_<PROVIDER>_<NAME>``), set in the process
    environment or in the home's environment file.
    """

    name: str
    description: str = ""
    secret: bool = False
    required: bool = False
    default: Scalar | None = None
    choices: tuple[Scalar, ...] = ()
    env: str | None = None
    kind: type | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _FIELD_NAME.match(self.name):
            raise ProviderError(f"config field name {self.name!r} must match [A-Za-z][A-Za-z0-9_]{{0,63}}")
        if self.name in RESERVED_KEYS:
            raise ProviderError(f"config field name {self.name!r} is reserved by mnemo")
        if not isinstance(self.description, str):
            raise ProviderError(f"config field {self.name}: description must be text")
        for flag in ("secret", "required"):
            if not isinstance(getattr(self, flag), bool):
                raise ProviderError(f"config field {self.name}: {flag} must be a bool")
        if self.default is not None and not isinstance(self.default, (str, int, float)):
            raise ProviderError(f"config field {self.name}: default must be text, a number or a bool")
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Iterable):
            raise ProviderError(f"config field {self.name}: choices must be a list")
        object.__setattr__(self, "choices", tuple(self.choices))
        for choice in self.choices:
            if not isinstance(choice, (str, int, float)):
                raise ProviderError(f"config field {self.name}: choice {choice!r} must be text, a number or a bool")
        if self.choices and self.default is not None and self.default not in self.choices:
            raise ProviderError(f"config field {self.name}: default {self.default!r} is not one of its choices")
        if self.secret and self.default is not None:
            raise ProviderError(f"config field {self.name}: a secret cannot have a default")
        if self.kind is None:
            sample = self.default if self.default is not None else (self.choices[0] if self.choices else "")
            object.__setattr__(self, "kind", type(sample))
        if self.kind not in (str, int, float, bool):
            raise ProviderError(f"config field {self.name}: kind must be str, int, float or bool, got {self.kind!r}")
        for value in (self.default, *self.choices):
            if value is not None and not _is_kind(value, self.kind):
                raise ProviderError(f"config field {self.name}: {value!r} is not a {self.kind.__name__}")
        if self.env is not None and (not isinstance(self.env, str) or not _ENV_NAME.match(self.env)):
            raise ProviderError(f"config field {self.name}: env {self.env!r} is not an environment variable name")

    def env_var(self, provider: str) -> str:
        """The environment variable holding this (secret) field for ``provider``."""
        if self.env:
            return self.env
        return re.sub(r"[^A-Za-z0-9]", "_", f"MNEMO_PROVIDER_{provider}_{self.name}").upper()

    def parse(self, text: str) -> Scalar:
        """``text`` (as typed at a prompt or in ``--set``) as this field's value; ValueError naming the problem."""
        kind = self.kind
        value: Scalar
        if kind is bool:
            lowered = text.strip().lower()
            if lowered not in _TRUE | _FALSE:
                raise ValueError(f"{self.name} must be true or false, got {text!r}")
            value = lowered in _TRUE
        elif kind is int or kind is float:
            try:
                value = int(text.strip()) if kind is int else float(text.strip())
            except ValueError:
                raise ValueError(f"{self.name} must be {'an integer' if kind is int else 'a number'}, got {text!r}") from None
        else:
            if "\x00" in text or (self.secret and ("\n" in text or "\r" in text)):
                raise ValueError(f"{self.name} must not contain NUL{' or line breaks' if self.secret else ''}")
            value = text
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.choices))}; got {text!r}")
        return value


def _is_kind(value: object, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def read_config_schema(provider: object) -> tuple[ConfigField, ...]:
    """What ``provider.config_schema()`` declares, validated; ``()`` when it defines none.

    Raises :class:`ProviderError` naming the problem (including the provider's own exception).
    """
    try:
        declare = getattr(provider, "config_schema", None)
    except Exception as exc:
        raise ProviderError(f"config_schema is unreadable: {type(exc).__name__}: {exc}") from exc
    if declare is None:
        return ()
    if not callable(declare):
        raise ProviderError("config_schema must be a method")
    try:
        declared = declare()
    except Exception as exc:
        raise ProviderError(f"config_schema() failed: {type(exc).__name__}: {exc}") from exc
    if declared is None:
        return ()
    if isinstance(declared, (str, bytes, Mapping)) or not isinstance(declared, Iterable):
        raise ProviderError(f"config_schema() must return a list of fields, got {type(declared).__name__}")
    known = {f.name for f in fields(ConfigField)}
    schema: list[ConfigField] = []
    for index, item in enumerate(declared):
        if isinstance(item, Mapping):
            unknown = set(item) - known
            if unknown:
                raise ProviderError(f"config_schema()[{index}]: unknown keys {', '.join(sorted(map(str, unknown)))}")
            try:
                item = ConfigField(**item)
            except TypeError as exc:
                raise ProviderError(f"config_schema()[{index}]: {exc}") from exc
        elif not isinstance(item, ConfigField):
            raise ProviderError(f"config_schema()[{index}] must be a ConfigField, got {type(item).__name__}")
        schema.append(item)
    names = [item.name for item in schema]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ProviderError(f"config_schema() declares {', '.join(repeated)} more than once")
    return tuple(schema)
