"""``mnemo providers``: what is installed, configured and available, and setting a provider up.

``setup NAME`` asks for each field the provider declares (``config_schema()``), or takes them as
``--set KEY=VALUE`` for scripts; ordinary values go to ``config.toml``'s ``[providers.NAME]`` table
(which, for a plug-in, also gets ``enabled = true``), secrets to the home's ``.env`` (mode 0600).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from ..errors import ConfigError
from ..providers.catalogue import BUILTIN, ProviderStatus, catalogue, provider_named
from ..providers.config_schema import ConfigField, Scalar, read_config_schema
from ..providers.configuration import provider_config, update_env_file, update_provider_table
from ..providers.discovery import PluginProblem
from ..providers.protocol import ProviderError
from ._output import CliError, lines, print_json, print_table
from ._settings import settings_for


def _list(args: argparse.Namespace) -> int:
    return _show(catalogue(settings_for(args)), args, ["name", "origin", "installed", "enabled", "reason"])


def _status(args: argparse.Namespace) -> int:
    statuses = catalogue(settings_for(args), check=True)
    return _show(statuses, args, ["name", "origin", "enabled", "configured", "available", "reason"])


def _show(statuses: list[ProviderStatus], args: argparse.Namespace, columns: list[str]) -> int:
    rows = [status.to_dict() for status in statuses]
    if args.json:
        print_json({"providers": rows})
        return 0
    for row in rows:
        row["reason"] = row["reason"] or "ready"
        for flag in ("installed", "enabled", "configured", "available"):
            if isinstance(row.get(flag), bool):
                row[flag] = "yes" if row[flag] else "no"
    print_table(rows, columns, title="memory providers")
    return 0


def _setup(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    name = args.name
    try:
        schema = read_config_schema(provider_named(name))
    except PluginProblem as exc:
        raise CliError(str(exc)) from exc
    except ProviderError as exc:
        raise CliError(f"provider {name!r}: {exc}") from exc
    fields = {field.name: field for field in schema}
    given = _parse_assignments(args.set or [], fields, name)
    table = settings.providers.get(name, {})
    current = provider_config(name, table if isinstance(table, dict) else {}, schema, home=settings.home)
    if not args.set and sys.stdin.isatty():
        for field in schema:
            value = _ask(field, current.get(field.name))
            if value is not None:
                given[field.name] = value
    missing = [f.name for f in schema if f.required and f.name not in given and current.get(f.name) in (None, "")]
    if missing:
        raise CliError(f"provider {name!r} needs {', '.join(missing)}: pass --set KEY=VALUE")
    secrets = {fields[key].env_var(name): str(value) for key, value in given.items() if fields[key].secret}
    values: dict[str, Any] = {key: value for key, value in given.items() if not fields[key].secret}
    if name not in BUILTIN:
        values["enabled"] = True
    try:
        env_file = update_env_file(settings.home, secrets) if secrets else None
        config_file = update_provider_table(settings.home, name, values) if values else None
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    report = {
        "provider": name,
        "config_file": str(config_file) if config_file else None,
        "settings": sorted(key for key in values if key != "enabled"),
        "env_file": str(env_file) if env_file else None,
        "secrets": sorted(key for key in given if fields[key].secret),
        "enabled": name not in BUILTIN or bool(getattr(settings, BUILTIN[name][1])),
    }
    if args.json:
        print_json(report)
    else:
        if report["config_file"]:
            lines([f"{name}: wrote {', '.join(report['settings']) or 'enabled = true'} to {config_file}"])
        if env_file:
            lines([f"{name}: wrote secret(s) {', '.join(report['secrets'])} to {env_file} (mode 0600)"])
        if not report["config_file"] and not env_file:
            lines([f"{name}: nothing to change"])
    return 0


def _parse_assignments(assignments: list[str], fields: dict[str, ConfigField], name: str) -> dict[str, Scalar]:
    given: dict[str, Scalar] = {}
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        key = key.strip()
        if not sep:
            raise CliError(f"--set {assignment!r}: expected KEY=VALUE")
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise CliError(f"provider {name!r} has no setting {key!r} (its settings: {known})")
        try:
            given[key] = fields[key].parse(text)
        except ValueError as exc:
            raise CliError(f"--set {key}: {exc}") from exc
    return given


def _ask(field: ConfigField, current: Any) -> Scalar | None:
    """Prompt for one field; ``None`` keeps what is there (or the default)."""
    hint = " / ".join(map(str, field.choices))
    shown = ("set" if current not in (None, "") else "") if field.secret else ("" if current is None else str(current))
    prompt = f"{field.name}{' (secret)' if field.secret else ''}"
    prompt += f" - {field.description}" if field.description else ""
    prompt += f" [{hint}]" if hint else ""
    prompt += f" ({shown})" if shown else ""
    for _ in range(3):
        text = getpass.getpass(f"{prompt}: ") if field.secret else input(f"{prompt}: ")
        if not text.strip():
            if field.required and current in (None, ""):
                print(f"  {field.name} is required", file=sys.stderr)
                continue
            return None
        try:
            return field.parse(text)
        except ValueError as exc:
            print(f"  {exc}", file=sys.stderr)
    raise CliError(f"no valid value for {field.name}")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo providers`` and its subcommands."""
    group = subparsers.add_parser("providers", parents=[common], help="list, check and set up memory providers")
    actions = group.add_subparsers(dest="providers_command", metavar="ACTION", required=True)

    listing = actions.add_parser("list", parents=[common], help="built-in and installed providers, and which are enabled")
    listing.set_defaults(handler=_list)

    status = actions.add_parser(
        "status", parents=[common], help="load each provider: configured, available, and why not"
    )
    status.set_defaults(handler=_status)

    setup = actions.add_parser("setup", parents=[common], help="configure (and enable) one provider")
    setup.add_argument("name", help="the provider's name, as in 'mnemo providers list'")
    setup.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a setting, without prompting (repeatable)"
    )
    setup.set_defaults(handler=_setup)
