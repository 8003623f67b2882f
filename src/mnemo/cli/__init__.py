"""The ``mnemo`` command.

Each subcommand group lives in its own module exposing ``register(subparsers, common)``; this module
wires them together and is the one place that reports how a command ended.

How a subcommand reports (so every command, old or new, behaves the same):

- **Result**: its handler ``(args) -> int`` does the work, then prints the result once, at the end: with
  ``args.json``, one JSON object through :func:`~mnemo.cli._output.print_json` (which leads it with
  ``"success": true``), otherwise readable text or a table. Long work shows
  :func:`~mnemo.cli._output.progress` on stderr. It returns 0.
- **Failure**: it raises; it never prints an error or calls ``sys.exit``. :class:`~mnemo.cli._output.CliError`
  for its own refusals (with ``code`` and JSON ``details`` if it has them), and library errors
  (:class:`~mnemo.errors.MnemoError`), ``OSError`` and ``sqlite3.Error`` simply propagate. :func:`main` turns
  any of them into one line on stderr, ``mnemo: <reason>``, plus with ``--json`` the object
  ``{"success": false, "error": "<reason>", "exit_code": N, ...details}`` on stdout; a bad command line is
  reported the same way. Nothing prints a traceback unless ``-v`` is given and the error is not one of
  those (a bug).
- **Warnings** the library logs while a command runs are printed, one line each, after it succeeded
  (as they happen for an ``interactive`` command such as ``chat``); ``-v`` shows everything at once.
- **Exit codes**: 0 done, 1 refused or failed, 2 bad command line, 130 interrupted, 141 stdout closed by
  its reader (``mnemo ... | head``: the command stops quietly).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from .. import __version__
from ..errors import InvalidArgument, MnemoError
from ._output import EXIT_CLOSED_PIPE, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, CliError

# Subcommand modules, in the order ``mnemo --help`` lists them.
_COMMANDS = (
    "demo",
    "memory",
    "sessions",
    "graph",
    "review",
    "prompt",
    "providers",
    "chat",
    "scan",
    "doctor",
    "migrate",
    "serve",
    "ui",
    "hermes",
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line raises a one-line :class:`CliError` instead of printing usage and
    exiting, so it is reported like every other failure (and as JSON under ``--json``)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("mnemo").strip()
        where = f"{command}: " if command else ""
        raise CliError(f"{where}{message} (see '{self.prog} --help')", EXIT_USAGE)


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser, with every subcommand group registered (or just ``only``, so one command
    does not import every other's dependencies)."""
    common = _common_options()
    parser = _Parser(prog="mnemo", description="Durable, safe long-term memory for LLM agents.", parents=[common])
    parser.add_argument("-v", "--verbose", action="store_true", help="log what mnemo does to stderr")
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}", help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS if only not in _COMMANDS else (only,):
        importlib.import_module(f"{__name__}.{name}").register(subparsers, common)
    return parser


def _options(argv: Sequence[str]) -> set[str]:
    """The option words before ``--``: whether to answer in JSON must be known even when parsing fails."""
    words = list(argv)
    return set(words[: words.index("--")] if "--" in words else words)


def _check_home(home: str | None) -> None:
    """Refuse a home that cannot be one before any command touches it, naming the path at fault."""
    from ..config import resolve_home

    path = resolve_home(home)
    existing = next((p for p in (path, *path.parents) if os.path.lexists(p)), None)
    if existing is None or existing.is_dir():
        if existing == path and not os.access(path, os.R_OK | os.X_OK):
            raise CliError(f"home {path} is not readable (permission denied)")
        return
    if existing == path:
        raise CliError(f"home {path} is not a directory")
    raise CliError(f"cannot create home {path}: {existing} is not a directory")


