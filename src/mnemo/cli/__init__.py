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

from ..errors import MnemoError
from ._output import CliError

# Subcommand modules, in the order ``mnemo --help`` lists them.
_COMMANDS = (
    "demo",
    "memory",
    "sessions",
    "graph",
    "providers",
    "chat",
)


def _common_options() -> argparse.ArgumentParser:
    # SUPPRESS lets --home/--json stand before or after the subcommand without one level
    # resetting what the other parsed.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help="mnemo home directory (default: $MNEMO_HOME or ~/.mnemo)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable JSON output")
    # Whose memory a command reads and writes (settings user_id / agent_id / channel_id; see mnemo.scope).
    common.add_argument("--user", default=argparse.SUPPRESS, help="scope: user id (default: the user_id setting)")
    common.add_argument("--agent", default=argparse.SUPPRESS, help="scope: agent id (default: the agent_id setting)")
    common.add_argument("--channel", default=argparse.SUPPRESS, help="scope: channel id (default: the channel_id setting)")
    return common


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every subcommand group registered."""
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="mnemo", description="Durable, safe long-term memory for LLM agents.", parents=[common]
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what mnemo does to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(subparsers, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mnemo`` with ``argv``; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.home = getattr(args, "home", None)
    args.json = getattr(args, "json", False)
    for option in ("user", "agent", "channel"):
        setattr(args, option, getattr(args, option, None))
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
