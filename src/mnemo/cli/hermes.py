"""``mnemo hermes install|uninstall|status``: mnemo as Hermes Agent's memory provider.

``install`` writes Hermes' user plugin folder ``HERMES_HOME/plugins/mnemo/`` (an ``__init__.py`` that loads
:mod:`mnemo.integrations.hermes` and a ``plugin.yaml``) and says how to activate it; it never edits Hermes'
own files. ``uninstall`` removes only what ``install`` wrote (mnemo's memories in ``HERMES_HOME/mnemo/``
stay until deleted by hand). ``status`` says what is installed, whether Hermes is set to use it, and
whether the Python that runs Hermes can import mnemo.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .. import __version__
from .._files import atomic_write
from ._output import CliError, lines, print_json

PLUGIN_NAME = "mnemo"
# The first line of every file install writes: uninstall removes a file only when it starts with it.
MARKER = "# Written by `mnemo hermes install`; `mnemo hermes uninstall` removes it."

_INIT = f'''{MARKER}
"""mnemo: local long-term memory for Hermes Agent (typed memory graph, session archive, bulletin)."""

from mnemo.integrations.hermes import MnemoMemoryProvider


def register(ctx):
    ctx.register_memory_provider(MnemoMemoryProvider())
'''

_YAML = f"""{MARKER}
name: {PLUGIN_NAME}
version: {__version__}
description: "mnemo: local typed memory graph with hybrid recall, a session archive, a deterministic bulletin, extraction before compression and a threat scan; no cloud service, no LLM on reads or writes."
hooks:
  - on_session_end
  - on_pre_compress
  - on_memory_write
  - on_delegation