def _describe(exc: BaseException, verbose: bool) -> tuple[str, int, dict[str, Any]]:
    """``(one-line reason, exit code, JSON details)`` for a failed command."""
    if isinstance(exc, CliError):
        return str(exc), exc.code, dict(exc.details)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", EXIT_INTERRUPTED, {}
    if isinstance(exc, MnemoError):
        details_of = getattr(exc, "details", None)
        details = details_of() if callable(details_of) else {}
        if isinstance(exc, InvalidArgument):
            details.setdefault("field", exc.field)
        return (str(exc).splitlines() or [type(exc).__name__])[0], EXIT_FAILURE, details
    if isinstance(exc, OSError):
        if exc.strerror and exc.filename is not None:
            target = f"{exc.filename} -> {exc.filename2}" if exc.filename2 is not None else str(exc.filename)
            return f"{target}: {exc.strerror}", EXIT_FAILURE, {"path": str(exc.filename)}
        return str(exc) or type(exc).__name__, EXIT_FAILURE, {}
    sqlite = sys.modules.get("sqlite3")  # not imported (say, by --version): the error cannot be one of its
    if sqlite is not None and isinstance(exc, sqlite.Error):
        return f"database error: {exc}", EXIT_FAILURE, {}
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    hint = "" if verbose else "; run with -v for the traceback"
    return f"unexpected error ({type(exc).__name__}: {exc}){hint}", EXIT_FAILURE, {}


class _Warnings(logging.Handler):
    """mnemo's warnings during a command, one line each and never a traceback. Held while the command
    runs and printed once it succeeded, so a failure is its one line alone; shown as they happen for an
    interactive command (one that sets ``interactive=True`` in its parser's defaults)."""

    def __init__(self, live: bool) -> None:
        super().__init__(logging.WARNING)
        self.live = live
        self.held: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = f"mnemo: {' '.join(record.getMessage().split())}"
        if self.live:
            print(line, file=sys.stderr)
        else:
            self.held.append(line)

    def print_held(self) -> None:
        for line in self.held:
            print(line, file=sys.stderr)
        self.held.clear()


@contextmanager
def _logging(verbose: bool, live: bool) -> Iterator[_Warnings | None]:
    """Route the ``mnemo`` loggers for one command: everything, tracebacks included, with ``-v``;
    otherwise warnings through :class:`_Warnings`."""
    logger = logging.getLogger("mnemo")
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("mnemo: %(message)s"))
    else:
        handler = _Warnings(live)
    previous = logger.level
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.addHandler(handler)
    try:
        yield handler if isinstance(handler, _Warnings) else None
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _report(reason: str, code: int, details: dict[str, Any], as_json: bool) -> int:
    reason = " ".join(reason.split()) or "failed"
    if as_json:
        document = {"success": False, "error": reason, "exit_code": code, **details}
        sys.stdout.write(json.dumps(document, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()
    print(f"mnemo: {reason}", file=sys.stderr)
    return code


def _closed_pipe() -> int:
    # The reader is gone: send what is still buffered to /dev/null so the interpreter's last flush of
    # stdout cannot fail again ("Exception ignored ... BrokenPipeError") at exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # stdout is not a file descriptor (an embedding program replaced it): nothing to protect
    return EXIT_CLOSED_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mnemo`` with ``argv``; return the exit code. Never raises but ``SystemExit`` from ``--help``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    words = _options(argv)
    as_json, verbose = "--json" in words, bool(words & {"-v", "--verbose"})
    version, command = _leading(argv)
    if version:
        # Answered before any subcommand module (and so numpy, SQLite, the model) is imported.
        print(f"mnemo {__version__}")
        return 0
    try:
        try:
            args = build_parser(command).parse_args(argv)
            args.home = getattr(args, "home", None)
            args.json = getattr(args, "json", False)
            for option in ("user", "agent", "channel"):
                setattr(args, option, getattr(args, option, None))
            with _logging(verbose, live=getattr(args, "interactive", False)) as warnings:
                _check_home(args.home)
                code = int(args.handler(args) or 0)
                sys.stdout.flush()  # a closed pipe must show here, not at interpreter exit
                if warnings is not None:
                    warnings.print_held()
            return code
        except BrokenPipeError:
            raise
        except (Exception, KeyboardInterrupt) as exc:
            return _report(*_describe(exc, verbose), as_json)
    except BrokenPipeError:
        return _closed_pipe()


_VALUED_OPTIONS = frozenset({"--home", "--user", "--agent", "--channel"})


def _leading(argv: Sequence[str]) -> tuple[bool, str | None]:
    """Whether ``--version`` comes before the subcommand (where the full parser would also take it), and
    the subcommand's name."""
    words = iter(argv)
    for word in words:
        if word == "--version":
            return True, None
        if word in _VALUED_OPTIONS:
            next(words, None)  # its value, whatever it looks like
        elif word == "--":
            return False, None
        elif not word.startswith("-"):
            return False, word
    return False, None


__all__ = ["build_parser", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
