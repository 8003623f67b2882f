"""The ``mnemo`` command.

Each subcommand group lives in its own module exposing ``register(subparsers, common)``; this module
only wires them together and turns errors into one-line reasons with non-zero exit codes.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import MnemoError
from ._output import CliError

# Subcommand modules, in the order ``mnemo --help`` lists them.
_COMMANDS = (
    "demo",
    "memory",
    "sessions",
    "graph",
    "chat",
)


def _common_options() -> argparse.ArgumentParser:
    # SUPPRESS lets --home/--json stand before or after the subcommand without one level
    # resetting what the other parsed.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help="mnemo home directory (default: $MNEMO_HOME or ~/.mnemo)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable JSON output")
    return common


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser, with every subcommand group registered (or just ``only``, so one command
    does not import every other's dependencies)."""
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="mnemo", description="Durable, safe long-term memory for LLM agents.", parents=[common]
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what mnemo does to stderr")
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}", help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS if only not in _COMMANDS else (only,):
        importlib.import_module(f"{__name__}.{name}").register(subparsers, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mnemo`` with ``argv``; return the exit code."""
    version, command = _leading(sys.argv[1:] if argv is None else argv)
    if version:
        # Answered before any subcommand module (and so numpy, SQLite, the model) is imported.
        print(f"mnemo {__version__}")
        return 0
    parser = build_parser(command)
    args = parser.parse_args(argv)
    args.home = getattr(args, "home", None)
    args.json = getattr(args, "json", False)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="mnemo: %(message)s")
    try:
        return int(args.handler(args) or 0)
    except CliError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return exc.code
    except MnemoError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"mnemo: {reason}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 130


def _leading(argv: Sequence[str]) -> tuple[bool, str | None]:
    """Whether ``--version`` comes before the subcommand (where the full parser would also take it), and
    the subcommand's name."""
    words = iter(argv)
    for word in words:
        if word == "--version":
            return True, None
        if word == "--home":
            next(words, None)  # its value, whatever it looks like
        elif word == "--":
            return False, None
        elif not word.startswith("-"):
            return False, word
    return False, None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
