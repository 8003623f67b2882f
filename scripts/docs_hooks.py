"""MkDocs hook (mkdocs.yml ``hooks:``): the two reference pages that must never drift from the code.

``reference/configuration.md`` is written from :class:`mnemo.config.Settings` (each field's type, default,
bounds and the comment above it in the source) and ``reference/cli.md`` from ``mnemo``'s argparse parser
(every command, its usage and its arguments' help). Both are generated at build time, in memory, so a setting
or an option added to the code appears on the site without anyone copying it by hand.
"""

from __future__ import annotations

import argparse
import html
import inspect
import re
import sys
import types
import typing
from pathlib import Path

from mkdocs.structure.files import File, Files

# The hook runs from the repository root's mkdocs.yml; the package is imported from the source tree, so the
# pages describe the code being built even when another mnemo is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CONFIG_PAGE = "reference/configuration.md"
CLI_PAGE = "reference/cli.md"


def on_files(files: Files, config) -> Files:
    """Add the generated pages to the site's files, so the nav and links can name them."""
    files.append(File.generated(config, CONFIG_PAGE, content=settings_reference()))
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    return files


# ------------------------------------------------------------------ configuration


def _field_comments(model: type) -> dict[str, str]:
    """The comment block above each field of ``model``'s class body. A block covers the fields that follow
    it until a blank line, as the source groups them (``enrich_timeout`` ... under "provider deadlines")."""
    source = inspect.getsource(model)
    comments: dict[str, str] = {}
    block: list[str] = []
    block_done = False
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped:
            block, block_done = [], False
        elif stripped.startswith("#"):
            if block_done:
                block, block_done = [], False
            block.append(stripped.lstrip("#").strip())
        elif match := re.match(r"\s{4}(\w+)\s*:", line):
            block_done = True
            if block:
                comments[match.group(1)] = " ".join(block)
        else:
            block_done = True
    return comments


def _type_name(annotation: object) -> str:
    if annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join("..." if arg is Ellipsis else _type_name(arg) for arg in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(field) -> str:
    words = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "min_length": "length >="}
    found = []
    for constraint in field.metadata:
        for attribute, word in words.items():
            value = getattr(constraint, attribute, None)
            if value is not None:
                found.append(f"{word} {value}")
    return ", ".join(found)


def _default(field) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    return f"`{field.default!r}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _environment(name: str, field) -> str:
    from mnemo.config import ENV_PREFIX

    if name == "home":
        return "`MNEMO_HOME`"
    if typing.get_origin(field.annotation) in (tuple, dict):
        return "(`config.toml` only)"  # an environment variable is one string, never a list or a table
    return f"`{ENV_PREFIX}{name.upper()}`"


def settings_reference() -> str:
    from mnemo.config import Settings

    comments = _field_comments(Settings)
    # Settings the source groups under one comment are documented together, as the source reads.
    groups: list[tuple[str, list[str]]] = []
    for name in Settings.model_fields:
        note = comments.get(name, "")
        if groups and groups[-1][0] == note and note:
            groups[-1][1].append(name)
        else:
            groups.append((note, [name]))
    lines = [
        "# Configuration reference",
        "",
        "Generated at build time from `mnemo.config.Settings`: every setting, its type, default and bounds, and",
        "the note the source keeps beside it. How the four sources combine is on the",
        "[configuration page](../configuration.md).",
        "",
    ]
    for note, names in groups:
        lines += ["## " + ", ".join(f"`{name}`" for name in names), ""]
        if note:
            lines += [html.escape(note[0].upper() + note[1:], quote=False), ""]
        lines += ["| setting | type | default | environment |", "|---|---|---|---|"]
        for name in names:
            field = Settings.model_fields[name]
            bounds = _bounds(field)
            kind = _type_name(field.annotation) + (f" ({bounds})" if bounds else "")
            default = "`~/.mnemo`" if name == "home" else _default(field)
            lines.append(f"| `{name}` | {_cell(kind)} | {_cell(default)} | {_environment(name, field)} |")
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------ command line


# Accepted by every command (the parser's common parent) and by its help: documented once, at `mnemo`.
_SHARED = {"-h", "--help", "--home", "--json", "--user", "--agent", "--channel"}


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found.extend((name, sub, helps.get(name, "")) for name, sub in action.choices.items())
    return found


def _arguments(parser: argparse.ArgumentParser, shared: set[str]) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if shared & set(action.option_strings):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = str(action.metavar or action.dest)
        help_text = action.help or ""
        if action.choices and not isinstance(action.choices, dict):
            help_text += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| `{_cell(name)}` | {_cell(help_text)} |")
    return rows


def _command(
    lines: list[str], path: list[str], parser: argparse.ArgumentParser, summary: str, depth: int, shared: set[str]
) -> None:
    lines += [f"{'#' * depth} `{' '.join(path)}`", ""]
    description = parser.description or summary
    if description:
        lines += [description, ""]
    usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines += ["```text", usage, "```", ""]
    rows = _arguments(parser, shared)
    if rows:
        lines += ["| argument | what it does |", "|---|---|", *rows, ""]
    for name, sub, help_text in _subcommands(parser):
        # Below the top, the options every command shares are listed once, at the top.
        _command(lines, [*path, name], sub, help_text, min(depth + 1, 4), shared | _SHARED)


def cli_reference() -> str:
    from mnemo.cli import build_parser

    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated at build time from the `mnemo` command's own parser: every command with its usage and",
        "arguments. The conventions shared by every command (`--json`, exit codes, errors) are on the",
        "[command-line page](../cli.md). The options listed under `mnemo` itself (`--home`, `--json`, `--user`,",
        "`--agent`, `--channel`, `-h`) are accepted before or after any command and are not repeated below.",
        "",
    ]
    _command(lines, ["mnemo"], parser, "", 2, set())
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # preview: python scripts/docs_hooks.py cli|configuration
    print(cli_reference() if sys.argv[1:] == ["cli"] else settings_reference())
