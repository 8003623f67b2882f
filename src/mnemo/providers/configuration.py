"""Where a provider's settings live, and how they reach its ``initialize``.

Ordinary values go to the ``[providers.NAME]`` table of ``MNEMO_HOME/config.toml``; secrets go to the
home's environment file ``MNEMO_HOME/.env`` (mode 0600), never to ``config.toml``. Both files are
edited in place: the rest of their content (other tables, comments, other variables) is kept byte for
byte, each write is atomic and durable (temp file, fsync, rename, fsync of the directory) under a
cross-process lock, and a file that cannot be read or parsed is refused rather than overwritten. An
edit whose result would not read back as exactly the intended document is refused too.

At session start :func:`provider_config` gives a provider its table with the schema's defaults filled
in and its secrets read from the process environment, else the environment file.
"""

from __future__ import annotations

import logging
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..config import CONFIG_FILENAME, Settings
from ..curated.files import MemoryFile, UnreadableFile
from ..errors import ConfigError
from .config_schema import RESERVED_KEYS, ConfigField, read_config_schema
from .protocol import ProviderError

log = logging.getLogger("mnemo.providers")

__all__ = [
    "ENV_FILENAME",
    "missing_required",
    "provider_config",
    "read_env_file",
    "session_configs",
    "update_env_file",
    "update_provider_table",
]

ENV_FILENAME = ".env"

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")


# -- config.toml -------------------------------------------------------------------------------------