"""

FILES = {"__init__.py": _INIT, "plugin.yaml": _YAML}
ACTIVATE = f"hermes memory setup {PLUGIN_NAME}"


def hermes_home(given: str | None) -> Path:
    """``--hermes-home``, else ``$HERMES_HOME``, else ``~/.hermes`` (Hermes' own default)."""
    return Path(given or os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def plugin_dir(home: Path) -> Path:
    """Where Hermes looks for a user-installed provider named ``mnemo``."""
    return home / "plugins" / PLUGIN_NAME


def _ours(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") == MARKER
    except (OSError, UnicodeDecodeError):
        return False


def install(home: Path) -> dict[str, Any]:
    """Write the plugin folder (replacing an earlier install's files, refusing anyone else's)."""
    if not home.is_dir():
        raise CliError(f"{home} is not a Hermes home (no such directory); give --hermes-home or set HERMES_HOME")
    folder = plugin_dir(home)
    foreign = [name for name in FILES if (folder / name).exists() and not _ours(folder / name)]
    if foreign:
        raise CliError(f"{folder / foreign[0]} exists and was not written by mnemo; move it away first")
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    written = []
    for name, text in FILES.items():
        target = folder / name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            atomic_write(target, text.encode("utf-8"))
            written.append(str(target))
    return {"plugin_dir": str(folder), "written": written, "activate": ACTIVATE}


def uninstall(home: Path) -> dict[str, Any]:
    """Remove the files ``install`` wrote (and the bytecode Python left beside them), then the folder if empty."""
    folder = plugin_dir(home)
    removed = []
    for name in FILES:
        target = folder / name
        if target.exists() and _ours(target):
            target.unlink()
            removed.append(str(target))
    cache = folder / "__pycache__"
    if cache.is_dir():
        for compiled in cache.glob("__init__.*.pyc"):
            compiled.unlink()
            removed.append(str(compiled))
        _remove_if_empty(cache)
    _remove_if_empty(folder)
    return {"plugin_dir": str(folder), "removed": removed, "data_kept": str(home / "mnemo")}


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass  # not empty (someone else's files) or already gone: left as it is


def _configured_provider(home: Path) -> str | None:
    """``memory.provider`` in Hermes' ``config.yaml`` (read as text: mnemo does not need a YAML parser)."""
    try:
        text = (home / "config.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    block = re.search(r"^memory:[ \t]*\n((?:[ \t]+.*\n?|[ \t]*\n)*)", text, re.MULTILINE)
    found = re.search(r"^[ \t]+provider:[ \t]*['\"]?([^'\"#\s]*)", block.group(1), re.MULTILINE) if block else None
    return found.group(1) if found else None


def _hermes_python() -> str | None:
    """The interpreter the ``hermes`` command runs on (its script's ``#!`` line), if it is on PATH."""
    command = shutil.which("hermes")
    if command is None:
        return None
    try:
        with open(command, "rb") as handle:
            first = handle.readline().decode("utf-8", "replace").strip()
    except OSError:
        return None
    return first[2:].strip().split()[0] if first.startswith("#!") else None


def _importable(python: str) -> tuple[bool, str]:
    """Whether ``python`` can import the adapter (it needs mnemo and Hermes both)."""
    try:
        done = subprocess.run(
            [python, "-c", "import mnemo.integrations.hermes"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return done.returncode == 0, reason


def status(home: Path) -> dict[str, Any]:
    """What is installed where, whether Hermes is set to use it, and whether its Python can load it."""
    folder = plugin_dir(home)
    files = {name: ("current" if _ours(folder / name) and (folder / name).read_text(encoding="utf-8") == text
                    else "other" if (folder / name).exists() else "missing")
             for name, text in FILES.items()}  # fmt: skip
    python = _hermes_python()
    importable, reason = _importable(python) if python else (None, "the hermes command is not on PATH")
    installed = all(state == "current" for state in files.values())
    provider = _configured_provider(home)
    return {
        "hermes_home": str(home),
        "plugin_dir": str(folder),
        "installed": installed,
        "files": files,
        "active": provider == PLUGIN_NAME,
        "memory_provider": provider,
        "hermes_python": python,
        "importable": importable,
        "import_problem": None if importable else reason,
        "loads": bool(installed and provider == PLUGIN_NAME and importable),
        "data_dir": str(home / "mnemo"),
    }


def _install(args: argparse.Namespace) -> int:
    report = install(hermes_home(args.hermes_home))
    if args.json:
        print_json(report)
    else:
        lines([f"installed the mnemo plugin in {report['plugin_dir']}", f"activate it: {ACTIVATE}"])
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    report = uninstall(hermes_home(args.hermes_home))
    if args.json:
        print_json(report)
    else:
        what = f"removed {len(report['removed'])} files" if report["removed"] else "nothing to remove"
        lines([f"{what} from {report['plugin_dir']}", f"mnemo's memories stay in {report['data_kept']} (delete it to erase them)",
               "set memory.provider back in Hermes with: hermes memory setup"])  # fmt: skip
    return 0


def _status(args: argparse.Namespace) -> int:
    report = status(hermes_home(args.hermes_home))
    if args.json:
        print_json(report)
        return 0
    said = [f"plugin: {'installed' if report['installed'] else 'not installed'} in {report['plugin_dir']}"]
    said.append(f"active: {'yes' if report['active'] else 'no'} (memory.provider: {report['memory_provider'] or 'unset'})")
    if report["importable"] is None:
        said.append(f"hermes: {report['import_problem']}")
    else:
        loads = "can" if report["importable"] else f"cannot ({report['import_problem']})"
        said.append(f"hermes' python {report['hermes_python']} {loads} import mnemo")
    said.append(f"Hermes {'would' if report['loads'] else 'would not'} load mnemo")
    lines(said)
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo hermes`` and its subcommands."""
    group = subparsers.add_parser("hermes", parents=[common], help="use mnemo as Hermes Agent's memory provider")
    actions = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, handler, text in (
        ("install", _install, "write the plugin folder into HERMES_HOME/plugins/mnemo"),
        ("uninstall", _uninstall, "remove what install wrote (memories are kept)"),
        ("status", _status, "what is installed, whether Hermes uses it and can load it"),
    ):
        action = actions.add_parser(name, parents=[common], help=text)
        action.add_argument("--hermes-home", help="the Hermes home (default: $HERMES_HOME, else ~/.hermes)")
        action.set_defaults(handler=handler)