def update_provider_table(home: str | os.PathLike[str], name: str, values: Mapping[str, Any]) -> Path:
    """Set ``values`` in ``config.toml``'s ``[providers.NAME]`` table (other keys of the table and the
    rest of the file are kept); returns the file's path. Raises :class:`ConfigError`."""

    def edit(text: str, document: dict[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
        providers = document.get("providers", {})
        if not isinstance(providers, dict) or not isinstance(providers.get(name, {}), dict):
            raise ConfigError(f"{path}: 'providers.{name}' is not a table; fix it before running setup")
        table = {**providers.get(name, {}), **values}
        return _with_table(text, name, table), {**document, "providers": {**providers, name: table}}

    return _edit_config(home, values, edit)


def update_settings(home: str | os.PathLike[str], values: Mapping[str, Any]) -> Path:
    """Set top-level settings (``graph_embedder = "none"``...) in ``config.toml``, keeping the rest of the
    file; returns its path. Raises :class:`ConfigError` (nothing written) when a value is not a valid
    setting or the file is laid out in a way this cannot edit."""
    unknown = sorted(set(values) - set(Settings.model_fields) - {"home", "providers"})
    if unknown or "home" in values or "providers" in values:
        raise ConfigError(f"not settings that config.toml sets: {', '.join(unknown or ['home/providers'])}")

    try:
        Settings(home=Path(home), **values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid settings: {problems}") from None

    def edit(text: str, document: dict[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
        return _with_root_keys(text, values), {**document, **values}

    return _edit_config(home, values, edit)


def _edit_config(
    home: str | os.PathLike[str],
    values: Mapping[str, Any],
    edit: Callable[[str, dict[str, Any], Path], tuple[str, dict[str, Any]]],
) -> Path:
    """Read ``config.toml`` under its lock, let ``edit`` give the new text and the document it must parse
    to, and write it only when it does: a layout the edit would misread is refused, never mangled."""
    path = Path(home) / CONFIG_FILENAME
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = MemoryFile(path)
    with target.locked():
        text = _read(target)
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML ({exc}); fix it before running setup") from exc
        updated, expected = edit(text, document, path)
        try:
            reread = tomllib.loads(updated)
        except tomllib.TOMLDecodeError:
            reread = None
        if reread != expected:
            raise ConfigError(f"{path} is laid out in a way setup does not edit; add these settings by hand: {', '.join(sorted(values))}")
        _write(target, updated)
    return path


def _with_root_keys(text: str, values: Mapping[str, Any]) -> str:
    """``text`` with each of ``values`` set as a top-level ``key = value`` line: replaced where the key
    already has one before the first table, else added just before it."""
    first_table = re.compile(r"^[ \t]*\[", re.MULTILINE).search(text)
    cut = first_table.start() if first_table else len(text)
    root, rest = text[:cut], text[cut:]
    for key, value in values.items():
        line = f"{_toml_key(key)} = {_toml_value(value)}"
        pattern = re.compile(rf"^[ \t]*{re.escape(_toml_key(key))}[ \t]*=.*$", re.MULTILINE)
        if pattern.search(root):
            root = pattern.sub(lambda _, line=line: line, root, count=1)
        else:
            root = root + ("" if not root or root.endswith("\n") else "\n") + line + "\n"
    if rest and not root.endswith("\n\n"):
        root += "\n"  # a blank line before the first table, as a person would leave it
    return root + rest


def _with_table(text: str, name: str, table: Mapping[str, Any]) -> str:
    """``text`` with the ``[providers.NAME]`` section's body replaced by ``table`` (appended if absent)."""
    key = _toml_key(name)
    body = "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in table.items())
    quoted = "|".join(re.escape(variant) for variant in {name, f'"{name}"', f"'{name}'", key})
    header = re.compile(rf"^[ \t]*\[[ \t]*providers[ \t]*\.[ \t]*(?:{quoted})[ \t]*\][ \t]*(?:#.*)?$", re.MULTILINE)
    found = header.search(text)
    if found is None:
        separator = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{separator}[providers.{key}]\n{body}"
    line_end = text.find("\n", found.end())
    start = len(text) if line_end == -1 else line_end + 1
    following = re.compile(r"^[ \t]*\[", re.MULTILINE).search(text, start)
    end = following.start() if following else len(text)
    # Blank lines and comments just above the next header belong to it, not to this table.
    section = text[start:end].splitlines(keepends=True)
    while section and (not section[-1].strip() or section[-1].lstrip().startswith("#")):
        end -= len(section.pop())
    prefix = text[:start] if text[:start].endswith("\n") else text[:start] + "\n"
    return f"{prefix}{body}{text[end:]}"


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    escaped = []
    for char in text:
        if char in ('"', "\\"):
            escaped.append("\\" + char)
        elif char == "\n":
            escaped.append("\\n")
        elif char == "\t":
            escaped.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04X}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    # Dates and times read from the file come back as what tomllib gave; their isoformat is TOML.
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise ConfigError(f"cannot write a {type(value).__name__} to config.toml")


# -- the environment file ----------------------------------------------------------------------------


def read_env_file(home: str | os.PathLike[str]) -> dict[str, str]:
    """The variables of ``HOME/.env`` (``{}`` when it does not exist); ConfigError if it cannot be read."""
    return _parse_env(_read(MemoryFile(Path(home) / ENV_FILENAME)))


def update_env_file(home: str | os.PathLike[str], variables: Mapping[str, str]) -> Path:
    """Set ``variables`` in ``HOME/.env``, keeping its other lines, with the file's mode at 0600;
    returns the file's path. Raises :class:`ConfigError`."""
    for key, value in variables.items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ConfigError(f"{key!r} is not an environment variable name")
        if any(char in value for char in "\n\r\x00"):
            raise ConfigError(f"the value of {key} must not contain line breaks or NUL")
    path = Path(home) / ENV_FILENAME
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = MemoryFile(path)
    with target.locked():
        text = _read(target)
        lines = text.splitlines(keepends=True)
        left = dict(variables)
        kept = []
        for line in lines:
            match = _ENV_LINE.match(line)
            if match and match.group(1) in variables:
                if match.group(1) in left:
                    kept.append(f"{match.group(1)}={_env_value(left.pop(match.group(1)))}\n")
                continue  # a repeated assignment of a key being set would override the new value
            kept.append(line if line.endswith("\n") else line + "\n")
        kept.extend(f"{key}={_env_value(value)}\n" for key, value in left.items())
        if target.target.exists():
            # Tightened before the write: the atomic write keeps the mode of the file it replaces.
            os.chmod(target.target, 0o600)
        _write(target, "".join(kept))
    return path


def _env_value(value: str) -> str:
    if re.match(r"^[A-Za-z0-9_./:@+,-]*$", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`") + '"'


def _parse_env(text: str) -> dict[str, str]:
    variables = {}
    for line in text.splitlines():
        match = _ENV_LINE.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        raw = match.group(2).strip()
        if len(raw) >= 2 and raw[0] == raw[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", raw[1:-1])
        elif len(raw) >= 2 and raw[0] == raw[-1] == "'":
            value = raw[1:-1]
        else:
            value = raw.split(" #", 1)[0].rstrip()
        variables[match.group(1)] = value
    return variables


def _read(target: MemoryFile) -> str:
    try:
        return target.read_text()
    except UnreadableFile as exc:
        raise ConfigError(f"cannot read {target.path}: {exc.reason}; it is left as it is") from exc


def _write(target: MemoryFile, text: str) -> None:
    try:
        target.write_text(text)
    except OSError as exc:
        raise ConfigError(f"cannot write {target.path}: {exc.strerror or exc}") from exc


# -- what a provider receives ----------------------------------------------------------------------


def provider_config(
    name: str,
    table: Mapping[str, Any],
    schema: tuple[ConfigField, ...],
    *,
    home: str | os.PathLike[str],
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Provider ``name``'s config for ``initialize``: its table without mnemo's own keys, the schema's
    defaults for what is unset, and each secret from the environment, else the home's ``.env``."""
    environ = os.environ if environ is None else environ
    config = {key: value for key, value in table.items() if key not in RESERVED_KEYS}
    env_file: dict[str, str] | None = None
    for field in schema:
        if field.secret:
            variable = field.env_var(name)
            if variable in environ:
                config[field.name] = environ[variable]
                continue
            if env_file is None:
                env_file = read_env_file(home)
            if variable in env_file:
                config[field.name] = env_file[variable]
        elif field.name not in config and field.default is not None:
            config[field.name] = field.default
    return config


def session_configs(
    registered: Iterable[tuple[str, object]], tables: Mapping[str, Any], *, home: str | os.PathLike[str]
) -> dict[str, dict[str, Any]]:
    """:func:`provider_config` for every ``(name, provider)``, as ``initialize_all`` takes it.

    A provider whose schema is malformed, or whose secrets cannot be read, gets its table as it is,
    with the reason logged under its name; what it then lacks is for its ``initialize`` to refuse.
    """
    configs = {}
    for name, provider in registered:
        table = tables.get(name, {})
        if not isinstance(table, Mapping):
            configs[name] = table  # initialize_all refuses it, naming the provider
            continue
        try:
            configs[name] = provider_config(name, table, read_config_schema(provider), home=home)
        except (ProviderError, ConfigError) as exc:
            log.warning("%s: configuration incomplete: %s", name, exc)
            configs[name] = {key: value for key, value in table.items() if key not in RESERVED_KEYS}
    return configs


def missing_required(config: Mapping[str, Any], schema: tuple[ConfigField, ...]) -> list[str]:
    """The required fields of ``schema`` that ``config`` (from :func:`provider_config`) leaves unset or blank."""
    return [
        field.name
        for field in schema
        if field.required and (config.get(field.name) is None or config.get(field.name) == "")
    ]
